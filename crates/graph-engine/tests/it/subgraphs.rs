//! Subgraphs with typed parent and typed child states of different types:
//! projection forms, event lineage, observer scoping, failures, compile checks.

use std::sync::{Arc, Mutex};

use openarmature_graph::{
    observer_fn, state, CompileError, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx,
    NodeError, NodeEvent, ObserverEvent, Phase, Registration, RuntimeCategory, SubgraphFailure,
    Target, END,
};
use serde_json::json;

use crate::observe::collector;

state! {
    /// The outer pipeline.
    #[derive(Default, PartialEq)]
    pub struct Parent => ParentUpdate {
        /// The topic.
        pub topic: String,
        /// A summary written back from the subgraph.
        pub summary: String,
        /// Visited nodes.
        pub log: Vec<String> => append,
        /// Only in the parent.
        pub count: i64,
    }
}

state! {
    /// The inner pipeline (a different type).
    #[derive(PartialEq)]
    pub struct Child => ChildUpdate {
        /// Same name as the parent's.
        pub topic: String,
        /// Renamed input.
        pub text: String,
        /// Renamed output.
        pub result: String,
        /// Same name as the parent's (append in both).
        pub log: Vec<String> => append,
        /// Only in the child.
        pub scratch: i64,
        /// Another list, for the round-trip checks.
        pub items: Vec<String> => append,
        /// Another list, for the round-trip checks.
        pub notes: Vec<String> => append,
    }
}

fn child_defaults() -> Child {
    Child {
        topic: "child-default".into(),
        text: "text-default".into(),
        result: String::new(),
        log: vec![],
        scratch: 0,
        items: vec![],
        notes: vec![],
    }
}

type Seen = Arc<Mutex<Vec<Child>>>;

/// work1 -> work2 -> END; records the state each inner node received.
fn child_graph(seen: Seen) -> GraphBuilder<Child> {
    let seen2 = Arc::clone(&seen);
    GraphBuilder::new(child_defaults())
        .add_node("work1", move |s: Arc<Child>, _c: NodeCtx| {
            seen.lock().unwrap().push((*s).clone());
            let update = ChildUpdate::default()
                .log(vec!["work1".into()])
                .scratch(s.scratch + 1)
                .result(format!("topic={} text={}", s.topic, s.text));
            futures::future::ready(Ok::<_, NodeError>(update))
        })
        .add_node("work2", move |s: Arc<Child>, _c: NodeCtx| {
            seen2.lock().unwrap().push((*s).clone());
            let update = ChildUpdate::default()
                .log(vec!["work2".into()])
                .topic(format!("{}+child", s.topic));
            futures::future::ready(Ok::<_, NodeError>(update))
        })
        .add_edge("work1", "work2")
        .add_edge("work2", END)
        .entry("work1")
}

fn prep(_s: Arc<Parent>, _c: NodeCtx) -> futures::future::Ready<Result<ParentUpdate, NodeError>> {
    futures::future::ready(Ok(ParentUpdate::default()
        .log(vec!["prep".into()])
        .count(1)))
}

fn finish(_s: Arc<Parent>, _c: NodeCtx) -> futures::future::Ready<Result<ParentUpdate, NodeError>> {
    futures::future::ready(Ok(ParentUpdate::default().log(vec!["finish".into()])))
}

/// prep -> sub -> finish -> END.
fn parent_graph(sub: openarmature_graph::SubgraphNode<Parent, Child>) -> GraphBuilder<Parent> {
    GraphBuilder::new(Parent::default())
        .add_node("prep", prep)
        .add_node("sub", sub)
        .add_node("finish", finish)
        .add_edge("prep", "sub")
        .add_edge("sub", "finish")
        .add_edge("finish", END)
        .entry("prep")
}

fn initial() -> Parent {
    Parent {
        topic: "rust".into(),
        summary: "none".into(),
        log: vec!["start".into()],
        count: 0,
    }
}

fn labeller(label: &'static str, log: Arc<Mutex<Vec<String>>>) -> Registration {
    Registration::new(
        label,
        observer_fn(move |e: Arc<ObserverEvent>| {
            let log = Arc::clone(&log);
            async move {
                let node = e
                    .as_node()
                    .map(|n| n.node_name.to_string())
                    .unwrap_or_default();
                log.lock().unwrap().push(format!("{label}:{node}"));
                Ok(())
            }
        }),
    )
}

