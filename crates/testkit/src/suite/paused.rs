//! Paused-invocation record cases (suspension §8.5, pipeline-utilities §10.15): the
//! Checkpointer's `save_paused` / `load_paused` / `claim_paused` / `list_paused` /
//! `delete_paused`. Records come from a real suspension (a graph whose node suspends),
//! so every backend stores what the engine writes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::suspension::{suspend, PausedRecord, PausedStatus, SignalDescriptor};
use openarmature_graph::{state, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, END};
use serde_json::json;

use super::{Backend, Case};

state! {
    /// A run that waits for a reviewer.
    #[derive(Default)]
    pub struct Review => ReviewUpdate {
        /// Set by the resume's payload.
        pub verdict: String,
        /// Appended by each node that ran.
        pub log: Vec<String> => append,
    }
}

/// How many concurrent claimers the race case starts.
pub const CLAIMERS: usize = 12;

/// Every paused-record case.
pub const PAUSED_CASES: &[Case] = &[
    ("an_empty_store_has_no_paused_records", |b, s| {
        Box::pin(empty(b, s))
    }),
    (
        "a_suspension_is_stored_exactly_and_is_not_a_checkpoint",
        |b, s| Box::pin(round_trip(b, s)),
    ),
    (
        "list_filters_by_signal_oldest_first_and_skips_claimed",
        |b, s| Box::pin(list(b, s)),
    ),
    (
        "a_claim_succeeds_once_and_leaves_the_record_resumed",
        |b, s| Box::pin(claim_once(b, s)),
    ),
    (
        "concurrent_claims_from_separate_stores_admit_exactly_one",
        |b, s| Box::pin(claim_race(b, s)),
    ),
    ("save_replaces_and_delete_is_idempotent", |b, s| {
        Box::pin(replace_and_delete(b, s))
    }),
    (
        "a_run_suspended_on_one_store_resumes_from_a_reopened_one",
        |b, s| Box::pin(resume_elsewhere(b, s)),
    ),
];

/// A graph: `ask` suspends on `signal` until the state has a verdict, then `done`.
fn graph(store: Arc<dyn Checkpointer>, signal: &'static str) -> CompiledGraph<Review> {
    GraphBuilder::new(Review::default())
        .add_node("ask", move |s: Arc<Review>, _c: NodeCtx| async move {
            if s.verdict.is_empty() {
                return suspend(SignalDescriptor::new(signal));
            }
            Ok(ReviewUpdate::default().log(vec!["ask".to_owned()]))
        })
        .add_node("done", |_s: Arc<Review>, _c: NodeCtx| async {
            Ok(ReviewUpdate::default().log(vec!["done".to_owned()]))
        })
        .add_edge("ask", "done")
        .add_edge("done", END)
        .entry("ask")
        .checkpointer(store)
        .compile()
        .unwrap_or_else(|e| panic!("the suite's graph compiles: {e}"))
}

/// Suspends one run on `store` awaiting `signal`; its invocation id.
async fn suspend_one(store: &Arc<dyn Checkpointer>, signal: &'static str) -> String {
    let outcome = graph(Arc::clone(store), signal)
        .run(
            Review::default(),
            InvokeOptions::default().correlation_id("corr"),
        )
        .await
        .unwrap_or_else(|e| panic!("the run suspends, not fails: {e}"));
    outcome
        .suspended()
        .unwrap_or_else(|| panic!("the run suspended"))
        .invocation_id
}

/// The stored record of `id`.
async fn stored(store: &Arc<dyn Checkpointer>, id: &str) -> PausedRecord {
    store
        .load_paused(id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("a paused record for {id}"))
}

/// `template` as another invocation awaiting `signal`, suspended `offset_ms` later.
fn variant(template: &PausedRecord, id: &str, signal: &str, offset_ms: u64) -> PausedRecord {
    let mut r = template.clone();
    r.invocation_id = id.to_owned();
    r.descriptor.signal_id = signal.to_owned();
    r.status = PausedStatus::Suspended;
    r.suspended_at = template.suspended_at + Duration::from_millis(offset_ms);
    r
}

fn ids(records: &[PausedRecord]) -> Vec<&str> {
    records.iter().map(|r| r.invocation_id.as_str()).collect()
}

async fn empty(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    assert_eq!(store.load_paused("nobody").await.unwrap(), None);
    assert_eq!(store.claim_paused("nobody").await.unwrap(), None);
    assert!(store.list_paused(None).await.unwrap().is_empty());
    assert!(store.list_paused(Some("sig")).await.unwrap().is_empty());
    store.delete_paused("nobody").await.unwrap();
}

async fn round_trip(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let id = suspend_one(&store, "review-1").await;
    let record = stored(&store, &id).await;
    assert_eq!(record.invocation_id, id);
    assert_eq!(record.status, PausedStatus::Suspended);
    assert_eq!(record.descriptor.signal_id, "review-1");
    assert_eq!(record.correlation_id, "corr");
    assert_eq!(record.node_name, "ask");
    assert!(
        store.load(&id).await.unwrap().is_none(),
        "a paused record is not a checkpoint"
    );
    // A record with awkward content comes back exactly.
    let mut odd = variant(&record, "inv-odd", "sig-é ✓", 5);
    odd.states = vec![json!({"z": 1, "a": null, "m": [true, 1.5, "ü"]})];
    odd.descriptor = odd
        .descriptor
        .clone()
        .with_metadata_value(json!({"reviewer": "ops", "n": [1, 2]}));
    store.save_paused(odd.clone()).await.unwrap();
    assert_eq!(stored(&store, "inv-odd").await, odd);
}

