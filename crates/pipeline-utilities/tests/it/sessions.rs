//! sessions §5.5 / §8.2 / §9.2: the SQLite SessionStore (protocol, durability across
//! reopen, expected-version conflicts, a graph resuming through it) and fan-out
//! instances that see only their projected item, never the session.

use std::sync::{Arc, Mutex};

use openarmature_graph::session::{
    InMemorySessionStore, SessionConfig, SessionFilter, SessionRecord, SessionStore,
};
use openarmature_graph::{
    category_of, state, GraphBuilder, InvokeOptions, NodeCtx, NodeError, RuntimeCategory, END,
};
use openarmature_pipeline::{FanOutNode, SqliteSessionError, SqliteSessionStore};
use serde_json::json;

use crate::common::single_node;
use crate::common::TempDb;

state! {
    /// A session-bound run.
    #[derive(Default, PartialEq)]
    pub struct Turns => TurnsUpdate {
        /// One entry per invoke.
        pub history: Vec<String> => append,
        /// The items a fan-out runs over.
        pub items: Vec<String>,
        /// The fan-out's collected outputs.
        pub outputs: Vec<String> => append,
    }
}

state! {
    /// One fan-out instance.
    #[derive(Default, PartialEq)]
    pub struct PerItem => PerItemUpdate {
        /// The instance's item.
        pub item: String,
        /// Its output.
        pub processed: String,
    }
}

#[tokio::test]
async fn sqlite_store_satisfies_the_protocol_and_survives_reopen() {
    let db = TempDb::new("sess-crud");
    let store = SqliteSessionStore::open(&db.0).unwrap();
    assert!(store.load("a").await.unwrap().is_none());
    store.delete("a").await.unwrap(); // idempotent
    let rec = SessionRecord::new("a", "v1", json!({"x": [1, 2]}));
    assert_eq!(store.save("a", rec, Some(0)).await.unwrap(), 1);
    store
        .save("b", SessionRecord::new("b", "v2", json!({})), None)
        .await
        .unwrap();
    let conflict = store
        .save("a", SessionRecord::new("a", "v1", json!({"x": 0})), Some(0))
        .await
        .unwrap_err();
    assert_eq!(
        category_of(&*conflict).map(|c| c.as_str()),
        Some("session_write_conflict")
    );
    let second = SessionRecord::new("a", "v1", json!({"x": 3}));
    assert_eq!(store.save("a", second, Some(1)).await.unwrap(), 2);
    drop(store);

    let reopened = SqliteSessionStore::open(&db.0).unwrap();
    let a = reopened.load("a").await.unwrap().unwrap();
    assert_eq!((a.version, a.state.clone()), (2, json!({"x": 3})));
    assert!(a.created_at <= a.updated_at);
    let all = reopened.list(None).await.unwrap();
    assert_eq!(all.len(), 2);
    let v2 = SessionFilter::new().schema_version("v2");
    let only_b = reopened.list(Some(&v2)).await.unwrap();
    assert_eq!(
        only_b
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    let late = SessionFilter::new().updated_after(a.updated_at);
    assert_eq!(reopened.list(Some(&late)).await.unwrap()[0].session_id, "a");
    reopened.delete("a").await.unwrap();
    assert!(reopened.load("a").await.unwrap().is_none());
}

#[tokio::test]
async fn a_graph_resumes_its_session_from_a_reopened_database() {
    let db = TempDb::new("sess-graph");
    let build = |store: SqliteSessionStore| {
        GraphBuilder::new(Turns::default())
            .add_node("turn", |_s: Arc<Turns>, _c: NodeCtx| async {
                Ok::<_, NodeError>(TurnsUpdate::default().history(vec!["t".into()]))
            })
            .add_edge("turn", END)
            .entry("turn")
            .sessions(
                SessionConfig::new(Arc::new(store))
                    .project(["history"])
                    .optimistic_concurrency(true),
            )
            .compile()
            .unwrap()
    };
    let opts = || InvokeOptions::default().session_id("u1");
    let first = build(SqliteSessionStore::open(&db.0).unwrap());
    first.invoke_with(Turns::default(), opts()).await.unwrap();
    // A restarted process: a new store on the same file.
    let second = build(SqliteSessionStore::open(&db.0).unwrap());
    let done = second.invoke_with(Turns::default(), opts()).await.unwrap();
    assert_eq!(done.state.history, ["t", "t"]);
}

#[tokio::test]
async fn an_unreadable_row_is_a_typed_load_failure() {
    let db = TempDb::new("sess-corrupt");
    let store = SqliteSessionStore::open(&db.0).unwrap();
    let raw = rusqlite::Connection::open(&db.0).unwrap();
    raw.execute(
        "INSERT INTO openarmature_sessions VALUES ('z', 'v', 1, 0, 0, 'not json')",
        [],
    )
    .unwrap();
    let err = store.load("z").await.unwrap_err();
    let typed = err.downcast_ref::<SqliteSessionError>().unwrap();
    assert!(matches!(typed, SqliteSessionError::Decode { .. }));
    assert_eq!(typed.category(), "session_load_failed");
    let graph = GraphBuilder::new(Turns::default())
        .add_node("n", |_s: Arc<Turns>, _c: NodeCtx| async {
            Ok::<_, NodeError>(TurnsUpdate::default())
        })
        .add_edge("n", END)
        .entry("n")
        .sessions(SessionConfig::new(Arc::new(store)))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Turns::default(), InvokeOptions::default().session_id("z"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SessionLoadFailed);
}

#[tokio::test]
async fn fan_out_instances_see_only_their_item_never_the_session() {
    let store = InMemorySessionStore::new();
    store
        .save(
            "s11",
            SessionRecord::new("s11", "unversioned", json!({"items": ["a", "b", "c"]})),
            None,
        )
        .await
        .unwrap();
    let seen: Arc<Mutex<Vec<PerItem>>> = Arc::default();
    let seen2 = Arc::clone(&seen);
    let per_item = single_node::<PerItem>("process", move |s: Arc<PerItem>, ctx: NodeCtx| {
        seen2.lock().unwrap().push((*s).clone());
        async move {
            // An instance cannot write the outer session (§9.2).
            let refused = ctx.save_session(&*s).await.unwrap_err();
            assert_eq!(refused.category(), "session_save_failed");
            Ok::<_, NodeError>(PerItemUpdate::default().processed("ok".to_string()))
        }
    });
    let graph = GraphBuilder::new(Turns::default())
        .add_node(
            "fan_out_node",
            FanOutNode::over_items(per_item, "items", "item", "processed", "outputs"),
        )
        .add_edge("fan_out_node", END)
        .entry("fan_out_node")
        .sessions(SessionConfig::new(Arc::new(store.clone())).project(["items", "outputs"]))
        .compile()
        .unwrap();
    let done = graph
        .invoke_with(Turns::default(), InvokeOptions::default().session_id("s11"))
        .await
        .unwrap();
    let mut pre = seen.lock().unwrap().clone();
    pre.sort_by(|a, b| a.item.cmp(&b.item));
    let expected: Vec<PerItem> = ["a", "b", "c"]
        .iter()
        .map(|i| PerItem {
            item: (*i).to_owned(),
            processed: String::new(),
        })
        .collect();
    assert_eq!(pre, expected);
    assert_eq!(done.state.outputs, ["ok", "ok", "ok"]);
    let rec = store.load("s11").await.unwrap().unwrap();
    assert_eq!(
        rec.state,
        json!({"items": ["a", "b", "c"], "outputs": ["ok", "ok", "ok"]})
    );
}