fn sub(child: CompiledGraph<Child>) -> openarmature_graph::SubgraphNode<Parent, Child> {
    openarmature_graph::SubgraphNode::new(child)
}

#[tokio::test]
async fn default_projection_nothing_in_and_field_name_matching_out() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::clone(&seen)).compile().unwrap();
    let graph = parent_graph(sub(child)).compile().unwrap();
    let out = graph.invoke(initial()).await.unwrap();

    // Nothing projected in: the child started from its own defaults.
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], child_defaults());
    // Same-name fields (topic, log) merged out via the parent's reducers; child-only
    // fields discarded; parent-only fields untouched.
    assert_eq!(out.topic, "child-default+child");
    assert_eq!(out.log, vec!["start", "prep", "work1", "work2", "finish"]);
    assert_eq!(out.summary, "none");
    assert_eq!(out.count, 1);
}

#[tokio::test]
async fn explicit_inputs_and_outputs_rename_and_replace_name_matching() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::clone(&seen)).compile().unwrap();
    let node = sub(child)
        .inputs([("text", "topic")])
        .outputs([("summary", "result")]);
    let graph = parent_graph(node).compile().unwrap();
    assert!(graph.warnings().is_empty());
    let out = graph.invoke(initial()).await.unwrap();

    let seen = seen.lock().unwrap();
    // `text` came from the parent's topic; `topic` was NOT filled by name matching.
    assert_eq!(seen[0].text, "rust");
    assert_eq!(seen[0].topic, "child-default");
    // Only `summary <- result` crosses out: no name-matching fallback for topic/log.
    assert_eq!(out.summary, "topic=child-default text=rust");
    assert_eq!(out.topic, "rust");
    assert_eq!(out.log, vec!["start", "prep", "finish"]);
}

#[tokio::test]
async fn inputs_only_keeps_name_matching_out() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::clone(&seen)).compile().unwrap();
    let graph = parent_graph(sub(child).inputs([("text", "summary")]))
        .compile()
        .unwrap();
    let out = graph.invoke(initial()).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0].text, "none");
    assert_eq!(out.topic, "child-default+child");
    assert_eq!(out.log, vec!["start", "prep", "work1", "work2", "finish"]);
}

#[tokio::test]
async fn declared_sets_are_a_complete_boundary() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::clone(&seen)).compile().unwrap();
    let graph = parent_graph(sub(child).projects_in(["topic"]).projects_out(["log"]))
        .compile()
        .unwrap();
    let out = graph.invoke(initial()).await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].topic, "rust");
    // log was not projected in: the child's log started from its default.
    assert!(seen[0].log.is_empty());
    // Only log crosses out (append in the parent); topic does not.
    assert_eq!(out.topic, "rust");
    assert_eq!(out.log, vec!["start", "prep", "work1", "work2", "finish"]);
}

#[tokio::test]
async fn projects_in_alone_projects_nothing_out() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::clone(&seen)).compile().unwrap();
    let graph = parent_graph(sub(child).projects_in(["topic"]))
        .compile()
        .unwrap();
    let out = graph.invoke(initial()).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0].topic, "rust");
    assert_eq!(out.topic, "rust");
    assert_eq!(out.log, vec!["start", "prep", "finish"]);
}

#[tokio::test]
async fn inner_events_carry_namespace_and_parent_states_and_wrapper_emits_none() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::new(Mutex::new(Vec::new())))
        .compile()
        .unwrap();
    let graph = parent_graph(sub(child))
        .observer(collector("all", &events))
        .compile()
        .unwrap();
    graph.invoke(initial()).await.unwrap();
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let shape: Vec<(String, Vec<String>, u64, &str)> = events
        .iter()
        .map(|e| {
            (
                e.node_name.to_string(),
                e.namespace.to_vec(),
                e.step,
                e.phase.as_str(),
            )
        })
        .collect();
    let ns = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shape,
        vec![
            ("prep".into(), ns(&["prep"]), 0, "started"),
            ("prep".into(), ns(&["prep"]), 0, "completed"),
            ("work1".into(), ns(&["sub", "work1"]), 1, "started"),
            ("work1".into(), ns(&["sub", "work1"]), 1, "completed"),
            ("work2".into(), ns(&["sub", "work2"]), 2, "started"),
            ("work2".into(), ns(&["sub", "work2"]), 2, "completed"),
            ("finish".into(), ns(&["finish"]), 3, "started"),
            ("finish".into(), ns(&["finish"]), 3, "completed"),
        ]
    );
    assert!(events.iter().all(|e| &*e.node_name != "sub"));
    for e in events.iter() {
        assert_eq!(e.parent_states.len(), e.namespace.len() - 1);
    }
    // Inner events: parent_states[0] is the parent's state at subgraph entry
    // (after prep), typed as the parent's own schema; pre_state is the child's.
    for e in events.iter().filter(|e| e.namespace.len() == 2) {
        let parent = e.parent_states[0]
            .as_any()
            .downcast_ref::<Parent>()
            .expect("parent snapshot is a Parent");
        assert_eq!(parent.log, vec!["start", "prep"]);
        assert_eq!(parent.count, 1);
        assert!(e.pre_state.as_any().downcast_ref::<Child>().is_some());
    }
    let work2_done = &events[5];
    assert_eq!(
        work2_done.post_state.as_ref().unwrap().to_json()["log"],
        json!(["work1", "work2"])
    );
}

