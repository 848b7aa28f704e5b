//! Suspension: the terminal-action contract (no middleware can intercept a suspend),
//! re-entry after / at the suspending node, subgraphs, persistence and session
//! failures, and a record resuming once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer, InMemoryCheckpointer,
};
use openarmature_graph::suspension::{
    suspend, suspend_with, OnResume, SignalDescriptor, Suspended,
};
use openarmature_graph::{
    middleware_fn, state, BoxError, CompiledGraph, Completed, GraphBuilder, InvokeOptions,
    Middleware, NodeCtx, RuntimeCategory, SubgraphNode, END,
};
use serde_json::json;

state! {
    /// A gated job.
    #[derive(Default)]
    pub struct Job => JobUpdate {
        /// Set by the signal.
        pub approved: bool,
        /// How many times the gate's body ran.
        pub gate_runs: i64,
        /// Set after the gate.
        pub done: bool,
    }
}

/// A middleware that tries everything to swallow its node's outcome: it catches the
/// error, and returns an update instead. It logs whether code after `next()` ran.
fn swallow(log: &Arc<Mutex<Vec<&'static str>>>) -> impl Middleware<Job> {
    let log = Arc::clone(log);
    middleware_fn(move |state: Arc<Job>, ctx, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            log.lock().unwrap().push("pre");
            let result = next.run(state, ctx).await;
            log.lock().unwrap().push("post");
            Ok(result.unwrap_or_default())
        })
    })
}

fn gated(on_resume: OnResume, runs: Arc<AtomicUsize>) -> GraphBuilder<Job> {
    GraphBuilder::new(Job::default())
        .add_node("gate", move |s: Arc<Job>, _c: NodeCtx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if s.approved {
                    return Ok(JobUpdate::default().gate_runs(s.gate_runs + 1));
                }
                suspend_with(SignalDescriptor::new("approve"), on_resume)
            }
        })
        .add_node("finish", |_s: Arc<Job>, _c: NodeCtx| async {
            Ok(JobUpdate::default().done(true))
        })
        .add_edge("gate", "finish")
        .add_edge("finish", END)
        .entry("gate")
}

/// Runs `graph` from the default state; it must suspend.
async fn paused(graph: &CompiledGraph<Job>) -> Suspended<Job> {
    graph
        .run(Job::default(), InvokeOptions::default())
        .await
        .unwrap()
        .suspended()
        .unwrap()
}

/// Resumes `id` with `{"approved": true}`; the run must complete.
async fn approved(graph: &CompiledGraph<Job>, id: &str) -> Completed<Job> {
    graph
        .resume(id, json!({"approved": true}))
        .await
        .unwrap()
        .completed()
        .unwrap()
}

#[tokio::test]
async fn middleware_cannot_swallow_a_suspension_and_its_post_next_code_never_runs() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let runs = Arc::new(AtomicUsize::new(0));
    let graph = gated(OnResume::ContinueAfter, Arc::clone(&runs))
        .node_middleware("gate", swallow(&log))
        .compile()
        .unwrap();
    let outcome = graph
        .run(Job::default(), InvokeOptions::default())
        .await
        .unwrap();
    let paused = outcome
        .suspended()
        .expect("the swallowing middleware did not stop it");
    assert_eq!(paused.node_name, "gate");
    assert_eq!(*log.lock().unwrap(), ["pre"]);
    assert!(!paused.state.done, "`finish` did not run");

    let done = approved(&graph, &paused.invocation_id).await;
    assert!(done.state.done && done.state.approved);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "ContinueAfter does not rerun the gate"
    );
    assert_eq!(done.invocation_id, paused.invocation_id);
}

#[tokio::test]
async fn rerun_node_runs_the_suspending_body_again_on_the_merged_state() {
    let runs = Arc::new(AtomicUsize::new(0));
    let graph = gated(OnResume::RerunNode, Arc::clone(&runs))
        .compile()
        .unwrap();
    let paused = paused(&graph).await;
    let done = approved(&graph, &paused.invocation_id).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(done.state.gate_runs, 1, "the rerun saw approved = true");
    assert!(done.state.done);
}

