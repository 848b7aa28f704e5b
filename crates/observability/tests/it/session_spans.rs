//! sessions §3 / observability §5.6 / §8.4.1: a session-bound invocation carries
//! `openarmature.session_id` on every span and its node sees the id; the Langfuse
//! trace is grouped by it; an unbound invocation carries none.

use std::sync::{Arc, Mutex};

use openarmature_graph::{GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_observability::attributes as a;
use openarmature_observability::langfuse::LangfuseObserver;
use openarmature_observability::OtelObserver;

use crate::support::{span_capture, text, Doc, DocUpdate};

fn graph(seen: &Arc<Mutex<Vec<Option<String>>>>) -> openarmature_graph::CompiledGraph<Doc> {
    let seen = Arc::clone(seen);
    GraphBuilder::new(Doc::default())
        .add_node("a", move |_s: Arc<Doc>, ctx: NodeCtx| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock()
                    .unwrap()
                    .push(ctx.session_id().map(str::to_owned));
                Ok(DocUpdate::default().done(true))
            }
        })
        .add_edge("a", "b")
        .add_node("b", |_s: Arc<Doc>, _ctx: NodeCtx| async move {
            Ok(DocUpdate::default())
        })
        .add_edge("b", END)
        .entry("a")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn every_span_of_a_session_bound_invocation_carries_the_session_id() {
    let seen = Arc::default();
    let graph = graph(&seen);
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    otel.invoke(
        &graph,
        Doc::default(),
        InvokeOptions::default().session_id("sess-1"),
    )
    .await
    .unwrap();
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [Some("sess-1".to_owned()), None]);
    let spans = exporter.get_finished_spans().unwrap();
    let session = |s: &opentelemetry_sdk::trace::SpanData| text(s, a::SESSION_ID);
    let (bound, unbound): (Vec<_>, Vec<_>) = spans.iter().partition(|s| session(s).is_some());
    assert_eq!(bound.len(), 3, "invocation span and both node spans");
    assert!(bound
        .iter()
        .all(|s| session(s).as_deref() == Some("sess-1")));
    assert_eq!(
        unbound.len(),
        3,
        "the unbound invocation's spans carry none"
    );
}

#[tokio::test]
async fn langfuse_groups_traces_of_one_session() {
    let graph = graph(&Arc::default());
    let langfuse = LangfuseObserver::builder().build();
    for _ in 0..2 {
        langfuse
            .invoke(
                &graph,
                Doc::default(),
                InvokeOptions::default().session_id("sess-x"),
            )
            .await
            .unwrap();
    }
    langfuse
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let sessions: Vec<Option<String>> = langfuse
        .traces()
        .into_iter()
        .map(|t| t.session_id)
        .collect();
    assert_eq!(
        sessions,
        [Some("sess-x".to_owned()), Some("sess-x".to_owned()), None]
    );
}
