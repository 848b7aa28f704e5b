//! SessionStore cases (sessions §5.1–§5.4, §8.1 last-write-wins, §8.2 optimistic
//! concurrency).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use openarmature_graph::session::{SessionConfig, SessionFilter, SessionRecord, SessionStore};
use openarmature_graph::{
    category_of, state, GraphBuilder, InvokeOptions, NodeCtx, NodeError, END,
};
use serde_json::{json, Value};

use super::{Backend, Case};

state! {
    /// A session-bound run.
    #[derive(Default)]
    pub struct Turns => TurnsUpdate {
        /// One entry per invoke.
        pub history: Vec<String> => append,
    }
}

/// Every SessionStore case.
pub const SESSION_CASES: &[Case] = &[
    ("missing_sessions_load_none_and_delete_quietly", |b, s| {
        Box::pin(missing(b, s))
    }),
    ("save_assigns_versions_and_keeps_created_at", |b, s| {
        Box::pin(versions(b, s))
    }),
    ("expected_version_mismatches_are_write_conflicts", |b, s| {
        Box::pin(conflicts(b, s))
    }),
    ("list_orders_by_update_filters_and_omits_state", |b, s| {
        Box::pin(list(b, s))
    }),
    ("sessions_survive_reopening_the_storage", |b, s| {
        Box::pin(reopen(b, s))
    }),
    (
        "concurrent_expected_version_saves_admit_exactly_one",
        |b, s| Box::pin(race(b, s)),
    ),
    (
        "a_graph_continues_its_session_from_a_reopened_store",
        |b, s| Box::pin(graph(b, s)),
    ),
];

fn rec(id: &str, schema: &str, state: Value) -> SessionRecord {
    SessionRecord::new(id, schema, state)
}

fn conflict_of(err: &openarmature_graph::BoxError) -> Option<&'static str> {
    category_of(&**err).map(|c| c.as_str())
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(2)).await;
}

async fn missing(b: &dyn Backend, s: &str) {
    let store = b.session_store(s).await;
    assert!(store.load("nobody").await.unwrap().is_none());
    store.delete("nobody").await.unwrap();
    assert!(store.list(None).await.unwrap().is_empty());
}

async fn versions(b: &dyn Backend, s: &str) {
    let store = b.session_store(s).await;
    let before = SystemTime::now();
    assert_eq!(
        store
            .save("a", rec("a", "v1", json!({"x": [1, 2]})), None)
            .await
            .unwrap(),
        1
    );
    let first = store.load("a").await.unwrap().expect("saved");
    assert_eq!(
        (
            first.session_id.as_str(),
            first.version,
            first.schema_version.as_str()
        ),
        ("a", 1, "v1")
    );
    assert_eq!(first.state, json!({"x": [1, 2]}));
    assert!(first.created_at >= before - Duration::from_secs(1));
    pause().await;
    // Last-write-wins (§8.1): no expected version, the counter still moves.
    assert_eq!(
        store
            .save("a", rec("a", "v2", json!({"x": "new"})), None)
            .await
            .unwrap(),
        2
    );
    let second = store.load("a").await.unwrap().expect("saved");
    assert_eq!(second.version, 2);
    assert_eq!(second.schema_version, "v2");
    assert_eq!(second.state, json!({"x": "new"}));
    assert_eq!(second.created_at, first.created_at, "created_at is kept");
    assert!(second.updated_at > first.updated_at);
    store.delete("a").await.unwrap();
    assert!(store.load("a").await.unwrap().is_none());
    assert_eq!(
        store
            .save("a", rec("a", "v1", json!({})), None)
            .await
            .unwrap(),
        1,
        "a deleted session starts over"
    );
}

async fn conflicts(b: &dyn Backend, s: &str) {
    let store = b.session_store(s).await;
    assert_eq!(
        store
            .save("a", rec("a", "v", json!({"n": 1})), Some(0))
            .await
            .unwrap(),
        1
    );
    let again = store
        .save("a", rec("a", "v", json!({"n": 0})), Some(0))
        .await
        .unwrap_err();
    assert_eq!(conflict_of(&again), Some("session_write_conflict"));
    assert!(again.to_string().contains("found 1"), "{again}");
    assert_eq!(
        store
            .save("a", rec("a", "v", json!({"n": 2})), Some(1))
            .await
            .unwrap(),
        2
    );
    let stale = store
        .save("a", rec("a", "v", json!({"n": 9})), Some(1))
        .await
        .unwrap_err();
    assert_eq!(conflict_of(&stale), Some("session_write_conflict"));
    let absent = store
        .save("b", rec("b", "v", json!({})), Some(3))
        .await
        .unwrap_err();
    assert!(absent.to_string().contains("no record"), "{absent}");
    let kept = store.load("a").await.unwrap().expect("saved");
    assert_eq!(
        (kept.version, kept.state),
        (2, json!({"n": 2})),
        "conflicts write nothing"
    );
    assert!(store.load("b").await.unwrap().is_none());
}