#[tokio::test]
async fn a_record_resumes_once_and_a_bad_payload_leaves_it_resumable() {
    let graph = gated(OnResume::ContinueAfter, Arc::default())
        .compile()
        .unwrap();
    let paused = paused(&graph).await;
    let bad = graph
        .resume(&paused.invocation_id, json!({"approved": "yes"}))
        .await
        .unwrap_err();
    assert_eq!(
        bad.category(),
        RuntimeCategory::SuspensionResumePayloadInvalid
    );
    let unknown = graph
        .resume(&paused.invocation_id, json!({"no_such_field": 1}))
        .await
        .unwrap_err();
    assert_eq!(
        unknown.category(),
        RuntimeCategory::SuspensionResumePayloadInvalid
    );

    graph
        .resume(&paused.invocation_id, json!({"approved": true}))
        .await
        .unwrap();
    let again = graph
        .resume(&paused.invocation_id, json!({"approved": true}))
        .await
        .unwrap_err();
    assert_eq!(again.category(), RuntimeCategory::SuspensionRecordInvalid);
}

#[tokio::test]
async fn invoke_reports_a_suspension_as_a_typed_error_and_the_record_is_kept() {
    let graph = gated(OnResume::ContinueAfter, Arc::default())
        .compile()
        .unwrap();
    let err = graph.invoke(Job::default()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::InvocationSuspended);
    let id = err.invocation_id().to_owned();
    let record = graph
        .paused_record(&id)
        .await
        .unwrap()
        .expect("record kept");
    assert_eq!(record.descriptor.signal_id, "approve");
    assert_eq!(
        graph.paused_records(Some("approve")).await.unwrap().len(),
        1
    );
    assert!(graph
        .paused_records(Some("other"))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn suspend_from_middleware_or_outside_an_invocation_is_unsupported_context() {
    let suspends = middleware_fn(|state: Arc<Job>, ctx, next| {
        Box::pin(async move {
            // Even swallowed, the refused call fails the invocation.
            let _ = suspend::<()>(SignalDescriptor::new("nope"));
            next.run(state, ctx).await
        })
    });
    let graph = gated(OnResume::ContinueAfter, Arc::default())
        .node_middleware("finish", suspends)
        .compile()
        .unwrap();
    let paused = paused(&graph).await;
    let err = graph
        .resume(&paused.invocation_id, json!({"approved": true}))
        .await
        .unwrap_err();
    assert_eq!(
        err.category(),
        RuntimeCategory::SuspensionInUnsupportedContext
    );
    assert!(!err.into_state().done);

    let outside = suspend::<()>(SignalDescriptor::new("x")).unwrap_err();
    assert!(outside
        .to_string()
        .contains("suspension_in_unsupported_context"));
}

#[tokio::test]
async fn a_subgraph_node_suspends_and_resumes_inside_the_subgraph() {
    let inner = GraphBuilder::new(Job::default())
        .add_node("ask", |s: Arc<Job>, _c: NodeCtx| async move {
            if s.approved {
                return Ok(JobUpdate::default());
            }
            suspend(SignalDescriptor::new("inner"))
        })
        .add_node("after", |_s: Arc<Job>, _c: NodeCtx| async {
            Ok(JobUpdate::default().gate_runs(7))
        })
        .add_edge("ask", "after")
        .add_edge("after", END)
        .entry("ask")
        .compile()
        .unwrap();
    let outer = GraphBuilder::new(Job::default())
        .add_node(
            "sub",
            SubgraphNode::<Job, Job>::new(inner).outputs([("gate_runs", "gate_runs")]),
        )
        .add_node("finish", |_s: Arc<Job>, _c: NodeCtx| async {
            Ok(JobUpdate::default().done(true))
        })
        .add_edge("sub", "finish")
        .add_edge("finish", END)
        .entry("sub")
        .compile()
        .unwrap();
    let paused = paused(&outer).await;
    assert_eq!(paused.namespace, ["sub", "ask"]);
    assert_eq!(paused.node_name, "ask");
    let done = outer
        .resume(&paused.invocation_id, json!({}))
        .await
        .unwrap()
        .completed()
        .unwrap();
    assert_eq!(
        done.state.gate_runs, 7,
        "`after` ran inside the subgraph and projected out"
    );
    assert!(done.state.done);
}

/// A checkpointer whose paused-record writes fail (the trait's defaults).
#[derive(Clone, Default)]
struct NoPaused(InMemoryCheckpointer);

impl Checkpointer for NoPaused {
    fn save<'a>(&'a self, id: &'a str, r: CheckpointRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        self.0.save(id, r)
    }
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        self.0.load(id)
    }
    fn list<'a>(
        &'a self,
        f: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        self.0.list(f)
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.0.delete(id)
    }
}