#[tokio::test]
async fn subgraph_attached_observer_sees_only_inner_events_in_spec_order() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::new(Mutex::new(Vec::new())))
        .observer(labeller("child", Arc::clone(&order)))
        .compile()
        .unwrap();
    let graph = parent_graph(sub(child))
        .observer(labeller("parent", Arc::clone(&order)))
        .compile()
        .unwrap();
    graph
        .invoke_with(
            initial(),
            InvokeOptions::default().observer(labeller("inv", Arc::clone(&order))),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let order = order.lock().unwrap().clone();
    let child_seen: Vec<&String> = order.iter().filter(|l| l.starts_with("child:")).collect();
    assert_eq!(
        child_seen,
        ["child:work1", "child:work1", "child:work2", "child:work2"]
    );
    let expected: Vec<String> = [
        "parent:prep",
        "inv:prep",
        "parent:prep",
        "inv:prep",
        "parent:work1",
        "child:work1",
        "inv:work1",
        "parent:work1",
        "child:work1",
        "inv:work1",
        "parent:work2",
        "child:work2",
        "inv:work2",
        "parent:work2",
        "child:work2",
        "inv:work2",
        "parent:finish",
        "inv:finish",
        "parent:finish",
        "inv:finish",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(order, expected);
}

#[tokio::test]
async fn subgraph_run_directly_has_top_level_lineage() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let child = child_graph(Arc::new(Mutex::new(Vec::new())))
        .observer(collector("c", &events))
        .compile()
        .unwrap();
    let out = child.invoke(child_defaults()).await.unwrap();
    assert_eq!(out.log, vec!["work1", "work2"]);
    child.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 4);
    assert_eq!(&*events[0].namespace, ["work1".to_owned()]);
    assert!(events.iter().all(|e| e.parent_states.is_empty()));
}

fn failing_child(category_kind: &'static str) -> CompiledGraph<Child> {
    let b = GraphBuilder::new(child_defaults()).add_node(
        "work1",
        |_s: Arc<Child>, _c: NodeCtx| async move {
            Ok(ChildUpdate::default().log(vec!["work1".into()]))
        },
    );
    let b = match category_kind {
        "node" => b
            .add_node("work2", |_s: Arc<Child>, _c: NodeCtx| async move {
                Err::<ChildUpdate, NodeError>("inner boom".into())
            })
            .add_edge("work1", "work2")
            .add_edge("work2", END),
        _ => b
            .add_node("work2", |_s: Arc<Child>, _c: NodeCtx| async move {
                Ok(ChildUpdate::default())
            })
            .add_conditional_edge(
                "work1",
                |_s: &Child| Ok(Target::from("nowhere")),
                Some(vec![Target::from("work2")]),
            )
            .add_edge("work2", END),
    };
    b.entry("work1").compile().unwrap()
}

