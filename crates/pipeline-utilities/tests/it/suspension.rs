//! Suspension through the pipeline utilities: retry and failure isolation around a
//! suspending node neither retry nor degrade it (suspension §3 / §8.4), and the SQLite
//! checkpointer stores paused records durably, claims them once and lists them by
//! signal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_graph::suspension::{suspend, Outcome, SignalDescriptor};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_pipeline::retry::RetryConfig;
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use serde_json::json;

state! {
    /// A reviewed item.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// The reviewer's verdict.
        pub verdict: String,
        /// Set when degraded.
        pub degraded: bool,
    }
}

fn graph(
    runs: Arc<AtomicUsize>,
    store: Option<openarmature_pipeline::SqliteCheckpointer>,
) -> openarmature_graph::CompiledGraph<Item> {
    let mut b = GraphBuilder::new(Item::default())
        .add_node("review", move |s: Arc<Item>, _c: NodeCtx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                if !s.verdict.is_empty() {
                    return Ok(ItemUpdate::default());
                }
                suspend(SignalDescriptor::new("review-7"))
            }
        })
        .node_middleware(
            "review",
            FailureIsolationMiddleware::<Item>::new("review_degraded", |_| {
                ItemUpdate::default().degraded(true)
            }),
        )
        .node_middleware(
            "review",
            RetryMiddleware::new(RetryConfig::default().max_attempts(3)),
        )
        .add_edge("review", END)
        .entry("review");
    if let Some(store) = store {
        b = b.checkpointer(store);
    }
    b.compile().unwrap()
}

#[tokio::test]
async fn retry_and_isolation_around_a_suspending_node_neither_retry_nor_degrade() {
    let runs = Arc::new(AtomicUsize::new(0));
    let g = graph(Arc::clone(&runs), None);
    let outcome = g
        .run(Item::default(), InvokeOptions::default())
        .await
        .unwrap();
    let Outcome::Suspended(paused) = outcome else {
        panic!("expected a suspension")
    };
    assert_eq!(runs.load(Ordering::SeqCst), 1, "not retried");
    assert!(!paused.state.degraded, "not degraded");
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_sqlite_checkpointer_keeps_paused_records_durably_and_claims_them_once() {
    use openarmature_graph::checkpoint::Checkpointer;
    use openarmature_graph::suspension::PausedStatus;
    use openarmature_pipeline::SqliteCheckpointer;

    let dir = std::env::temp_dir().join(format!("oa-paused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("paused.db");
    let _ = std::fs::remove_file(&path);
    let runs = Arc::new(AtomicUsize::new(0));
    let id = {
        let g = graph(
            Arc::clone(&runs),
            Some(SqliteCheckpointer::open(&path).unwrap()),
        );
        let paused = g
            .run(Item::default(), InvokeOptions::default())
            .await
            .unwrap()
            .suspended()
            .unwrap();
        paused.invocation_id
    };
    // A fresh handle on the file (as another process would open it).
    let store = SqliteCheckpointer::open(&path).unwrap();
    let listed = store.list_paused(Some("review-7")).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].invocation_id, id);
    assert!(store.list_paused(Some("other")).await.unwrap().is_empty());
    assert!(
        store.load(&id).await.unwrap().is_none(),
        "a paused record is not a checkpoint"
    );

    let g = graph(Arc::clone(&runs), Some(store.clone()));
    let done = g
        .resume(&id, json!({"verdict": "approved"}))
        .await
        .unwrap()
        .completed()
        .unwrap();
    assert_eq!(done.state.verdict, "approved");
    assert_eq!(done.invocation_id, id);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "ContinueAfter: the node is not re-run"
    );
    assert!(
        store.load_paused(&id).await.unwrap().is_none(),
        "spent records are deleted"
    );

    // claim is atomic: once suspended, once claimed.
    let mut record = listed[0].clone();
    record.status = PausedStatus::Suspended;
    store.save_paused(record).await.unwrap();
    assert!(store.claim_paused(&id).await.unwrap().is_some());
    assert!(store.claim_paused(&id).await.unwrap().is_none());
    assert_eq!(
        store.load_paused(&id).await.unwrap().map(|r| r.status),
        Some(PausedStatus::Resumed)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
