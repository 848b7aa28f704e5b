//! Sessions lifecycle (spec sessions §3, §4, §6, §9): resume across invokes,
//! opt-in per invoke, projection, auto-save opt-out, mid-invoke save, subgraph and
//! checkpoint composition.

use crate::session_support::*;

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
            Ok::<_, NodeError>(ChatUpdate::default().summary("A".to_string()))
        })
        .add_node("B", |s: Arc<Chat>, ctx: NodeCtx| async move {
            let update = ChatUpdate::default().summary("B".to_string());
            let version = ctx.save_session(&s.merge(update.clone())?).await?;
            assert_eq!(version, Some(1));
            Ok::<_, NodeError>(update)
        })
        .add_node("C", |_s: Arc<Chat>, _c: NodeCtx| async {
            Err::<ChatUpdate, NodeError>("boom".into())
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
    let err = session_err(&graph, "s6").await;
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
            Ok::<_, NodeError>(update.summary(format!("{saved:?}")))
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
                Ok::<_, NodeError>(InnerUpdate::default().inner_output("inner-done".to_string()))
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
    let done = in_session(&outer, "s10").await;
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
async fn the_session_id_reaches_nodes_and_full_state_sessions_default_to_the_graph_version() {
    let store = InMemorySessionStore::new();
    let graph = GraphBuilder::new(Chat::default())
        .add_node("n", |_s: Arc<Chat>, ctx: NodeCtx| async move {
            Ok::<_, NodeError>(
                ChatUpdate::default().summary(ctx.session_id().unwrap_or("-").to_owned()),
            )
        })
        .add_edge("n", END)
        .entry("n")
        .schema_version("g7")
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let done = in_session(&graph, "s12").await;
    assert_eq!(done.state.summary, "s12");
    let rec = stored(&store, "s12").await.unwrap();
    assert_eq!(rec.schema_version, "g7");
    assert_eq!(rec.state, done.state.to_json());
}

#[tokio::test]
async fn checkpointing_and_sessions_compose_and_a_resume_does_not_merge_the_session_twice() {
    let sessions = InMemorySessionStore::new();
    let checkpoints = openarmature_graph::checkpoint::InMemoryCheckpointer::new();
    let graph = one_node(|_| ChatUpdate::default().history(vec!["x".into()]))
        .checkpointer(Arc::new(checkpoints))
        .sessions(SessionConfig::new(Arc::new(sessions.clone())).project(["history"]))
        .compile()
        .unwrap();
    graph.invoke_with(Chat::default(), sid("k")).await.unwrap();
    let second = graph.invoke_with(Chat::default(), sid("k")).await.unwrap();
    assert_eq!(second.state.history, ["x", "x"]);
    // Resuming the finished second invocation restores its checkpointed state (which
    // already holds the loaded session) and saves it again unchanged.
    let resumed = graph
        .invoke_with(
            Chat::default(),
            sid("k").resume_invocation(&second.invocation_id),
        )
        .await
        .unwrap();
    assert_eq!(resumed.state.history, ["x", "x"]);
    let rec = stored(&sessions, "k").await.unwrap();
    assert_eq!(
        (rec.state.clone(), rec.version),
        (json!({"history": ["x", "x"]}), 3)
    );
}

#[tokio::test]
async fn a_preloaded_session_is_not_loaded_again_and_keeps_the_callers_order() {
    let counting = Counting::default();
    let graph = one_node(|_| ChatUpdate::default().history(vec!["reply".into()]))
        .sessions(SessionConfig::new(Arc::new(counting.clone())).optimistic_concurrency(true))
        .compile()
        .unwrap();
    graph.invoke_with(Chat::default(), sid("s")).await.unwrap();
    let loads = counting.loads.load(Ordering::SeqCst);

    // The caller loads, appends after the history, and invokes with the load.
    let (loaded, session) = graph.load_session("s", Chat::default()).await.unwrap();
    assert_eq!(loaded.history, ["reply"]);
    assert_eq!(session.version(), Some(1));
    let with_input = loaded
        .merge(ChatUpdate::default().history(vec!["input".into()]))
        .unwrap();
    let done = graph
        .invoke_with(
            with_input,
            InvokeOptions::default().loaded_session(session.clone()),
        )
        .await
        .unwrap();
    assert_eq!(done.state.history, ["reply", "input", "reply"]);
    assert_eq!(
        counting.loads.load(Ordering::SeqCst),
        loads + 1,
        "the invocation loaded the session again"
    );
    let rec = stored(&counting.inner, "s").await.unwrap();
    assert_eq!(rec.version, 2);

    // The load's version is the optimistic baseline: a stale load cannot overwrite.
    let stale = graph
        .invoke_with(
            Chat::default(),
            InvokeOptions::default().loaded_session(session),
        )
        .await
        .unwrap_err();
    assert_eq!(stale.category_name(), "session_write_conflict");
    // A failed load is the invoke entry's error.
    let failing = Counting {
        fail_loads: true,
        ..Counting::default()
    };
    let graph = one_node(|_| ChatUpdate::default())
        .sessions(SessionConfig::new(Arc::new(failing)))
        .compile()
        .unwrap();
    let err = graph.load_session("s", Chat::default()).await.unwrap_err();
    assert_eq!(err.category(), "session_load_failed");
}
