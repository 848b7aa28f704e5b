//! Every §2 compile-error category the builder can report (subgraph projection
//! errors and warnings live in `subgraphs.rs`).

use std::sync::Arc;

use openarmature_graph::reducers::json::field_key;
use openarmature_graph::reducers::Reducer;
use openarmature_graph::{
    state, CompileError, DynSchema, DynState, DynUpdate, FieldType, GraphBuilder, NodeCtx,
    NodeError, State, Target, END,
};
use serde_json::json;

state! {
    /// Minimal state.
    #[derive(Default)]
    pub struct S => SUpdate {
        /// A value.
        pub v: i64,
    }
}

fn noop(_s: Arc<S>, _c: NodeCtx) -> futures::future::Ready<Result<SUpdate, NodeError>> {
    futures::future::ready(Ok(SUpdate::default()))
}

fn category_of<T: State>(b: GraphBuilder<T>) -> (&'static str, CompileError) {
    let err = b.compile().err().expect("compile must fail");
    (err.category(), err)
}

#[test]
fn valid_graph_compiles() {
    let g = GraphBuilder::new(S::default())
        .add_node("a", noop)
        .add_node("b", noop)
        .add_edge("a", "b")
        .entry("a")
        .compile()
        .unwrap();
    assert_eq!(g.node_names(), vec!["a", "b"]);
    assert!(g.warnings().is_empty());
}

#[test]
fn no_declared_entry() {
    let (cat, err) = category_of(GraphBuilder::new(S::default()).add_node("a", noop));
    assert_eq!(cat, "no_declared_entry");
    assert_eq!(err, CompileError::NoDeclaredEntry);
}

#[test]
fn unreachable_node() {
    let (cat, err) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_node("island", noop)
            .add_edge("a", END)
            .add_edge("island", END)
            .entry("a"),
    );
    assert_eq!(cat, "unreachable_node");
    assert_eq!(
        err,
        CompileError::UnreachableNode {
            node: "island".into()
        }
    );
}

#[test]
fn unreachable_node_despite_conditional_hints() {
    let (cat, _) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_node("b", noop)
            .add_node("c", noop)
            .add_conditional_edge(
                "a",
                |_s: &S| Ok(Target::from("b")),
                Some(vec![Target::from("b"), END]),
            )
            .entry("a"),
    );
    assert_eq!(cat, "unreachable_node");
}

#[test]
fn dangling_edge_static_target() {
    let (cat, err) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_edge("a", "ghost")
            .entry("a"),
    );
    assert_eq!(cat, "dangling_edge");
    match err {
        CompileError::DanglingEdge { to, .. } => assert_eq!(to, "ghost"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn dangling_edge_undeclared_source() {
    let (cat, _) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_edge("ghost", "a")
            .entry("a"),
    );
    assert_eq!(cat, "dangling_edge");
}

#[test]
fn dangling_entry() {
    let (cat, _) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .entry("ghost"),
    );
    assert_eq!(cat, "dangling_edge");
}

#[test]
fn multiple_outgoing_edges_static() {
    let (cat, err) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_node("b", noop)
            .add_node("c", noop)
            .add_edge("a", "b")
            .add_edge("a", "c")
            .entry("a"),
    );
    assert_eq!(cat, "multiple_outgoing_edges");
    assert_eq!(
        err,
        CompileError::MultipleOutgoingEdges { node: "a".into() }
    );
}

#[test]
fn multiple_outgoing_edges_static_plus_conditional() {
    let (cat, _) = category_of(
        GraphBuilder::new(S::default())
            .add_node("a", noop)
            .add_node("b", noop)
            .add_edge("a", "b")
            .add_conditional_edge("a", |_s: &S| Ok(END), None)
            .entry("a"),
    );
    assert_eq!(cat, "multiple_outgoing_edges");
}

fn dyn_noop(
    _s: Arc<DynState>,
    _c: NodeCtx,
) -> futures::future::Ready<Result<DynUpdate, NodeError>> {
    futures::future::ready(Ok(DynUpdate::new()))
}

fn dyn_graph(schema: &Arc<DynSchema>) -> GraphBuilder<DynState> {
    GraphBuilder::new(schema.defaults())
        .add_node("a", dyn_noop)
        .add_edge("a", END)
        .entry("a")
}

#[test]
fn conflicting_reducers_from_two_declarations() {
    let schema = DynSchema::builder()
        .field("v", FieldType::List(None), json!([]))
        .reducer("v", Reducer::Append)
        .reducer("v", Reducer::LastWriteWins)
        .build();
    let (cat, err) = category_of(dyn_graph(&schema));
    assert_eq!(cat, "conflicting_reducers");
    assert_eq!(err, CompileError::ConflictingReducers { field: "v".into() });
}

#[test]
fn reducer_configuration_invalid_bounded_append_zero() {
    let err = Reducer::bounded_append(0).unwrap_err();
    assert_eq!(err.category(), "reducer_configuration_invalid");
    assert!(Reducer::bounded_append(-3).is_err());
    assert!(Reducer::bounded_append(1).is_ok());

    let schema = DynSchema::builder()
        .field("w", FieldType::List(None), json!([]))
        .reducer_result("w", Reducer::bounded_append(0))
        .build();
    let (cat, err) = category_of(dyn_graph(&schema));
    assert_eq!(cat, "reducer_configuration_invalid");
    match err {
        CompileError::ReducerConfigurationInvalid { field, .. } => assert_eq!(field, "w"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn reducer_configuration_invalid_merge_by_key_without_key() {
    let err = Reducer::merge_by_key(None).unwrap_err();
    assert_eq!(err.category(), "reducer_configuration_invalid");
    assert!(Reducer::merge_by_key(Some(field_key("id"))).is_ok());

    let schema = DynSchema::builder()
        .field("rows", FieldType::List(None), json!([]))
        .reducer_result("rows", Reducer::merge_by_key(None))
        .build();
    let (cat, err) = category_of(dyn_graph(&schema));
    assert_eq!(cat, "reducer_configuration_invalid");
    match err {
        CompileError::ReducerConfigurationInvalid { field, .. } => assert_eq!(field, "rows"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn valid_dyn_schema_compiles() {
    let schema = DynSchema::builder()
        .field("rows", FieldType::List(None), json!([]))
        .reducer_result("rows", Reducer::merge_by_key(Some(field_key("id"))))
        .field("w", FieldType::List(None), json!([]))
        .reducer_result("w", Reducer::bounded_append(2))
        .build();
    let g = dyn_graph(&schema).compile().unwrap();
    assert_eq!(
        g.defaults().reducer_name("rows").as_deref(),
        Some("merge_by_key")
    );
    assert_eq!(
        g.defaults().reducer_name("w").as_deref(),
        Some("bounded_append")
    );
}

#[test]
fn compile_error_display_starts_with_category() {
    let (cat, err) = category_of(GraphBuilder::new(S::default()).add_node("a", noop));
    assert!(err.to_string().starts_with(cat), "{err}");
}
