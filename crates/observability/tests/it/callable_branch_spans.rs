//! observability §5.2 / §5.7 (proposal 0075): an inline-callable branch renders as
//! its dispatch span alone, and — being the event-source unit — that span carries
//! `openarmature.node.attempt_index`: the attempt of the parallel-branches node it
//! ran in, not a constant 0, so a node-level retry renders each attempt's dispatch
//! spans with that attempt's index.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, NodeError, END};
use openarmature_llm::LlmError;
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_pipeline::retry::Constant;
use openarmature_pipeline::{
    Branch, CallBranch, ParallelBranchesNode, RetryConfig, RetryMiddleware,
};
use opentelemetry_sdk::trace::SpanData;

use crate::support::{int, span_capture};

state! {
    /// The test state.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// Written by `vector`.
        pub v: i64,
        /// Written by `fts`.
        pub f: i64,
    }
}

#[tokio::test]
async fn callable_dispatch_spans_carry_the_node_attempt_under_node_retry() {
    let calls = Arc::new(AtomicU32::new(0));
    let vector = CallBranch::new(move |_s: Arc<Doc>, _c: NodeCtx| {
        let calls = Arc::clone(&calls);
        async move {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(LlmError::unavailable("throttled").into());
            }
            Ok::<_, NodeError>(DocUpdate::default().v(1))
        }
    });
    let fts = CallBranch::new(|_s: Arc<Doc>, _c: NodeCtx| async {
        Ok::<_, NodeError>(DocUpdate::default().f(2))
    });
    let node = ParallelBranchesNode::new()
        .branch("vector", Branch::call(vector))
        .branch("fts", Branch::call(fts));
    let retry = RetryConfig::default()
        .max_attempts(2)
        .backoff(Constant(Duration::ZERO));
    let graph = GraphBuilder::new(Doc::default())
        .add_node("retrieve", node)
        .node_middleware("retrieve", Arc::new(RetryMiddleware::new(retry)))
        .add_edge("retrieve", END)
        .entry("retrieve")
        .compile()
        .unwrap();

    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let done = otel
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    assert_eq!((done.state.v, done.state.f), (1, 2));
    let spans = exporter.get_finished_spans().unwrap();

    let nodes: Vec<&SpanData> = spans.iter().filter(|s| s.name == "retrieve").collect();
    assert_eq!(
        nodes.len(),
        2,
        "one parallel-branches node span per attempt"
    );
    let mut seen = Vec::new();
    for node in nodes {
        let attempt = int(node, a::NODE_ATTEMPT_INDEX).unwrap();
        for d in spans
            .iter()
            .filter(|s| s.parent_span_id == node.span_context.span_id())
        {
            assert_eq!(
                int(d, a::NODE_ATTEMPT_INDEX),
                Some(attempt),
                "`{}` under attempt {attempt}",
                d.name
            );
            seen.push((attempt, d.name.to_string()));
        }
    }
    seen.sort();
    assert!(seen.contains(&(0, "vector".into())), "{seen:?}");
    assert!(seen.contains(&(1, "vector".into())), "{seen:?}");
    assert!(seen.contains(&(1, "fts".into())), "{seen:?}");
}
