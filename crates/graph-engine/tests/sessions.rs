//! Sessions (spec sessions §3–§10): resume across invokes, opt-in per invoke,
//! projection, auto-save opt-out, mid-invoke save, migrations, composition with
//! subgraphs, optimistic concurrency and the error categories. One test per
//! behaviour the upstream sessions fixtures 001–013 describe, plus the store protocol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::session::{
    InMemorySessionStore, SessionConfig, SessionError, SessionFilter, SessionRecord, SessionStore,
    SessionSummary,
};
use openarmature_graph::{
    category_of, cause_chain, state, BoxError, CompileError, GraphBuilder, InvokeOptions, NodeCtx,
    RuntimeCategory, State, SubgraphNode, END,
};
use serde_json::{json, Value};

state! {
    /// One accumulating list and two scalars.
    #[derive(Default, PartialEq)]
    pub struct Chat => ChatUpdate {
        /// Durable across invokes (append reducer).
        pub history: Vec<String> => append,
        /// Durable summary.
        pub summary: String,
        /// Per-invoke scratch.
        pub scratch: String,
        /// A counter.
        pub value: i64,
    }
}

/// An in-memory store that counts calls (to prove the store is not touched).
#[derive(Default, Clone)]
struct Counting {
    inner: InMemorySessionStore,
    loads: Arc<AtomicUsize>,
    saves: Arc<AtomicUsize>,
    fail_saves: bool,
    fail_loads: bool,
}

impl SessionStore for Counting {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if self.fail_loads {
            return Box::pin(async { Err("disk gone".into()) });
        }
        self.inner.load(id)
    }
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: SessionRecord,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        if self.fail_saves {
            return Box::pin(async { Err("disk full".into()) });
        }
        self.inner.save(id, record, expected)
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.inner.delete(id)
    }
    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        self.inner.list(filter)
    }
}

fn one_node(update: impl Fn(&Chat) -> ChatUpdate + Send + Sync + 'static) -> GraphBuilder<Chat> {
    let update = Arc::new(update);
    GraphBuilder::new(Chat::default())
        .add_node("turn", move |s: Arc<Chat>, _c: NodeCtx| {
            let u = update(&s);
            async move { Ok::<_, BoxError>(u) }
        })
        .add_edge("turn", END)
        .entry("turn")
}

fn sid(id: &str) -> InvokeOptions {
    InvokeOptions::default().session_id(id)
}

async fn stored(store: &InMemorySessionStore, id: &str) -> Option<SessionRecord> {
    store.load(id).await.unwrap()
}

#[tokio::test]
async fn second_invoke_resumes_the_first_invokes_saved_state() {
    let store = InMemorySessionStore::new();
    let graph = one_node(|_| ChatUpdate::default().history(vec!["x".into()]))
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let first = graph.invoke_with(Chat::default(), sid("s1")).await.unwrap();
    assert_eq!(first.state.history, ["x"]);
    let rec = stored(&store, "s1").await.unwrap();
    assert_eq!(rec.state["history"], json!(["x"]));
    assert_eq!(rec.version, 1);
    let second = graph.invoke_with(Chat::default(), sid("s1")).await.unwrap();
    assert_eq!(second.state.history, ["x", "x"]);
    let rec = stored(&store, "s1").await.unwrap();
    assert_eq!(rec.state["history"], json!(["x", "x"]));
    assert_eq!(rec.version, 2, "the second save overwrote the first");
    // Another session id starts fresh.
    let other = graph.invoke_with(Chat::default(), sid("s2")).await.unwrap();
    assert_eq!(other.state.history, ["x"]);
}

#[tokio::test]
async fn a_session_id_without_a_store_is_inert_for_persistence() {
    let graph = one_node(|_| ChatUpdate::default().value(1))
        .compile()
        .unwrap();
    let done = graph.invoke_with(Chat::default(), sid("s1")).await.unwrap();
    assert_eq!(done.state.value, 1);
}

