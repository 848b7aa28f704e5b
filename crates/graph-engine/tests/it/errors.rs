//! A three-node typed graph with static and conditional edges, and the §4 runtime
//! error categories with their recoverable states.

use std::sync::{Arc, Mutex};

use openarmature_graph::reducers::Reducer;
use openarmature_graph::{
    state, BoxError, DynSchema, DynState, DynUpdate, FieldType, GraphBuilder, MergeError, NodeCtx,
    NodeError, RoutingError, RuntimeCategory, State, StateValidationError, Target, END,
};
use serde_json::json;

state! {
    /// A small pipeline state.
    #[derive(Default, PartialEq)]
    pub struct Flow => FlowUpdate {
        /// A counter.
        pub count: i64,
        /// Visited nodes.
        pub log: Vec<String> => append,
        /// Where the router should go.
        pub route: String,
    }
}

fn visit(
    name: &'static str,
) -> impl Fn(Arc<Flow>, NodeCtx) -> futures::future::Ready<Result<FlowUpdate, NodeError>>
       + Send
       + Sync
       + 'static {
    move |s: Arc<Flow>, _c: NodeCtx| {
        futures::future::ready(Ok(FlowUpdate::default()
            .count(s.count + 1)
            .log(vec![name.to_owned()])))
    }
}

/// a -> b (static); b -> conditional(route); c -> END.
fn three_node(seen_by_edge: Arc<Mutex<Vec<Flow>>>) -> GraphBuilder<Flow> {
    GraphBuilder::new(Flow::default())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c", visit("c"))
        .add_edge("a", "b")
        .add_conditional_edge(
            "b",
            move |s: &Flow| {
                seen_by_edge.lock().unwrap().push(s.clone());
                Ok(match s.route.as_str() {
                    "c" => Target::from("c"),
                    "end" => END,
                    other => Target::from(other),
                })
            },
            Some(vec![Target::from("c"), END]),
        )
        .add_edge("c", END)
        .entry("a")
}

#[tokio::test]
async fn static_and_conditional_edges_route_and_edge_sees_post_update_state() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let graph = three_node(Arc::clone(&seen)).compile().unwrap();
    let out = graph
        .invoke(Flow {
            route: "c".into(),
            ..Flow::default()
        })
        .await
        .unwrap();
    assert_eq!(out.log, vec!["a", "b", "c"]);
    assert_eq!(out.count, 3);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    // The edge function saw b's update merged in.
    assert_eq!(seen[0].count, 2);
    assert_eq!(seen[0].log, vec!["a", "b"]);
}

#[tokio::test]
async fn conditional_edge_to_end_halts() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let graph = three_node(seen).compile().unwrap();
    let out = graph
        .invoke(Flow {
            route: "end".into(),
            ..Flow::default()
        })
        .await
        .unwrap();
    assert_eq!(out.log, vec!["a", "b"]);
}

#[tokio::test]
async fn node_named_end_does_not_collide_with_the_sentinel() {
    let graph = GraphBuilder::new(Flow::default())
        .add_node("a", visit("a"))
        .add_node("END", visit("END"))
        .add_edge("a", "END")
        .add_edge("END", END)
        .entry("a")
        .compile()
        .unwrap();
    let out = graph.invoke(Flow::default()).await.unwrap();
    assert_eq!(out.log, vec!["a", "END"]);
}