#[tokio::test]
async fn inner_node_failure_surfaces_with_inner_category_namespace_and_parent_state() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = parent_graph(sub(failing_child("node")))
        .observer(collector("all", &events))
        .compile()
        .unwrap();
    let err = graph.invoke(initial()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "sub");
    assert_eq!(err.namespace(), ["sub".to_owned(), "work2".to_owned()]);
    assert_eq!(err.original_message(), "inner boom");
    let failure = err
        .cause()
        .downcast_ref::<SubgraphFailure>()
        .expect("cause is a SubgraphFailure");
    assert_eq!(failure.category(), RuntimeCategory::NodeException);
    assert_eq!(failure.namespace(), ["sub".to_owned(), "work2".to_owned()]);
    // The parent's recoverable state: the state the subgraph node received.
    assert_eq!(
        err.recoverable_state(),
        &Parent {
            topic: "rust".into(),
            summary: "none".into(),
            log: vec!["start".into(), "prep".into()],
            count: 1,
        }
    );
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let last = events.last().unwrap();
    assert_eq!(&*last.namespace, ["sub".to_owned(), "work2".to_owned()]);
    assert_eq!(last.phase, Phase::Completed);
    assert_eq!(last.error.as_ref().unwrap().category, "node_exception");
    assert!(events
        .iter()
        .all(|e| &*e.node_name != "sub" && &*e.node_name != "finish"));
}

#[tokio::test]
async fn inner_routing_error_keeps_its_category_in_the_parent() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = parent_graph(sub(failing_child("routing")))
        .observer(collector("all", &events))
        .compile()
        .unwrap();
    let err = graph.invoke(initial()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::RoutingError);
    assert_eq!(err.namespace(), ["sub".to_owned(), "work1".to_owned()]);
    assert_eq!(err.recoverable_state().log, vec!["start", "prep"]);
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.error.as_ref().unwrap().category, "routing_error");
}

#[tokio::test]
async fn inner_node_ctx_namespace_is_the_full_path() {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let p = Arc::clone(&paths);
    let child = GraphBuilder::new(child_defaults())
        .add_node("inner", move |_s: Arc<Child>, ctx: NodeCtx| {
            p.lock().unwrap().push((
                ctx.node_name().to_owned(),
                ctx.namespace().to_vec(),
                ctx.step(),
            ));
            futures::future::ready(Ok::<_, NodeError>(ChildUpdate::default()))
        })
        .entry("inner")
        .compile()
        .unwrap();
    let graph = parent_graph(sub(child)).compile().unwrap();
    graph.invoke(initial()).await.unwrap();
    assert_eq!(
        *paths.lock().unwrap(),
        vec![(
            "inner".to_owned(),
            vec!["sub".to_owned(), "inner".to_owned()],
            1
        )]
    );
}

#[tokio::test]
async fn nested_subgraphs_extend_namespace_and_parent_states() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let innermost = GraphBuilder::new(child_defaults())
        .add_node("leaf", |_s: Arc<Child>, _c: NodeCtx| async move {
            Ok(ChildUpdate::default().log(vec!["leaf".into()]))
        })
        .entry("leaf")
        .compile()
        .unwrap();
    let middle = GraphBuilder::new(child_defaults())
        .add_node(
            "inner_sub",
            openarmature_graph::SubgraphNode::<Child, Child>::new(innermost),
        )
        .entry("inner_sub")
        .compile()
        .unwrap();
    let graph = parent_graph(sub(middle))
        .observer(collector("all", &events))
        .compile()
        .unwrap();
    let out = graph.invoke(initial()).await.unwrap();
    assert_eq!(out.log, vec!["start", "prep", "leaf", "finish"]);
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let leaf: Vec<&NodeEvent> = events.iter().filter(|e| &*e.node_name == "leaf").collect();
    assert_eq!(leaf.len(), 2);
    assert_eq!(
        leaf[0].namespace.to_vec(),
        vec!["sub".to_owned(), "inner_sub".to_owned(), "leaf".to_owned()]
    );
    assert_eq!(leaf[0].parent_states.len(), 2);
    assert!(leaf[0].parent_states[0].as_any().is::<Parent>());
    assert!(leaf[0].parent_states[1].as_any().is::<Child>());
    assert_eq!(leaf[0].step, 1);
}

// ---- compile-time checks of projections ----

fn compile_with(
    node: openarmature_graph::SubgraphNode<Parent, Child>,
) -> Result<CompiledGraph<Parent>, CompileError> {
    parent_graph(node).compile()
}

fn child() -> CompiledGraph<Child> {
    child_graph(Arc::new(Mutex::new(Vec::new())))
        .compile()
        .unwrap()
}

