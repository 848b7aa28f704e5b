//! Session schema migration and load failures (spec sessions §7, §10): a chain
//! applied before the merge, missing / ambiguous / raising migrations, unreadable
//! records; the graph never runs when loading fails.

use crate::session_support::*;

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
    let graph = counted(&calls, config);
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
    let graph = counted(&calls, SessionConfig::new(Arc::new(store.clone())));
    let err = session_err(&graph, "s8").await;
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
    let graph = counted(&calls, config);
    let err = session_err(&graph, "s13").await;
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

#[tokio::test]
async fn a_failed_load_stops_the_invocation_before_any_node() {
    let store = Counting {
        fail_loads: true,
        ..Counting::default()
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = counted(&calls, SessionConfig::new(Arc::new(store.clone())));
    let err = session_err(&graph, "l").await;
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
    let err = session_err(&graph, "bad").await;
    assert_eq!(err.category(), RuntimeCategory::SessionLoadFailed);
}
