//! Checkpointer cases (pipeline-utilities §10.1 / §10.2 / §10.3.1).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, Checkpointer, FanOutProgress, InstanceState, LineageEntry,
    NodePosition,
};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, NodeError, END};
use serde_json::json;

use super::{Backend, Case};

state! {
    /// The nodes that ran, in order.
    #[derive(Default)]
    pub struct Run => RunUpdate {
        /// Appended by each node.
        pub log: Vec<String> => append,
    }
}

/// Every Checkpointer case.
pub const CHECKPOINT_CASES: &[Case] = &[
    ("empty_store_loads_none_and_lists_nothing", |b, s| {
        Box::pin(empty_store(b, s))
    }),
    ("save_then_load_returns_the_record_exactly", |b, s| {
        Box::pin(round_trip(b, s))
    }),
    ("the_latest_save_wins", |b, s| Box::pin(latest_wins(b, s))),
    ("list_orders_by_last_save_and_filters", |b, s| {
        Box::pin(list_and_filter(b, s))
    }),
    (
        "delete_is_idempotent_and_only_removes_its_invocation",
        |b, s| Box::pin(delete(b, s)),
    ),
    ("records_survive_reopening_the_storage", |b, s| {
        Box::pin(reopen(b, s))
    }),
    ("concurrent_saves_of_many_invocations_all_land", |b, s| {
        Box::pin(concurrent(b, s))
    }),
    ("a_failed_run_resumes_from_a_reopened_store", |b, s| {
        Box::pin(graph_resume(b, s))
    }),
    (
        "a_wide_fan_out_saved_per_instance_loads_equal_from_a_fresh_store",
        |b, s| Box::pin(super::checkpoint_wide::wide_fan_out(b, s)),
    ),
    ("interleaved_histories_of_one_id_never_mix", |b, s| {
        Box::pin(super::checkpoint_wide::interleaved_histories(b, s))
    }),
];

fn record(id: &str, corr: &str, log: &[&str]) -> CheckpointRecord {
    let positions: Vec<NodePosition> = log
        .iter()
        .enumerate()
        .map(|(i, n)| NodePosition::new(Vec::new(), *n, i as u64 + 1, 0, None))
        .collect();
    CheckpointRecord::new(id, corr, json!({ "log": log }), positions, "1")
}

async fn pause() {
    // Distinct `last_saved_at` values even on coarse clocks.
    tokio::time::sleep(Duration::from_millis(2)).await;
}

fn ids(list: &[openarmature_graph::checkpoint::CheckpointSummary]) -> Vec<&str> {
    list.iter().map(|s| s.invocation_id.as_str()).collect()
}

async fn empty_store(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    assert_eq!(store.load("nobody").await.unwrap(), None);
    assert!(store.list(None).await.unwrap().is_empty());
}

async fn round_trip(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let mut progress = FanOutProgress::new(
        vec!["outer".into()],
        "fan",
        vec![LineageEntry::new(Vec::new(), "outer_fan", 1)],
        2,
    );
    progress.instances[0].state = InstanceState::Completed;
    progress.instances[0].result = json!({"answer": [1, 2, {"nested": "é ✓"}]});
    progress.instances[1].state = InstanceState::InFlight;
    let rec = record("inv-1", "corr-1", &["a", "b"])
        .with_parent_states(vec![json!({"z": 1, "a": null, "m": [true, 1.5]})])
        .with_fan_out_progress(vec![progress]);
    store.save("inv-1", rec.clone()).await.unwrap();
    let loaded = store.load("inv-1").await.unwrap().expect("saved record");
    assert_eq!(loaded, rec);
    // Key order of the states is kept (JSON text round trip).
    let keys: Vec<&String> = loaded.parent_states[0]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["z", "a", "m"]);
    let listed = store.list(None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].completed_node_count, 2);
    assert_eq!(listed[0].correlation_id, "corr-1");
    assert_eq!(listed[0].last_saved_at, rec.last_saved_at);
}

async fn latest_wins(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    store
        .save("inv-1", record("inv-1", "c", &["a"]))
        .await
        .unwrap();
    pause().await;
    let later = record("inv-1", "c", &["a", "b", "c"]);
    store.save("inv-1", later.clone()).await.unwrap();
    assert_eq!(store.load("inv-1").await.unwrap(), Some(later));
    let listed = store.list(None).await.unwrap();
    assert_eq!(listed.len(), 1, "one entry per invocation");
    assert_eq!(listed[0].completed_node_count, 3);
}

