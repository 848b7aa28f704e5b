//! Approval: a tool that needs a person's decision suspends the invocation; a resume
//! approves (the tool runs) or denies (the model is told), and calls that already
//! ran in the step are not run again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_agent::{
    approval_signal_id, Agent, Approval, ApprovalRequest, Conversation, Tool, ToolError,
    TOOL_DENIED,
};
use openarmature_graph::suspension::Outcome;
use openarmature_graph::{CompiledGraph, Completed, InvokeOptions};
use openarmature_llm::Message;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::support::*;

/// `delete(path)`: needs approval; counts its runs.
fn delete_tool(runs: &Arc<AtomicUsize>) -> Tool {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Path {
        path: String,
    }
    let runs = Arc::clone(runs);
    Tool::from_fn("delete", "Deletes a file", move |args: Path, _ctx| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("deleted {}", args.path)) }
    })
    .needs_approval()
}

struct Fixture {
    graph: CompiledGraph<Conversation>,
    model: Arc<Scripted>,
    weathers: Arc<AtomicUsize>,
    deletes: Arc<AtomicUsize>,
}

/// A model that asks for weather and a delete in one message, then answers.
fn fixture() -> Fixture {
    let model = scripted(vec![
        calls(&[
            ("c1", "weather", json!({"city": "Oslo"})),
            ("c2", "delete", json!({"path": "/tmp/x"})),
        ]),
        answer("Done."),
    ]);
    let (weathers, deletes) = (counter(), counter());
    let agent = Agent::builder(model.clone())
        .tool(weather_tool(&weathers))
        .tool(delete_tool(&deletes))
        .build()
        .unwrap();
    Fixture {
        graph: agent.graph().unwrap(),
        model,
        weathers,
        deletes,
    }
}

/// Resumes the suspended invocation `id` with `payload`, expects it to complete, and
/// drains its events.
async fn resume_to_end(f: &Fixture, id: &str, payload: Value) -> Completed<Conversation> {
    let done = f
        .graph
        .resume(id, payload)
        .await
        .unwrap()
        .completed()
        .unwrap();
    f.graph.drain(None).await;
    done
}

/// Runs until the approval suspension; checks what it awaits.
async fn suspend_at_delete(f: &Fixture) -> String {
    let start = Conversation::new(vec![Message::user("weather, then delete /tmp/x")]);
    let outcome = f.graph.run(start, InvokeOptions::default()).await.unwrap();
    let Outcome::Suspended(paused) = outcome else {
        panic!("expected an approval suspension")
    };
    assert_eq!(paused.descriptor.signal_id, approval_signal_id("c2"));
    let request = ApprovalRequest::from_descriptor(&paused.descriptor).unwrap();
    assert_eq!(request.tool, "delete");
    assert_eq!(request.tool_call_id, "c2");
    assert_eq!(request.arguments, json!({"path": "/tmp/x"}));
    // The weather result was committed before the suspension; delete did not run.
    assert_eq!(
        tool_results(&paused.state.messages),
        vec![("c1".to_owned(), "sunny in Oslo".to_owned())]
    );
    assert_eq!((count(&f.weathers), count(&f.deletes)), (1, 0));
    paused.invocation_id
}

#[tokio::test]
async fn an_approved_call_runs_once_and_earlier_calls_do_not_rerun() {
    let f = fixture();
    let id = suspend_at_delete(&f).await;
    let (recorder, events) = tool_recorder();
    f.graph.attach_observer(recorder);
    let payload = Approval::approve("c2").payload_for::<Conversation>();
    assert_eq!(
        payload,
        json!({"approval": {"tool_call_id": "c2", "approved": true}})
    );
    let done = resume_to_end(&f, &id, payload).await;

    assert_eq!(done.state.final_answer().as_deref(), Some("Done."));
    assert_eq!((count(&f.weathers), count(&f.deletes)), (1, 1));
    assert_eq!(
        tool_results(&done.state.messages),
        vec![
            ("c1".to_owned(), "sunny in Oslo".to_owned()),
            ("c2".to_owned(), "deleted /tmp/x".to_owned()),
        ]
    );
    assert_eq!(done.state.approval, None, "the decision is used up");
    assert_eq!(f.model.requests().len(), 2);
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![(
            true,
            "delete".into(),
            Some("c2".into()),
            json!("deleted /tmp/x")
        )]
    );
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_is_told_why() {
    let f = fixture();
    let id = suspend_at_delete(&f).await;
    let (recorder, events) = tool_recorder();
    f.graph.attach_observer(recorder);
    let payload = Approval::deny("c2", Some("not today".into())).payload_for::<Conversation>();
    let done = resume_to_end(&f, &id, payload).await;

    assert_eq!(done.state.final_answer().as_deref(), Some("Done."));
    assert_eq!((count(&f.weathers), count(&f.deletes)), (1, 0));
    let results = tool_results(&done.state.messages);
    assert_eq!(results.len(), 2);
    let denial: Value = serde_json::from_str(&results[1].1).unwrap();
    assert_eq!(denial["error"]["category"], TOOL_DENIED.as_str());
    assert!(denial["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not today"));
    // The model's second call saw the denial.
    let seen = f.model.requests();
    assert_eq!(tool_results(&seen[1].messages)[1], results[1]);
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![(
            false,
            "delete".into(),
            Some("c2".into()),
            json!(TOOL_DENIED.as_str())
        )]
    );
}

