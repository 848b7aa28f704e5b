//! An approval resumed by another worker: a second compiled graph sharing the
//! Checkpointer resumes the paused invocation; the call that ran before the
//! suspension does not run again there.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_agent::{Agent, Approval, Conversation, Tool, ToolError};
use openarmature_graph::checkpoint::InMemoryCheckpointer;
use openarmature_graph::{CompiledGraph, InvokeOptions};
use openarmature_llm::Message;
use serde::Deserialize;
use serde_json::json;

use crate::support::*;

#[derive(Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

fn worker(
    store: &InMemoryCheckpointer,
    notes: &Arc<AtomicUsize>,
    sends: &Arc<AtomicUsize>,
    model: Arc<Scripted>,
) -> CompiledGraph<Conversation> {
    let (notes, sends) = (Arc::clone(notes), Arc::clone(sends));
    let note = Tool::from_fn("note", "Saves a note", move |n: Note, _ctx| {
        notes.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("saved {}", n.text)) }
    });
    let send = Tool::from_fn("send", "Sends a message", move |n: Note, _ctx| {
        sends.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("sent {}", n.text)) }
    })
    .needs_approval();
    Agent::builder(model)
        .tool(note)
        .tool(send)
        .build()
        .unwrap()
        .graph_builder()
        .checkpointer(Arc::new(store.clone()))
        .compile()
        .unwrap()
}

#[tokio::test]
async fn another_worker_resumes_the_approval_from_the_checkpointer() {
    let store = InMemoryCheckpointer::new();
    let (notes, sends) = (counter(), counter());
    let model = scripted(vec![calls(&[
        ("n1", "note", json!({"text": "draft"})),
        ("s1", "send", json!({"text": "hello"})),
    ])]);
    let first = worker(&store, &notes, &sends, model);
    let start = Conversation::new(vec![Message::user("note, then send")]);
    let paused = first
        .run(start, InvokeOptions::default())
        .await
        .unwrap()
        .suspended()
        .unwrap();
    assert_eq!((count(&notes), count(&sends)), (1, 0));

    // A second worker with its own tools (fresh counters), its own model connection
    // and the same store.
    let (notes2, sends2) = (counter(), counter());
    let model2 = scripted(vec![answer("Sent.")]);
    let second = worker(&store, &notes2, &sends2, Arc::clone(&model2));
    let payload = Approval::approve("s1").payload_for::<Conversation>();
    let done = second
        .resume(&paused.invocation_id, payload)
        .await
        .unwrap()
        .completed()
        .unwrap();
    assert_eq!((count(&notes2), count(&sends2)), (0, 1));
    assert_eq!(done.state.final_answer().as_deref(), Some("Sent."));
    assert_eq!(
        model2.requests().len(),
        1,
        "the resumed run called the model once"
    );
    assert_eq!(
        tool_results(&done.state.messages),
        vec![
            ("n1".to_owned(), "saved draft".to_owned()),
            ("s1".to_owned(), "sent hello".to_owned()),
        ]
    );
}