#[tokio::test]
async fn without_a_session_id_the_store_is_never_called() {
    let store = Counting::default();
    let graph = one_node(|_| ChatUpdate::default().value(1))
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let done = graph.invoke(Chat::default()).await.unwrap();
    assert_eq!(done.value, 1);
    assert_eq!(store.loads.load(Ordering::SeqCst), 0);
    assert_eq!(store.saves.load(Ordering::SeqCst), 0);
    assert!(store.inner.is_empty());
    // With an id, exactly one load and one save.
    graph.invoke_with(Chat::default(), sid("s3")).await.unwrap();
    assert_eq!(store.loads.load(Ordering::SeqCst), 1);
    assert_eq!(store.saves.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn projected_sessions_never_persist_scratch_fields() {
    let store = InMemorySessionStore::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let graph = one_node(move |s| {
        seen2.lock().unwrap().push(s.clone());
        ChatUpdate::default()
            .summary("done".to_string())
            .scratch("tmp".to_string())
    })
    .sessions(SessionConfig::new(Arc::new(store.clone())).project(["summary"]))
    .compile()
    .unwrap();
    let first = graph.invoke_with(Chat::default(), sid("s1")).await.unwrap();
    assert_eq!(
        (first.state.summary.as_str(), first.state.scratch.as_str()),
        ("done", "tmp")
    );
    let rec = stored(&store, "s1").await.unwrap();
    assert_eq!(rec.state, json!({"summary": "done"}));
    graph.invoke_with(Chat::default(), sid("s1")).await.unwrap();
    let second_pre = seen.lock().unwrap()[1].clone();
    assert_eq!(second_pre.summary, "done", "the projected field was loaded");
    assert_eq!(second_pre.scratch, "", "scratch starts from its default");
}

#[tokio::test]
async fn explicit_projection_maps_differing_names() {
    let store = InMemorySessionStore::new();
    let graph = one_node(|s| ChatUpdate::default().value(s.value + 1))
        .sessions(SessionConfig::new(Arc::new(store.clone())).project_as("count", "value"))
        .compile()
        .unwrap();
    graph.invoke_with(Chat::default(), sid("p")).await.unwrap();
    let done = graph.invoke_with(Chat::default(), sid("p")).await.unwrap();
    assert_eq!(done.state.value, 2);
    assert_eq!(
        stored(&store, "p").await.unwrap().state,
        json!({"count": 2})
    );
}

#[tokio::test]
async fn a_projection_onto_an_undeclared_field_fails_compile() {
    let err = one_node(|_| ChatUpdate::default())
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())).project(["nope"]))
        .compile()
        .err()
        .unwrap();
    assert_eq!(err.category(), "mapping_references_undeclared_field");
}

#[tokio::test]
async fn auto_save_off_skips_the_save_at_end() {
    let store = InMemorySessionStore::new();
    let graph = one_node(|_| ChatUpdate::default().value(1))
        .sessions(SessionConfig::new(Arc::new(store.clone())).auto_save(false))
        .compile()
        .unwrap();
    let done = graph.invoke_with(Chat::default(), sid("s5")).await.unwrap();
    assert_eq!(done.state.value, 1);
    assert!(stored(&store, "s5").await.is_none());
}

/// A → B (saves the session after merging its update) → C (raises).
fn crash_after_save(store: &InMemorySessionStore, auto_save: bool) -> GraphBuilder<Chat> {
    GraphBuilder::new(Chat::default())
        .add_node("A", |_s: Arc<Chat>, _c: NodeCtx| async {
            Ok::<_, BoxError>(ChatUpdate::default().summary("A".to_string()))
        })
        .add_node("B", |s: Arc<Chat>, ctx: NodeCtx| async move {
            let update = ChatUpdate::default().summary("B".to_string());
            let version = ctx.save_session(&s.merge(update.clone())?).await?;
            assert_eq!(version, Some(1));
            Ok::<_, BoxError>(update)
        })
        .add_node("C", |_s: Arc<Chat>, _c: NodeCtx| async {
            Err::<ChatUpdate, BoxError>("boom".into())
        })
        .add_edge("A", "B")
        .add_edge("B", "C")
        .add_edge("C", END)
        .entry("A")
        .sessions(
            SessionConfig::new(Arc::new(store.clone()))
                .project(["summary"])
                .auto_save(auto_save),
        )
}