fn assert_undeclared(result: Result<CompiledGraph<Parent>, CompileError>, side: &str, field: &str) {
    match result.err().expect("compile must fail") {
        CompileError::MappingReferencesUndeclaredField {
            node,
            side: s,
            field: f,
        } => {
            assert_eq!(node, "sub");
            assert_eq!(s, side);
            assert_eq!(f, field);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn inputs_naming_undeclared_fields_fail_compilation() {
    assert_undeclared(
        compile_with(sub(child()).inputs([("text", "ghost")])),
        "parent",
        "ghost",
    );
    assert_undeclared(
        compile_with(sub(child()).inputs([("ghost", "topic")])),
        "subgraph",
        "ghost",
    );
}

#[test]
fn outputs_naming_undeclared_fields_fail_compilation() {
    assert_undeclared(
        compile_with(sub(child()).outputs([("ghost", "result")])),
        "parent",
        "ghost",
    );
    assert_undeclared(
        compile_with(sub(child()).outputs([("summary", "ghost")])),
        "subgraph",
        "ghost",
    );
}

#[test]
fn declared_sets_naming_undeclared_fields_fail_compilation() {
    // `count` exists only in the parent, `scratch` only in the child.
    assert_undeclared(
        compile_with(sub(child()).projects_in(["scratch"])),
        "parent",
        "scratch",
    );
    assert_undeclared(
        compile_with(sub(child()).projects_in(["count"])),
        "subgraph",
        "count",
    );
    assert_undeclared(
        compile_with(sub(child()).projects_out(["count"])),
        "subgraph",
        "count",
    );
    let err = compile_with(sub(child()).projects_in(["ghost"]))
        .err()
        .unwrap();
    assert_eq!(err.category(), "mapping_references_undeclared_field");
}

#[test]
fn mixing_declared_sets_and_maps_is_conflicting_projection_forms() {
    for node in [
        sub(child())
            .projects_in(["topic"])
            .inputs([("text", "topic")]),
        sub(child())
            .projects_out(["log"])
            .outputs([("summary", "result")]),
        sub(child())
            .projects_in(["topic"])
            .outputs([("summary", "result")]),
    ] {
        let err = compile_with(node).err().expect("compile must fail");
        assert_eq!(err.category(), "conflicting_projection_forms");
        assert_eq!(
            err,
            CompileError::ConflictingProjectionForms { node: "sub".into() }
        );
    }
}

fn round_trip_warnings(
    node: openarmature_graph::SubgraphNode<Parent, Child>,
) -> Vec<(String, String, String)> {
    compile_with(node)
        .unwrap()
        .warnings()
        .iter()
        .map(|w| {
            assert_eq!(w.category(), "projection_reducer_round_trip");
            match w {
                openarmature_graph::CompileWarning::ProjectionReducerRoundTrip {
                    node,
                    field,
                    reducer,
                } => (node.clone(), field.clone(), reducer.clone()),
                other => panic!("unexpected {other:?}"),
            }
        })
        .collect()
}

#[test]
fn declared_sets_round_trip_into_append_warns() {
    assert_eq!(
        round_trip_warnings(sub(child()).projects_in(["log"]).projects_out(["log"])),
        vec![("sub".to_owned(), "log".to_owned(), "append".to_owned())]
    );
}

#[test]
fn declared_sets_round_trip_into_last_write_wins_does_not_warn() {
    assert!(
        round_trip_warnings(sub(child()).projects_in(["topic"]).projects_out(["topic"])).is_empty()
    );
}

#[test]
fn declared_sets_without_round_trip_do_not_warn() {
    assert!(round_trip_warnings(sub(child()).projects_in(["log"])).is_empty());
    assert!(round_trip_warnings(sub(child()).projects_out(["log"])).is_empty());
}

#[test]
fn inputs_only_same_name_into_append_warns() {
    // outputs absent: field-name matching merges `log` straight back out.
    assert_eq!(
        round_trip_warnings(sub(child()).inputs([("log", "log")])),
        vec![("sub".to_owned(), "log".to_owned(), "append".to_owned())]
    );
}

#[test]
fn explicit_maps_round_trip_into_append_warns() {
    assert_eq!(
        round_trip_warnings(
            sub(child())
                .inputs([("items", "log")])
                .outputs([("log", "items")])
        )
        .len(),
        1
    );
}

#[test]
fn different_subgraph_fields_do_not_warn() {
    assert!(round_trip_warnings(
        sub(child())
            .inputs([("items", "log")])
            .outputs([("log", "notes")])
    )
    .is_empty());
    // inputs into a differently named field, outputs left at name matching:
    // the child's own `log` goes out, not `items`.
    assert!(round_trip_warnings(sub(child()).inputs([("items", "log")])).is_empty());
}

#[test]
fn default_projection_does_not_warn() {
    assert!(round_trip_warnings(sub(child())).is_empty());
}

#[tokio::test]
async fn subgraph_observer_attached_during_a_run_waits_for_the_next_invocation() {
    // graph-engine §6: "Any change to the set of registered observers during a graph
    // run MUST NOT take effect until the next invocation".
    let log = Arc::new(Mutex::new(Vec::new()));
    let child = child();
    let child_handle = child.clone();
    let late = Arc::clone(&log);
    let attached = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let graph = GraphBuilder::new(Parent::default())
        .add_node("prep", move |_s: Arc<Parent>, _c: NodeCtx| {
            if !attached.swap(true, std::sync::atomic::Ordering::SeqCst) {
                child_handle.attach_observer(labeller("late", Arc::clone(&late)));
            }
            futures::future::ready(Ok::<_, NodeError>(ParentUpdate::default()))
        })
        .add_node("sub", sub(child))
        .add_edge("prep", "sub")
        .entry("prep")
        .compile()
        .unwrap();
    graph.invoke(initial()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(
        log.lock().unwrap().len(),
        0,
        "observer attached mid-run must not see the in-flight invocation"
    );
    graph.invoke(initial()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(log.lock().unwrap().len(), 4);
}

/// `InstanceEntry`: each instance gets its index and the shared parent states; the
/// inner namespaces it shares are built per graph, so a second graph run inside an
/// entered instance (here node names the first graph also has, in another order)
/// still reports its own namespaces.
#[tokio::test]
async fn instance_entry_contexts_carry_their_index_and_each_graph_its_namespaces() {
    fn chain(names: [&'static str; 2]) -> CompiledGraph<Parent> {
        GraphBuilder::new(Parent::default())
            .add_node(names[0], |_s: Arc<Parent>, _c: NodeCtx| async {
                Ok(ParentUpdate::default())
            })
            .add_node(names[1], |_s: Arc<Parent>, _c: NodeCtx| async {
                Ok(ParentUpdate::default())
            })
            .add_edge(names[0], Target::from(names[1]))
            .add_edge(names[1], END)
            .entry(names[0])
            .compile()
            .unwrap()
    }
    let (first, second) = (Arc::new(chain(["a", "b"])), Arc::new(chain(["b", "a"])));
    let (f, s) = (Arc::clone(&first), Arc::clone(&second));
    type Seen = Mutex<Vec<(String, Option<usize>)>>;
    let seen: Arc<Seen> = Arc::default();
    let log = Arc::clone(&seen);
    let graph = GraphBuilder::new(Parent::default())
        .add_node("fan", move |state: Arc<Parent>, ctx: NodeCtx| {
            let (first, second) = (Arc::clone(&f), Arc::clone(&s));
            async move {
                let entry = ctx.instance_entry(state);
                for index in 0..2 {
                    let instance = entry.enter(index);
                    assert_eq!(instance.fan_out_index(), Some(index));
                    first.run_within(Parent::default(), &instance).await?;
                    second.run_within(Parent::default(), &instance).await?;
                }
                Ok(ParentUpdate::default())
            }
        })
        .add_edge("fan", END)
        .entry("fan")
        .observer(Registration::new(
            "rec",
            observer_fn(move |e: Arc<ObserverEvent>| {
                let log = Arc::clone(&log);
                async move {
                    if let Some(n) = e.as_node().filter(|n| n.phase == Phase::Started) {
                        log.lock()
                            .unwrap()
                            .push((n.namespace.join("/"), n.fan_out_index));
                    }
                    Ok::<(), openarmature_graph::BoxError>(())
                }
            }),
        ))
        .compile()
        .unwrap();
    graph.invoke(Parent::default()).await.unwrap();
    graph.drain(None).await;
    let seen = seen.lock().unwrap().clone();
    let inner: Vec<(&str, Option<usize>)> = seen
        .iter()
        .filter(|(ns, _)| ns != "fan")
        .map(|(ns, i)| (ns.as_str(), *i))
        .collect();
    let per_instance = |i| [("fan/a", i), ("fan/b", i), ("fan/b", i), ("fan/a", i)];
    let want: Vec<_> = per_instance(Some(0))
        .into_iter()
        .chain(per_instance(Some(1)))
        .collect();
    assert_eq!(inner, want);
}