#[tokio::test]
async fn a_decision_for_another_call_suspends_again() {
    let f = fixture();
    let id = suspend_at_delete(&f).await;
    let payload = Approval::approve("c9").payload_for::<Conversation>();
    let again = f.graph.resume(&id, payload).await.unwrap();
    let Outcome::Suspended(paused) = again else {
        panic!("a decision for another call must not approve this one")
    };
    assert_eq!(paused.descriptor.signal_id, approval_signal_id("c2"));
    assert_eq!((count(&f.weathers), count(&f.deletes)), (1, 0));
}

#[tokio::test]
async fn a_tool_can_ask_for_approval_itself() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Transfer {
        amount: u64,
    }
    let model = scripted(vec![
        calls(&[
            ("t1", "transfer", json!({"amount": 5})),
            ("t2", "transfer", json!({"amount": 500})),
        ]),
        answer("Sent."),
    ]);
    let sent = counter();
    let log = Arc::clone(&sent);
    let transfer = Tool::from_fn("transfer", "Sends money", move |args: Transfer, ctx| {
        let log = Arc::clone(&log);
        async move {
            if args.amount > 100 {
                ctx.require_approval(Some("large transfer"))?;
            }
            log.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(json!({"sent": args.amount}))
        }
    });
    let graph = Agent::builder(model)
        .tool(transfer)
        .build()
        .unwrap()
        .graph()
        .unwrap();
    let start = Conversation::new(vec![Message::user("pay")]);
    let paused = graph
        .run(start, InvokeOptions::default())
        .await
        .unwrap()
        .suspended()
        .unwrap();
    let request = ApprovalRequest::from_descriptor(&paused.descriptor).unwrap();
    assert_eq!(request.reason.as_deref(), Some("large transfer"));
    assert_eq!(
        count(&sent),
        1,
        "the small transfer ran, the large one waits"
    );
    let payload = Approval::approve("t2").payload_for::<Conversation>();
    let done = graph
        .resume(&paused.invocation_id, payload)
        .await
        .unwrap()
        .completed()
        .unwrap();
    assert_eq!(count(&sent), 2);
    assert_eq!(done.state.final_answer().as_deref(), Some("Sent."));
}

#[tokio::test]
async fn two_calls_needing_approval_suspend_one_after_the_other() {
    let model = scripted(vec![
        calls(&[
            ("d1", "delete", json!({"path": "/a"})),
            ("d2", "delete", json!({"path": "/b"})),
        ]),
        answer("Both handled."),
    ]);
    let deletes = counter();
    let graph = Agent::builder(model)
        .tool(delete_tool(&deletes))
        .build()
        .unwrap()
        .graph()
        .unwrap();
    let start = Conversation::new(vec![Message::user("delete both")]);
    let first = graph.run(start, InvokeOptions::default()).await.unwrap();
    let first = first.suspended().unwrap();
    assert_eq!(first.descriptor.signal_id, approval_signal_id("d1"));
    let approve = Approval::approve("d1").payload_for::<Conversation>();
    let second = graph.resume(&first.invocation_id, approve).await.unwrap();
    let second = second.suspended().unwrap();
    assert_eq!(second.descriptor.signal_id, approval_signal_id("d2"));
    assert_eq!(second.invocation_id, first.invocation_id);
    assert_eq!(count(&deletes), 1);
    let deny = Approval::deny("d2", None).payload_for::<Conversation>();
    let done = graph.resume(&second.invocation_id, deny).await.unwrap();
    let done = done.completed().unwrap();
    assert_eq!(count(&deletes), 1, "the denied call never ran");
    assert_eq!(done.state.final_answer().as_deref(), Some("Both handled."));
    assert_eq!(tool_results(&done.state.messages).len(), 2);
}