#[tokio::test]
async fn a_mid_invoke_save_survives_a_later_crash() {
    let store = InMemorySessionStore::new();
    let graph = crash_after_save(&store, true).compile().unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("s6"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "C");
    let rec = stored(&store, "s6").await.unwrap();
    assert_eq!(rec.state, json!({"summary": "B"}));
    assert_eq!(rec.version, 1, "no auto-save ran after the failure");
}

#[tokio::test]
async fn mid_invoke_saves_persist_with_auto_save_off_and_are_inert_without_an_id() {
    let store = InMemorySessionStore::new();
    let graph = GraphBuilder::new(Chat::default())
        .add_node("B", |s: Arc<Chat>, ctx: NodeCtx| async move {
            let update = ChatUpdate::default().value(s.value + 5);
            let saved = ctx.save_session(&s.merge(update.clone())?).await?;
            Ok::<_, BoxError>(update.summary(format!("{saved:?}")))
        })
        .add_edge("B", END)
        .entry("B")
        .sessions(SessionConfig::new(Arc::new(store.clone())).auto_save(false))
        .compile()
        .unwrap();
    let done = graph.invoke_with(Chat::default(), sid("m")).await.unwrap();
    assert_eq!(done.state.summary, "Some(1)");
    assert_eq!(stored(&store, "m").await.unwrap().state["value"], json!(5));
    let unbound = graph.invoke(Chat::default()).await.unwrap();
    assert_eq!(unbound.summary, "None");
    assert_eq!(store.len(), 1);
}

fn seed(store: &InMemorySessionStore, id: &str, version: &str, state: Value) {
    let store = store.clone();
    let (id, version) = (id.to_owned(), version.to_owned());
    futures::executor::block_on(async move {
        store
            .save(&id, SessionRecord::new(&id, version, state), None)
            .await
            .unwrap();
    });
}

fn counted_noop(calls: Arc<AtomicUsize>) -> GraphBuilder<Chat> {
    GraphBuilder::new(Chat::default())
        .add_node("noop", move |_s: Arc<Chat>, _c: NodeCtx| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, BoxError>(ChatUpdate::default()) }
        })
        .add_edge("noop", END)
        .entry("noop")
        .schema_version("v2")
}