#[tokio::test]
async fn a_failed_persist_makes_the_invocation_error_with_persistence_failed() {
    let graph = gated(OnResume::ContinueAfter, Arc::default())
        .checkpointer(NoPaused::default())
        .compile()
        .unwrap();
    let err = graph
        .run(Job::default(), InvokeOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SuspensionPersistenceFailed);
    assert!(
        err.to_string().contains("paused-invocation records"),
        "{err}"
    );
}

#[tokio::test]
async fn with_a_checkpointer_a_dropped_resume_can_continue_from_the_checkpoint() {
    let store = InMemoryCheckpointer::new();
    let reached = Arc::new(tokio::sync::Notify::new());
    let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let gate_runs = Arc::new(AtomicUsize::new(0));
    let (r, f, g) = (
        Arc::clone(&reached),
        Arc::clone(&first),
        Arc::clone(&gate_runs),
    );
    let graph = GraphBuilder::new(Job::default())
        .add_node("gate", move |s: Arc<Job>, _c: NodeCtx| {
            g.fetch_add(1, Ordering::SeqCst);
            async move {
                if s.approved {
                    return Ok(JobUpdate::default());
                }
                suspend(SignalDescriptor::new("approve"))
            }
        })
        .add_node("slow", move |_s: Arc<Job>, _c: NodeCtx| {
            let (reached, first) = (Arc::clone(&r), Arc::clone(&f));
            async move {
                // The first run stays mid-node until it is dropped.
                if first.swap(false, Ordering::SeqCst) {
                    reached.notify_one();
                    std::future::pending::<()>().await;
                }
                Ok(JobUpdate::default().done(true))
            }
        })
        .add_edge("gate", "slow")
        .add_edge("slow", END)
        .entry("gate")
        .checkpointer(store.clone())
        .compile()
        .unwrap();
    let paused = paused(&graph).await;
    // Resume, and drop the resumed run while `slow` is mid-node.
    let resumed = graph.resume(&paused.invocation_id, json!({"approved": true}));
    tokio::select! {
        _ = resumed => panic!("`slow` never finishes its first run"),
        () = reached.notified() => {}
    }
    // The signal is spent: a second delivery cannot double-resume.
    let again = graph
        .resume(&paused.invocation_id, json!({"approved": true}))
        .await
        .unwrap_err();
    assert_eq!(again.category(), RuntimeCategory::SuspensionRecordInvalid);
    // The merged state was checkpointed before the resumed run's first node: a
    // checkpoint resume continues at `slow`, without running the gate again.
    let record = store
        .load(&paused.invocation_id)
        .await
        .unwrap()
        .expect("checkpointed");
    assert_eq!(record.state["approved"], json!(true));
    let done = graph
        .invoke_with(
            Job::default(),
            InvokeOptions::default().resume_invocation(&paused.invocation_id),
        )
        .await
        .unwrap();
    assert!(done.state.approved, "the merged payload survived the drop");
    assert!(done.state.done);
    assert_eq!(
        gate_runs.load(Ordering::SeqCst),
        1,
        "the gate ran once, before the suspension"
    );
}