async fn list_and_filter(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    store
        .save("inv-1", record("inv-1", "corr-a", &["a"]))
        .await
        .unwrap();
    pause().await;
    let mid = SystemTime::now();
    pause().await;
    store
        .save("inv-2", record("inv-2", "corr-b", &["a"]))
        .await
        .unwrap();
    pause().await;
    store
        .save("inv-3", record("inv-3", "corr-a", &["a"]))
        .await
        .unwrap();
    pause().await;
    // Re-saving inv-1 moves it last.
    store
        .save("inv-1", record("inv-1", "corr-a", &["a", "b"]))
        .await
        .unwrap();
    assert_eq!(
        ids(&store.list(None).await.unwrap()),
        ["inv-2", "inv-3", "inv-1"]
    );
    let a = CheckpointFilter::new().correlation_id("corr-a");
    assert_eq!(
        ids(&store.list(Some(&a)).await.unwrap()),
        ["inv-3", "inv-1"]
    );
    let since = CheckpointFilter::new().saved_since(mid);
    assert_eq!(
        ids(&store.list(Some(&since)).await.unwrap()),
        ["inv-2", "inv-3", "inv-1"]
    );
    let both = CheckpointFilter::new()
        .correlation_id("corr-b")
        .saved_since(SystemTime::now() + Duration::from_secs(60));
    assert!(store.list(Some(&both)).await.unwrap().is_empty());
}

async fn delete(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    store.delete("never-saved").await.unwrap();
    for id in ["inv-1", "inv-2"] {
        store.save(id, record(id, "c", &["a"])).await.unwrap();
    }
    store.delete("inv-1").await.unwrap();
    store.delete("inv-1").await.unwrap();
    assert_eq!(store.load("inv-1").await.unwrap(), None);
    assert!(store.load("inv-2").await.unwrap().is_some());
    assert_eq!(ids(&store.list(None).await.unwrap()), ["inv-2"]);
}

async fn reopen(b: &dyn Backend, s: &str) {
    let rec = record("inv-1", "corr", &["a", "b"]);
    {
        let first = b.checkpointer(s).await;
        first.save("inv-1", rec.clone()).await.unwrap();
    }
    let again = b.checkpointer(s).await;
    assert_eq!(again.load("inv-1").await.unwrap(), Some(rec));
    // A different storage name is independent.
    let other = format!("{s}_other");
    let elsewhere = b.checkpointer(&other).await;
    assert_eq!(elsewhere.load("inv-1").await.unwrap(), None);
    b.remove(&other).await;
}

async fn concurrent(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let saves = (0..24).map(|i| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let id = format!("inv-{i:02}");
            for step in 1..=3 {
                let log: Vec<String> = (0..step).map(|n| format!("n{n}")).collect();
                let log: Vec<&str> = log.iter().map(String::as_str).collect();
                store.save(&id, record(&id, "c", &log)).await.unwrap();
            }
        })
    });
    for task in saves.collect::<Vec<_>>() {
        task.await.unwrap();
    }
    let listed = store.list(None).await.unwrap();
    assert_eq!(listed.len(), 24);
    assert!(listed.iter().all(|s| s.completed_node_count == 3));
}

fn graph_node(
    name: &'static str,
    ran: &Arc<Mutex<Vec<String>>>,
    fail_b: &Arc<AtomicBool>,
) -> impl Fn(Arc<Run>, NodeCtx) -> BoxFuture<'static, Result<RunUpdate, NodeError>> + Send + Sync {
    let ran = Arc::clone(ran);
    let fail_b = Arc::clone(fail_b);
    move |_s: Arc<Run>, _ctx: NodeCtx| {
        let ran = Arc::clone(&ran);
        let fail = name == "b" && fail_b.load(Ordering::SeqCst);
        Box::pin(async move {
            ran.lock().unwrap().push(name.to_owned());
            if fail {
                return Err::<RunUpdate, NodeError>("b is down".into());
            }
            Ok(RunUpdate::default().log(vec![name.to_owned()]))
        })
    }
}

async fn graph_resume(b: &dyn Backend, s: &str) {
    let ran = Arc::new(Mutex::new(Vec::<String>::new()));
    let fail_b = Arc::new(AtomicBool::new(true));
    let build = |store: Arc<dyn Checkpointer>| {
        GraphBuilder::new(Run::default())
            .add_node("a", graph_node("a", &ran, &fail_b))
            .add_node("b", graph_node("b", &ran, &fail_b))
            .add_node("c", graph_node("c", &ran, &fail_b))
            .add_edge("a", "b")
            .add_edge("b", "c")
            .add_edge("c", END)
            .entry("a")
            .checkpointer(store)
            .compile()
            .unwrap()
    };
    let first = build(b.checkpointer(s).await);
    let err = first
        .invoke_with(
            Run::default(),
            InvokeOptions::default().correlation_id("corr"),
        )
        .await
        .unwrap_err();
    let failed_id = err.invocation_id().to_owned();
    drop(first);

    fail_b.store(false, Ordering::SeqCst);
    let second = build(b.checkpointer(s).await);
    let done = second
        .invoke_with(
            Run::default(),
            InvokeOptions::default().resume_invocation(&failed_id),
        )
        .await
        .unwrap();
    assert_eq!(done.state.log, ["a", "b", "c"]);
    assert_eq!(
        *ran.lock().unwrap(),
        ["a", "b", "b", "c"],
        "a is not re-run"
    );
    let resumed = b
        .checkpointer(s)
        .await
        .load(&done.invocation_id)
        .await
        .unwrap()
        .expect("the resumed run's record");
    assert_eq!(resumed.correlation_id, "corr");
    assert_eq!(resumed.completed_positions.len(), 3);
}
