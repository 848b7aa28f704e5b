//! `Harness::handle_with`: per-turn options (what a durable runtime fixes: the
//! invocation and correlation ids, a checkpoint resume) under the harness's rules.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_graph::checkpoint::{CheckpointFilter, Checkpointer, InMemoryCheckpointer};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_harness::{Harness, Outbound, Transmission};
use serde_json::json;

state! {
    /// Two steps.
    #[derive(Default)]
    pub struct Two => TwoUpdate {
        /// One entry per step run.
        pub steps: Vec<String> => append,
    }
}

/// Runs of node `a`, and whether node `b` fails.
#[derive(Default)]
struct Script {
    runs: AtomicUsize,
    fail_b: AtomicBool,
}

fn harness(store: &InMemoryCheckpointer, script: &Arc<Script>) -> Harness<Two> {
    let runs = Arc::clone(script);
    let fails = Arc::clone(script);
    let graph = GraphBuilder::new(Two::default())
        .add_node("a", move |_s: Arc<Two>, _c: NodeCtx| {
            runs.runs.fetch_add(1, Ordering::SeqCst);
            async { Ok(TwoUpdate::default().steps(vec!["a".into()])) }
        })
        .add_node("b", move |_s: Arc<Two>, _c: NodeCtx| {
            let fail = fails.fail_b.load(Ordering::SeqCst);
            async move {
                if fail {
                    return Err("the worker went away".into());
                }
                Ok(TwoUpdate::default().steps(vec!["b".into()]))
            }
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .checkpointer(Arc::new(store.clone()))
        .compile()
        .unwrap();
    Harness::stateless(graph, |_| Ok(Two::default())).invoke_options(|o| {
        o.metadata(serde_json::Map::from_iter([(
            "tier".to_owned(),
            json!("gold"),
        )]))
    })
}

#[tokio::test]
async fn per_turn_ids_reach_the_engine_and_the_hook_still_applies() {
    let store = InMemoryCheckpointer::new();
    let h = harness(&store, &Arc::default());
    let options = InvokeOptions::default()
        .invocation_id("job-7")
        .correlation_id("job-7")
        .session_id("ignored-in-stateless-mode");
    let turn = h.handle_with(Transmission::new(json!({})), options).await;
    let Outbound::Completion {
        invocation_id,
        state,
    } = &turn.outbound
    else {
        panic!("{:?}", turn.outbound);
    };
    assert_eq!(invocation_id, "job-7");
    assert_eq!(state["steps"], json!(["a", "b"]));
    assert_eq!(turn.invoke.unwrap().session_id, None);
    let listed = store
        .list(Some(&CheckpointFilter::new().correlation_id("job-7")))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].invocation_id, "job-7");
}

#[tokio::test]
async fn a_checkpoint_resume_through_the_harness_does_not_rerun_completed_nodes() {
    let store = InMemoryCheckpointer::new();
    let script = Arc::new(Script::default());
    script.fail_b.store(true, Ordering::SeqCst);
    let h = harness(&store, &script);
    let first = h
        .handle_with(
            Transmission::new(json!({})),
            InvokeOptions::default().correlation_id("c"),
        )
        .await;
    let Outbound::Error(e) = &first.outbound else {
        panic!("{:?}", first.outbound);
    };
    let invocation_id = e.invocation_id.clone().unwrap();
    script.fail_b.store(false, Ordering::SeqCst);
    let again = h
        .handle_with(
            Transmission::new(json!({})),
            InvokeOptions::default().resume_invocation(invocation_id.as_str()),
        )
        .await;
    let Outbound::Completion {
        invocation_id: resumed,
        state,
    } = &again.outbound
    else {
        panic!("{:?}", again.outbound);
    };
    assert_ne!(*resumed, invocation_id);
    assert_eq!(state["steps"], json!(["a", "b"]));
    assert_eq!(script.runs.load(Ordering::SeqCst), 1, "node `a` ran once");
    // The resumed run kept the correlation id: both records are found by it.
    let listed = store
        .list(Some(&CheckpointFilter::new().correlation_id("c")))
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
}
