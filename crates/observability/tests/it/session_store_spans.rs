//! sessions §11.1 with a SessionStore registered: the load at entry and the save at
//! END add no spans of their own and change nothing about the session attribute —
//! every span of a session-bound invocation carries `openarmature.session_id`, none
//! of an unbound one does, and the store is touched only for the bound one.

use std::sync::Arc;

use openarmature_graph::session::{InMemorySessionStore, SessionConfig, SessionStore};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use opentelemetry_sdk::trace::SpanData;

use crate::support::{span_capture, text};

state! {
    /// The test state.
    #[derive(Default)]
    pub struct Tally => TallyUpdate {
        /// Set by the nodes.
        pub x: i64,
    }
}

fn session_of(s: &SpanData) -> Option<String> {
    text(s, a::SESSION_ID)
}

#[tokio::test]
async fn a_store_backed_session_keeps_the_attribute_on_every_span_and_only_there() {
    let store = InMemorySessionStore::new();
    let graph = GraphBuilder::new(Tally::default())
        .add_node("a", |_s: Arc<Tally>, _c: NodeCtx| async {
            Ok(TallyUpdate::default().x(1))
        })
        .add_node("b", |_s: Arc<Tally>, _c: NodeCtx| async {
            Ok(TallyUpdate::default().x(2))
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    otel.invoke(
        &graph,
        Tally::default(),
        InvokeOptions::default().session_id("s12"),
    )
    .await
    .unwrap();
    let bound = exporter.get_finished_spans().unwrap();
    assert_eq!(
        bound.len(),
        3,
        "invocation span and two node spans, no store spans"
    );
    assert!(bound
        .iter()
        .all(|s| session_of(s).as_deref() == Some("s12")));
    assert_eq!(store.load("s12").await.unwrap().unwrap().state["x"], 2);

    exporter.reset();
    otel.invoke(&graph, Tally::default(), InvokeOptions::default())
        .await
        .unwrap();
    let unbound = exporter.get_finished_spans().unwrap();
    assert_eq!(unbound.len(), 3);
    assert!(unbound.iter().all(|s| session_of(s).is_none()));
    assert_eq!(
        store.len(),
        1,
        "the unbound invocation never touched the store"
    );
}