async fn list(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let id = suspend_one(&store, "sig-a").await;
    let t = stored(&store, &id).await;
    // Saved out of order: listing is by suspension time.
    for (rid, signal, offset) in [
        ("inv-3", "sig-a", 30),
        ("inv-1", "sig-a", 10),
        ("inv-2", "sig-b", 20),
    ] {
        store
            .save_paused(variant(&t, rid, signal, offset))
            .await
            .unwrap();
    }
    assert_eq!(
        ids(&store.list_paused(None).await.unwrap()),
        [id.as_str(), "inv-1", "inv-2", "inv-3"]
    );
    assert_eq!(
        ids(&store.list_paused(Some("sig-a")).await.unwrap()),
        [id.as_str(), "inv-1", "inv-3"]
    );
    assert_eq!(
        ids(&store.list_paused(Some("sig-b")).await.unwrap()),
        ["inv-2"]
    );
    assert!(store.list_paused(Some("sig-c")).await.unwrap().is_empty());
    // A claimed record awaits nothing any more.
    assert!(store.claim_paused("inv-1").await.unwrap().is_some());
    assert_eq!(
        ids(&store.list_paused(Some("sig-a")).await.unwrap()),
        [id.as_str(), "inv-3"]
    );
    let listed = store.list_paused(None).await.unwrap();
    assert!(listed.iter().all(|r| r.status == PausedStatus::Suspended));
}

async fn claim_once(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let id = suspend_one(&store, "sig").await;
    let before = stored(&store, &id).await;
    let claimed = store.claim_paused(&id).await.unwrap();
    assert_eq!(claimed.as_ref(), Some(&before), "the record as it was");
    assert_eq!(store.claim_paused(&id).await.unwrap(), None, "claimed once");
    let after = stored(&store, &id).await;
    assert_eq!(after.status, PausedStatus::Resumed);
    assert_eq!(after.states, before.states, "only the status changed");
    // Saving it suspended again (an application re-arming it) makes it claimable.
    store.save_paused(before.clone()).await.unwrap();
    assert_eq!(store.claim_paused(&id).await.unwrap(), Some(before));
}

async fn claim_race(b: &dyn Backend, s: &str) {
    let first = b.checkpointer(s).await;
    let id = suspend_one(&first, "sig").await;
    // One store per claimer, as separate workers would each open their own.
    let mut stores = Vec::with_capacity(CLAIMERS);
    for _ in 0..CLAIMERS {
        stores.push(b.checkpointer(s).await);
    }
    let gate = Arc::new(tokio::sync::Barrier::new(CLAIMERS));
    let wins = Arc::new(AtomicUsize::new(0));
    let claims: Vec<_> = stores
        .into_iter()
        .map(|store| {
            let (gate, wins, id) = (Arc::clone(&gate), Arc::clone(&wins), id.clone());
            tokio::spawn(async move {
                gate.wait().await;
                let claimed = store.claim_paused(&id).await.unwrap();
                if let Some(record) = claimed {
                    assert_eq!(record.status, PausedStatus::Suspended);
                    wins.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for claim in claims {
        claim.await.unwrap();
    }
    assert_eq!(
        wins.load(Ordering::SeqCst),
        1,
        "exactly one of {CLAIMERS} concurrent claims wins"
    );
    assert_eq!(stored(&first, &id).await.status, PausedStatus::Resumed);
}

async fn replace_and_delete(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let id = suspend_one(&store, "sig-old").await;
    let t = stored(&store, &id).await;
    let moved = variant(&t, &id, "sig-new", 50);
    store.save_paused(moved.clone()).await.unwrap();
    assert_eq!(
        stored(&store, &id).await,
        moved,
        "one record per invocation"
    );
    assert!(store.list_paused(Some("sig-old")).await.unwrap().is_empty());
    assert_eq!(ids(&store.list_paused(None).await.unwrap()), [id.as_str()]);

    store
        .save_paused(variant(&t, "inv-other", "sig-new", 60))
        .await
        .unwrap();
    store.delete_paused(&id).await.unwrap();
    store.delete_paused(&id).await.unwrap();
    assert_eq!(store.load_paused(&id).await.unwrap(), None);
    assert_eq!(store.claim_paused(&id).await.unwrap(), None);
    assert_eq!(
        ids(&store.list_paused(None).await.unwrap()),
        ["inv-other"],
        "only its own record is removed"
    );
}

async fn resume_elsewhere(b: &dyn Backend, s: &str) {
    let id = {
        let first = b.checkpointer(s).await;
        suspend_one(&first, "review-9").await
    };
    let second = b.checkpointer(s).await;
    assert_eq!(
        ids(&second.list_paused(Some("review-9")).await.unwrap()),
        [id.as_str()]
    );
    let done = graph(Arc::clone(&second), "review-9")
        .resume(&id, json!({"verdict": "approved"}))
        .await
        .unwrap()
        .completed()
        .unwrap_or_else(|| panic!("the resumed run completes"));
    assert_eq!(done.invocation_id, id, "the resume keeps the invocation id");
    assert_eq!(done.state.verdict, "approved");
    assert_eq!(
        done.state.log,
        ["done"],
        "ContinueAfter: `ask` is not re-run"
    );
    assert_eq!(
        second.load_paused(&id).await.unwrap(),
        None,
        "the spent record is deleted"
    );
    // A second resume of the same signal finds nothing to resume.
    let again = graph(Arc::clone(&second), "review-9")
        .resume(&id, json!({"verdict": "twice"}))
        .await;
    assert!(again.is_err(), "a spent record cannot be resumed again");
}