#[tokio::test]
async fn routing_to_an_undeclared_name_is_a_routing_error_with_post_merge_state() {
    let ran_c = Arc::new(Mutex::new(false));
    let ran = Arc::clone(&ran_c);
    let graph = GraphBuilder::new(Flow::default())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c", move |_s: Arc<Flow>, _c: NodeCtx| {
            *ran.lock().unwrap() = true;
            futures::future::ready(Ok::<_, NodeError>(FlowUpdate::default()))
        })
        .add_edge("a", "b")
        .add_conditional_edge(
            "b",
            |s: &Flow| Ok(Target::from(s.route.clone())),
            Some(vec![Target::from("c"), END]),
        )
        .add_edge("c", END)
        .entry("a")
        .compile()
        .unwrap();
    let err = graph
        .invoke(Flow {
            route: "nowhere".into(),
            ..Flow::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::RoutingError);
    assert_eq!(err.category().as_str(), "routing_error");
    assert_eq!(err.node(), "b");
    let routing = err
        .cause()
        .downcast_ref::<RoutingError>()
        .expect("cause is a RoutingError");
    assert_eq!(routing.from, "b");
    assert_eq!(routing.destination, "nowhere");
    // Post-merge state: b's update is in.
    let state = err.recoverable_state();
    assert_eq!(state.log, vec!["a", "b"]);
    assert_eq!(state.count, 2);
    assert!(
        !*ran_c.lock().unwrap(),
        "no node may run after a routing error"
    );
}

