//! The SessionStore protocol and concurrency (spec sessions §5, §8, §10): the
//! in-memory store, optimistic concurrency, a failed auto-save reported after
//! completion.

use crate::session_support::*;

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
                Ok::<_, NodeError>(ChatUpdate::default().value(s.value + 1))
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
    assert_eq!(
        category_of(&*stale).map(|c| c.as_str()),
        Some("session_write_conflict")
    );
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
async fn a_failed_auto_save_reports_after_completion_with_the_final_state() {
    let store = Counting {
        fail_saves: true,
        ..Counting::default()
    };
    let graph = one_node(|_| ChatUpdate::default().value(3))
        .sessions(SessionConfig::new(Arc::new(store)))
        .compile()
        .unwrap();
    let err = session_err(&graph, "f").await;
    assert_eq!(err.category(), RuntimeCategory::SessionSaveFailed);
    assert_eq!(
        err.recoverable_state().value,
        3,
        "the run's result is not rolled back"
    );
    assert_eq!(
        category_of(err.cause()).map(|c| c.as_str()),
        Some("session_save_failed")
    );
}