async fn list(b: &dyn Backend, s: &str) {
    let store = b.session_store(s).await;
    store
        .save("a", rec("a", "v1", json!({"big": "x"})), None)
        .await
        .unwrap();
    pause().await;
    let mid = SystemTime::now();
    pause().await;
    store
        .save("b", rec("b", "v2", json!({})), None)
        .await
        .unwrap();
    pause().await;
    store
        .save("c", rec("c", "v1", json!({})), None)
        .await
        .unwrap();
    pause().await;
    store
        .save("a", rec("a", "v1", json!({})), None)
        .await
        .unwrap();
    let all = store.list(None).await.unwrap();
    let names: Vec<&str> = all.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(names, ["b", "c", "a"], "oldest update first");
    assert_eq!(all[2].version, 2);
    let only = |f: SessionFilter| {
        let store = Arc::clone(&store);
        async move {
            store
                .list(Some(&f))
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.session_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        only(SessionFilter::new().schema_version("v1")).await,
        ["c", "a"]
    );
    assert_eq!(
        only(SessionFilter::new().created_after(mid)).await,
        ["b", "c"]
    );
    assert_eq!(
        only(SessionFilter::new().updated_after(mid)).await,
        ["b", "c", "a"]
    );
    assert_eq!(
        only(SessionFilter::new().created_after(mid).schema_version("v2")).await,
        ["b"]
    );
}

async fn reopen(b: &dyn Backend, s: &str) {
    {
        let first = b.session_store(s).await;
        first
            .save("u", rec("u", "v", json!({"h": [1]})), Some(0))
            .await
            .unwrap();
    }
    let again = b.session_store(s).await;
    let found = again.load("u").await.unwrap().expect("durable");
    assert_eq!((found.version, found.state), (1, json!({"h": [1]})));
    assert_eq!(
        again
            .save("u", rec("u", "v", json!({})), Some(1))
            .await
            .unwrap(),
        2
    );
}

async fn race(b: &dyn Backend, s: &str) {
    let store = b.session_store(s).await;
    store
        .save("hot", rec("hot", "v", json!({"n": 0})), None)
        .await
        .unwrap();
    // Two handles on the same storage, as two workers would have.
    let other = b.session_store(s).await;
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let store = if i % 2 == 0 {
                Arc::clone(&store)
            } else {
                Arc::clone(&other)
            };
            tokio::spawn(async move {
                store
                    .save("hot", rec("hot", "v", json!({"n": i})), Some(1))
                    .await
                    .map_err(|e| conflict_of(&e))
            })
        })
        .collect();
    let mut won = 0;
    let mut conflicted = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(v) => {
                assert_eq!(v, 2);
                won += 1;
            }
            Err(Some("session_write_conflict")) => conflicted += 1,
            Err(other) => panic!("unexpected error category {other:?}"),
        }
    }
    assert_eq!((won, conflicted), (1, 11));
    assert_eq!(store.load("hot").await.unwrap().map(|r| r.version), Some(2));
}

async fn graph(b: &dyn Backend, s: &str) {
    let build = |store: Arc<dyn SessionStore>| {
        GraphBuilder::new(Turns::default())
            .add_node("turn", |_s: Arc<Turns>, _c: NodeCtx| async {
                Ok::<_, NodeError>(TurnsUpdate::default().history(vec!["t".into()]))
            })
            .add_edge("turn", END)
            .entry("turn")
            .sessions(SessionConfig::new(store).optimistic_concurrency(true))
            .compile()
            .unwrap()
    };
    let opts = || InvokeOptions::default().session_id("u1");
    build(b.session_store(s).await)
        .invoke_with(Turns::default(), opts())
        .await
        .unwrap();
    let done = build(b.session_store(s).await)
        .invoke_with(Turns::default(), opts())
        .await
        .unwrap();
    assert_eq!(done.state.history, ["t", "t"]);
    let stored = b
        .session_store(s)
        .await
        .load("u1")
        .await
        .unwrap()
        .expect("saved");
    assert_eq!(stored.version, 2);
}