#[tokio::test]
async fn a_registered_migration_runs_before_the_merge_and_saves_at_the_new_version() {
    let store = InMemorySessionStore::new();
    seed(&store, "s7", "v1", json!({"value": 1}));
    let runs = Arc::new(AtomicUsize::new(0));
    let runs2 = Arc::clone(&runs);
    let config = SessionConfig::new(Arc::new(store.clone()))
        .project(["value"])
        .migration("v1", "v2", move |mut v: Value| {
            runs2.fetch_add(1, Ordering::SeqCst);
            v["value"] = json!(v["value"].as_i64().unwrap_or(0) + 10);
            Ok(v)
        })
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = counted_noop(Arc::clone(&calls))
        .sessions(config)
        .compile()
        .unwrap();
    let done = graph.invoke_with(Chat::default(), sid("s7")).await.unwrap();
    assert_eq!(done.state.value, 11);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let rec = stored(&store, "s7").await.unwrap();
    assert_eq!(
        (rec.schema_version.as_str(), rec.state.clone()),
        ("v2", json!({"value": 11}))
    );
    // At the current version no migration runs.
    graph.invoke_with(Chat::default(), sid("s7")).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_missing_migration_fails_before_the_graph_runs_and_leaves_the_record() {
    let store = InMemorySessionStore::new();
    seed(&store, "s8", "v1", json!({"value": 7}));
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = counted_noop(Arc::clone(&calls))
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("s8"))
        .await
        .unwrap_err();
    assert_eq!(
        err.category(),
        RuntimeCategory::SessionStateMigrationMissing
    );
    assert_eq!(err.category_name(), "session_state_migration_missing");
    match err.cause().downcast_ref::<SessionError>() {
        Some(SessionError::MigrationMissing {
            from_version,
            to_version,
            registered_migrations_count,
            ..
        }) => assert_eq!(
            (
                from_version.as_str(),
                to_version.as_str(),
                *registered_migrations_count
            ),
            ("v1", "v2", 0)
        ),
        other => panic!("unexpected cause {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the node never ran");
    let rec = stored(&store, "s8").await.unwrap();
    assert_eq!(
        (rec.schema_version.as_str(), rec.state.clone()),
        ("v1", json!({"value": 7}))
    );
}

#[test]
fn a_duplicate_migration_pair_is_refused_at_registration() {
    let err = SessionConfig::new(Arc::new(InMemorySessionStore::new()))
        .migration("v1", "v2", Ok)
        .unwrap()
        .migration("v1", "v2", |mut v: Value| {
            v["value"] = json!(2);
            Ok(v)
        })
        .unwrap_err();
    assert_eq!(err.category(), "session_state_migration_chain_ambiguous");
    match err {
        SessionError::MigrationChainAmbiguous {
            from_version,
            to_version,
        } => assert_eq!(
            (from_version.as_deref(), to_version.as_deref()),
            (Some("v1"), Some("v2"))
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_diamond_of_migrations_fails_compile() {
    let config = SessionConfig::new(Arc::new(InMemorySessionStore::new()))
        .schema_version("v3")
        .migration("v1", "v2a", Ok)
        .and_then(|c| c.migration("v1", "v2b", Ok))
        .and_then(|c| c.migration("v2a", "v3", Ok))
        .and_then(|c| c.migration("v2b", "v3", Ok))
        .unwrap();
    let err = counted_noop(Arc::default())
        .sessions(config)
        .compile()
        .err()
        .unwrap();
    assert!(matches!(err, CompileError::Node { .. }));
    assert_eq!(err.category(), "session_state_migration_chain_ambiguous");
}

#[derive(Debug, thiserror::Error)]
#[error("KeyError: 'value'")]
struct KeyError;

#[tokio::test]
async fn a_raising_migration_is_migration_failed_and_stops_the_chain() {
    let store = InMemorySessionStore::new();
    seed(&store, "s13", "v1", json!({"value": 0}));
    let later = Arc::new(AtomicUsize::new(0));
    let later2 = Arc::clone(&later);
    let config = SessionConfig::new(Arc::new(store.clone()))
        .schema_version("v3")
        .migration("v1", "v2", |_| Err(Box::new(KeyError) as BoxError))
        .unwrap()
        .migration("v2", "v3", move |v| {
            later2.fetch_add(1, Ordering::SeqCst);
            Ok(v)
        })
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = counted_noop(Arc::clone(&calls))
        .sessions(config)
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("s13"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SessionStateMigrationFailed);
    let links = cause_chain(err.cause());
    assert!(
        links.iter().any(|l| l.message.contains("KeyError")),
        "{links:?}"
    );
    match err.cause().downcast_ref::<SessionError>() {
        Some(SessionError::MigrationFailed {
            from_version,
            to_version,
            source,
        }) => {
            assert_eq!((from_version.as_str(), to_version.as_str()), ("v1", "v2"));
            assert!(source.is::<KeyError>());
        }
        other => panic!("unexpected cause {other:?}"),
    }
    assert_eq!(later.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

state! {
    /// The subgraph's own schema.
    #[derive(Default, PartialEq)]
    pub struct Inner => InnerUpdate {
        /// Projected in.
        pub inner_input: String,
        /// Projected out.
        pub inner_output: String,
    }
}

#[tokio::test]
async fn a_subgraph_sees_only_its_projection_and_never_saves_the_session() {
    let store = Counting::default();
    seed(
        &store.inner,
        "s10",
        "unversioned",
        json!({"summary": "outer-data"}),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let inner = GraphBuilder::new(Inner::default())
        .add_node("inner_node", move |s: Arc<Inner>, ctx: NodeCtx| {
            seen2.lock().unwrap().push((*s).clone());
            async move {
                // The session belongs to the outermost graph (§9.1).
                let refused = ctx.save_session(&*s).await.unwrap_err();
                assert_eq!(refused.category(), "session_save_failed");
                assert_eq!(ctx.session_id(), Some("s10"), "the id still propagates");
                Ok::<_, BoxError>(InnerUpdate::default().inner_output("inner-done".to_string()))
            }
        })
        .add_edge("inner_node", END)
        .entry("inner_node")
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let outer = GraphBuilder::new(Chat::default())
        .add_node(
            "dispatch",
            SubgraphNode::<Chat, Inner>::new(inner)
                .inputs([("inner_input", "summary")])
                .outputs([("scratch", "inner_output")]),
        )
        .add_edge("dispatch", END)
        .entry("dispatch")
        .sessions(SessionConfig::new(Arc::new(store.clone())).project(["summary", "scratch"]))
        .compile()
        .unwrap();
    let done = outer
        .invoke_with(Chat::default(), sid("s10"))
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [Inner {
            inner_input: "outer-data".into(),
            inner_output: String::new()
        }]
    );
    assert_eq!(
        (done.state.summary.as_str(), done.state.scratch.as_str()),
        ("outer-data", "inner-done")
    );
    assert_eq!(
        (
            store.loads.load(Ordering::SeqCst),
            store.saves.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    let rec = stored(&store.inner, "s10").await.unwrap();
    assert_eq!(
        rec.state,
        json!({"summary": "outer-data", "scratch": "inner-done"})
    );
}

#[tokio::test]
async fn a_failed_auto_save_reports_after_completion_with_the_final_state() {
    let store = Counting {
        fail_saves: true,
        ..Counting::default()
    };
    let graph = one_node(|_| ChatUpdate::default().value(3))
        .sessions(SessionConfig::new(Arc::new(store)))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("f"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SessionSaveFailed);
    assert_eq!(
        err.recoverable_state().value,
        3,
        "the run's result is not rolled back"
    );
    assert_eq!(category_of(err.cause()), Some("session_save_failed"));
}

#[tokio::test]
async fn a_failed_load_stops_the_invocation_before_any_node() {
    let store = Counting {
        fail_loads: true,
        ..Counting::default()
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = counted_noop(Arc::clone(&calls))
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("l"))
        .await
        .unwrap_err();
    assert_eq!(err.category_name(), "session_load_failed");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(store.saves.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_record_that_does_not_fit_the_state_is_a_load_failure() {
    let store = InMemorySessionStore::new();
    seed(
        &store,
        "bad",
        "unversioned",
        json!({"value": "not a number"}),
    );
    let graph = one_node(|_| ChatUpdate::default())
        .sessions(SessionConfig::new(Arc::new(store)))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Chat::default(), sid("bad"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SessionLoadFailed);
}

#[tokio::test]
async fn optimistic_concurrency_turns_a_lost_update_into_a_write_conflict() {
    let store = InMemorySessionStore::new();
    let (gate_in, gate_out) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    let (entered, release) = (Arc::clone(&gate_in), Arc::clone(&gate_out));
    let slow = GraphBuilder::new(Chat::default())
        .add_node("slow", move |s: Arc<Chat>, _c: NodeCtx| {
            let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
            async move {
                entered.notify_one();
                release.notified().await;
                Ok::<_, BoxError>(ChatUpdate::default().value(s.value + 1))
            }
        })
        .add_edge("slow", END)
        .entry("slow")
        .sessions(SessionConfig::new(Arc::new(store.clone())).optimistic_concurrency(true))
        .compile()
        .unwrap();
    let fast = one_node(|s| ChatUpdate::default().value(s.value + 100))
        .sessions(SessionConfig::new(Arc::new(store.clone())).optimistic_concurrency(true))
        .compile()
        .unwrap();
    let running = tokio::spawn({
        let slow = slow.clone();
        async move { slow.invoke_with(Chat::default(), sid("c")).await }
    });
    gate_in.notified().await;
    // A concurrent invoke saves first (the record did not exist when both loaded).
    assert_eq!(
        fast.invoke_with(Chat::default(), sid("c"))
            .await
            .unwrap()
            .state
            .value,
        100
    );
    gate_out.notify_one();
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::SessionWriteConflict);
    match err.cause().downcast_ref::<SessionError>() {
        Some(SessionError::WriteConflict {
            expected_version,
            actual_version,
            ..
        }) => assert_eq!((*expected_version, *actual_version), (0, Some(1))),
        other => panic!("unexpected cause {other:?}"),
    }
    assert_eq!(
        stored(&store, "c").await.unwrap().state["value"],
        json!(100)
    );
    // Without the policy the same race is last-write-wins.
    let lww = one_node(|s| ChatUpdate::default().value(s.value + 1))
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    lww.invoke_with(Chat::default(), sid("c")).await.unwrap();
    // Sequential optimistic invokes never conflict.
    fast.invoke_with(Chat::default(), sid("c")).await.unwrap();
    assert_eq!(
        stored(&store, "c").await.unwrap().state["value"],
        json!(201)
    );
}

#[tokio::test]
async fn the_in_memory_store_satisfies_the_protocol() {
    let store = InMemorySessionStore::new();
    assert!(store.load("a").await.unwrap().is_none());
    store.delete("a").await.unwrap(); // idempotent
    let t0 = std::time::SystemTime::now();
    let v = store
        .save("a", SessionRecord::new("a", "v1", json!({"x": 1})), Some(0))
        .await
        .unwrap();
    assert_eq!(v, 1);
    store
        .save("b", SessionRecord::new("b", "v2", json!({})), None)
        .await
        .unwrap();
    let stale = store
        .save("a", SessionRecord::new("a", "v1", json!({"x": 2})), Some(0))
        .await
        .unwrap_err();
    assert_eq!(category_of(&*stale), Some("session_write_conflict"));
    assert_eq!(
        store
            .save("a", SessionRecord::new("a", "v1", json!({"x": 2})), Some(1))
            .await
            .unwrap(),
        2
    );
    let a = store.load("a").await.unwrap().unwrap();
    assert!(a.created_at <= a.updated_at && a.created_at >= t0);
    let all = store.list(None).await.unwrap();
    assert_eq!(
        all.iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["b", "a"]
    );
    let v2 = SessionFilter::new().schema_version("v2");
    assert_eq!(store.list(Some(&v2)).await.unwrap()[0].session_id, "b");
    let later = SessionFilter::new().updated_after(a.updated_at);
    assert_eq!(store.list(Some(&later)).await.unwrap().len(), 1);
    let future =
        SessionFilter::new().created_after(a.updated_at + std::time::Duration::from_secs(60));
    assert!(store.list(Some(&future)).await.unwrap().is_empty());
    store.delete("a").await.unwrap();
    assert!(store.load("a").await.unwrap().is_none());
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn the_session_id_reaches_nodes_and_full_state_sessions_default_to_the_graph_version() {
    let store = InMemorySessionStore::new();
    let graph = GraphBuilder::new(Chat::default())
        .add_node("n", |_s: Arc<Chat>, ctx: NodeCtx| async move {
            Ok::<_, BoxError>(
                ChatUpdate::default().summary(ctx.session_id().unwrap_or("-").to_owned()),
            )
        })
        .add_edge("n", END)
        .entry("n")
        .schema_version("g7")
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let done = graph
        .invoke_with(Chat::default(), sid("s12"))
        .await
        .unwrap();
    assert_eq!(done.state.summary, "s12");
    let rec = stored(&store, "s12").await.unwrap();
    assert_eq!(rec.schema_version, "g7");
    assert_eq!(rec.state, done.state.to_json());
}
