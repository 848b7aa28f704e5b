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

/// A builder that must fail to compile: the category it must fail with and, where the
/// case pins it, the whole error.
struct Case {
    name: &'static str,
    build: fn() -> GraphBuilder<S>,
    category: &'static str,
    error: Option<CompileError>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "no declared entry",
            build: || GraphBuilder::new(S::default()).add_node("a", noop),
            category: "no_declared_entry",
            error: Some(CompileError::NoDeclaredEntry),
        },
        Case {
            name: "unreachable node",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_node("island", noop)
                    .add_edge("a", END)
                    .add_edge("island", END)
                    .entry("a")
            },
            category: "unreachable_node",
            error: Some(CompileError::UnreachableNode {
                node: "island".into(),
            }),
        },
        Case {
            name: "unreachable node despite conditional hints",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_node("b", noop)
                    .add_node("c", noop)
                    .add_conditional_edge(
                        "a",
                        |_s: &S| Ok(Target::from("b")),
                        Some(vec![Target::from("b"), END]),
                    )
                    .entry("a")
            },
            category: "unreachable_node",
            error: None,
        },
        Case {
            name: "dangling edge: static target",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_edge("a", "ghost")
                    .entry("a")
            },
            category: "dangling_edge",
            error: Some(CompileError::DanglingEdge {
                from: "a".into(),
                to: "ghost".into(),
            }),
        },
        Case {
            name: "dangling edge: undeclared source",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_edge("ghost", "a")
                    .entry("a")
            },
            category: "dangling_edge",
            error: None,
        },
        Case {
            name: "dangling entry",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .entry("ghost")
            },
            category: "dangling_edge",
            error: Some(CompileError::DanglingEdge {
                from: "<entry>".into(),
                to: "ghost".into(),
            }),
        },
        Case {
            name: "multiple outgoing edges: static",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_node("b", noop)
                    .add_node("c", noop)
                    .add_edge("a", "b")
                    .add_edge("a", "c")
                    .entry("a")
            },
            category: "multiple_outgoing_edges",
            error: Some(CompileError::MultipleOutgoingEdges { node: "a".into() }),
        },
        Case {
            name: "multiple outgoing edges: static plus conditional",
            build: || {
                GraphBuilder::new(S::default())
                    .add_node("a", noop)
                    .add_node("b", noop)
                    .add_edge("a", "b")
                    .add_conditional_edge("a", |_s: &S| Ok(END), None)
                    .entry("a")
            },
            category: "multiple_outgoing_edges",
            error: None,
        },
    ]
}

#[test]
fn each_invalid_builder_fails_with_its_category_and_display_starts_with_it() {
    for case in cases() {
        let (cat, err) = category_of((case.build)());
        assert_eq!(cat, case.category, "{}", case.name);
        assert!(err.to_string().starts_with(cat), "{}: {err}", case.name);
        if let Some(expected) = case.error {
            assert_eq!(err, expected, "{}", case.name);
        }
    }
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

/// A schema whose list field `field` is declared with `reducer` fails to compile
/// with `reducer_configuration_invalid` naming `field`.
fn assert_reducer_configuration_invalid(field: &str, reducer: Result<Reducer, CompileError>) {
    let schema = DynSchema::builder()
        .field(field, FieldType::List(None), json!([]))
        .reducer_result(field, reducer)
        .build();
    let (cat, err) = category_of(dyn_graph(&schema));
    assert_eq!(cat, "reducer_configuration_invalid");
    match err {
        CompileError::ReducerConfigurationInvalid { field: got, .. } => assert_eq!(got, field),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn reducer_configuration_invalid_bounded_append_zero() {
    let err = Reducer::bounded_append(0).unwrap_err();
    assert_eq!(err.category(), "reducer_configuration_invalid");
    assert!(Reducer::bounded_append(-3).is_err());
    assert!(Reducer::bounded_append(1).is_ok());
    assert_reducer_configuration_invalid("w", Reducer::bounded_append(0));
}

#[test]
fn reducer_configuration_invalid_merge_by_key_without_key() {
    let err = Reducer::merge_by_key(None).unwrap_err();
    assert_eq!(err.category(), "reducer_configuration_invalid");
    assert!(Reducer::merge_by_key(Some(field_key("id"))).is_ok());
    assert_reducer_configuration_invalid("rows", Reducer::merge_by_key(None));
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