#[tokio::test]
async fn node_error_is_node_exception_with_pre_node_state() {
    let graph = GraphBuilder::new(Flow::default())
        .add_node("a", visit("a"))
        .add_node("b", |_s: Arc<Flow>, _c: NodeCtx| async move {
            Err::<FlowUpdate, NodeError>("b exploded: disk full".into())
        })
        .add_node("c", visit("c"))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .entry("a")
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(
            Flow::default(),
            openarmature_graph::InvokeOptions::default().invocation_id("inv-1"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "b");
    assert_eq!(err.namespace(), ["b".to_owned()]);
    assert_eq!(err.original_message(), "b exploded: disk full");
    assert_eq!(err.cause().to_string(), "b exploded: disk full");
    assert_eq!(err.invocation_id(), "inv-1");
    // Pre-node state: a's update only.
    assert_eq!(
        err.recoverable_state(),
        &Flow {
            count: 1,
            log: vec!["a".into()],
            route: String::new(),
        }
    );
    assert_eq!(err.into_state().log, vec!["a"]);
}

#[tokio::test]
async fn edge_fn_error_is_edge_exception() {
    let graph = GraphBuilder::new(Flow::default())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_edge("a", "b")
        .add_conditional_edge(
            "b",
            |_s: &Flow| Err::<Target, BoxError>("edge broke".into()),
            Some(vec![END]),
        )
        .entry("a")
        .compile()
        .unwrap();
    let err = graph.invoke(Flow::default()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::EdgeException);
    assert_eq!(err.category().as_str(), "edge_exception");
    assert_eq!(err.node(), "b");
    assert_eq!(err.original_message(), "edge broke");
    // The edge saw (and the error carries) the post-merge state.
    assert_eq!(err.recoverable_state().log, vec!["a", "b"]);
}

fn dyn_schema() -> Arc<DynSchema> {
    DynSchema::builder()
        .field("log", FieldType::parse("list<string>").unwrap(), json!([]))
        .reducer("log", Reducer::Append)
        .field("n", FieldType::Int, json!(0))
        .build()
}

#[tokio::test]
async fn reducer_failure_is_reducer_error_naming_field_and_reducer() {
    let schema = dyn_schema();
    let graph = GraphBuilder::new(schema.defaults())
        .add_node("a", |_s: Arc<DynState>, _c: NodeCtx| async move {
            Ok(DynUpdate::new().set("log", json!(["a"])).set("n", json!(1)))
        })
        .add_node("bad", |_s: Arc<DynState>, _c: NodeCtx| async move {
            Ok(DynUpdate::new()
                .set("n", json!(2))
                .set("log", json!("not a list")))
        })
        .add_edge("a", "bad")
        .add_edge("bad", END)
        .entry("a")
        .compile()
        .unwrap();
    let err = graph.invoke(schema.defaults()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::ReducerError);
    assert_eq!(err.category().as_str(), "reducer_error");
    assert_eq!(err.node(), "bad");
    let merge = err
        .cause()
        .downcast_ref::<MergeError>()
        .expect("cause is a MergeError");
    assert_eq!(merge.field, "log");
    assert_eq!(merge.reducer, "append");
    assert!(
        merge.source.to_string().contains("list"),
        "root cause names the shape problem: {}",
        merge.source
    );
    // Pre-merge state: a's update only, not even the partial `n = 2` write.
    assert_eq!(
        State::to_json(err.recoverable_state()),
        json!({"log": ["a"], "n": 1})
    );
}

#[tokio::test]
async fn typed_custom_reducer_failure_is_reducer_error() {
    fn positive(
        prior: &i64,
        update: i64,
    ) -> Result<i64, openarmature_graph::reducers::ReducerFailure> {
        if update > 0 {
            Ok(prior + update)
        } else {
            Err(openarmature_graph::reducers::ReducerFailure(
                "must be positive".into(),
            ))
        }
    }
    state! {
        /// A state with a custom reducer.
        #[derive(Default)]
        pub struct Acc => AccUpdate {
            /// Sum of positive updates.
            pub sum: i64 => custom(positive),
        }
    }
    let graph = GraphBuilder::new(Acc::default())
        .add_node("a", |_s: Arc<Acc>, _c: NodeCtx| async move {
            Ok(AccUpdate::default().sum(3))
        })
        .add_node("b", |_s: Arc<Acc>, _c: NodeCtx| async move {
            Ok(AccUpdate::default().sum(-3))
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .compile()
        .unwrap();
    let err = graph.invoke(Acc::default()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::ReducerError);
    let merge = err.cause().downcast_ref::<MergeError>().unwrap();
    assert_eq!(merge.field, "sum");
    assert_eq!(merge.reducer, "custom");
    assert_eq!(err.recoverable_state().sum, 3);
}

#[tokio::test]
async fn initial_state_failing_validation_is_state_validation_error() {
    let schema = dyn_schema();
    let ran = Arc::new(Mutex::new(false));
    let ran2 = Arc::clone(&ran);
    let graph = GraphBuilder::new(schema.defaults())
        .add_node("a", move |_s: Arc<DynState>, _c: NodeCtx| {
            *ran2.lock().unwrap() = true;
            futures::future::ready(Ok::<_, NodeError>(DynUpdate::new()))
        })
        .add_edge("a", END)
        .entry("a")
        .compile()
        .unwrap();
    // last_write_wins does not type-check, so a merge can build an invalid state.
    let bad = schema
        .defaults()
        .merge(DynUpdate::new().set("n", json!("not an int")))
        .unwrap();
    assert!(bad.validate().is_err());
    let err = graph.invoke(bad.clone()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::StateValidationError);
    assert_eq!(err.category().as_str(), "state_validation_error");
    let validation = err
        .cause()
        .downcast_ref::<StateValidationError>()
        .expect("cause is a StateValidationError");
    assert_eq!(validation.fields, vec!["n".to_owned()]);
    assert_eq!(err.recoverable_state(), &bad);
    assert!(
        !*ran.lock().unwrap(),
        "no node runs on an invalid initial state"
    );
}

#[tokio::test]
async fn merged_state_failing_validation_is_state_validation_error() {
    let schema = dyn_schema();
    let graph = GraphBuilder::new(schema.defaults())
        .add_node("a", |_s: Arc<DynState>, _c: NodeCtx| async move {
            Ok(DynUpdate::new().set("n", json!("oops")))
        })
        .add_edge("a", END)
        .entry("a")
        .compile()
        .unwrap();
    let err = graph.invoke(schema.defaults()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::StateValidationError);
    let validation = err.cause().downcast_ref::<StateValidationError>().unwrap();
    assert_eq!(validation.fields, vec!["n".to_owned()]);
    assert_eq!(
        State::to_json(err.recoverable_state()),
        json!({"log": [], "n": 0})
    );
}
