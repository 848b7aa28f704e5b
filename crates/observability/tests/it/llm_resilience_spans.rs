//! The project's resilience extensions on spans, through the real `openarmature-llm`
//! call loop (an in-process scripted provider) and an in-memory exporter:
//!
//! - extension 0001: every `openarmature.llm.complete` span carries
//!   `openarmature.llm.logical_call_id`, shared by the call-level retries of one
//!   `complete()` call and by the call a node-level retry re-issues;
//! - extension 0004: circuit-breaker transitions are span events
//!   (`openarmature.circuit_breaker.state_change`) on the calling node's span.

use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{GraphBuilder, InvokeOptions, NodeCtx, NodeError, Registration, END};
use openarmature_llm::resilience::{
    BreakerPolicy, CircuitBreaker, Endpoint, ResilientProvider, UsageAggregator,
};
use openarmature_llm::{CompletionRequest, LlmError, LlmRetryConfig, Message, Provider, Response};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::RetryMiddleware;
use openarmature_testkit::ManualClock;
use opentelemetry_sdk::trace::SpanData;

use crate::support::single_node;
use crate::support::{
    int, ok_response, span_capture, text, usage, Doc, DocUpdate, ScriptedProvider,
};

fn ok() -> Result<Response, LlmError> {
    Ok(ok_response(usage(Some(3), Some(1), Some(4))))
}

fn down() -> Result<Response, LlmError> {
    Err(LlmError::unavailable("down"))
}

fn zero() -> RetryConfig {
    RetryConfig::default().backoff(Constant(Duration::ZERO))
}

#[tokio::test]
async fn the_logical_call_id_is_stable_across_both_retry_lanes() {
    // Node attempt 0: call #0 gets a 503 and is retried at call level (reply); call
    // #1 gets a 503 (no call-level retry), failing the node. Node attempt 1: both
    // calls are re-issued and answered. Five LLM spans, two logical calls.
    let llm = Arc::new(ScriptedProvider::new(vec![
        down(),
        ok(),
        down(),
        ok(),
        ok(),
    ]));
    let graph = GraphBuilder::new(Doc::default())
        .add_node("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
            let llm = Arc::clone(&llm);
            async move {
                let first = CompletionRequest::new(vec![Message::user("a")])
                    .in_node(&ctx)
                    .retry(LlmRetryConfig::from(zero().max_attempts(2)));
                llm.complete(&first).await?;
                let second = CompletionRequest::new(vec![Message::user("b")]).in_node(&ctx);
                llm.complete(&second).await?;
                Ok::<DocUpdate, NodeError>(DocUpdate::default().done(true))
            }
        })
        .node_middleware(
            "ask",
            Arc::new(RetryMiddleware::new(zero().max_attempts(2))),
        )
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();

    let (exporter, tracer) = span_capture();
    let otel = OtelObserver::builder(&tracer).build();
    let usage = UsageAggregator::new();
    let done = otel
        .invoke(
            &graph,
            Doc::default(),
            InvokeOptions::default().observer(Registration::new("usage", usage.clone())),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let spans = exporter.get_finished_spans().unwrap();

    let nodes: Vec<&SpanData> = spans.iter().filter(|s| s.name == "ask").collect();
    assert_eq!(nodes.len(), 2, "two node attempts");
    let node_attempt = |llm: &SpanData| -> i64 {
        let parent = nodes
            .iter()
            .find(|n| n.span_context.span_id() == llm.parent_span_id)
            .expect("an LLM span's parent is a node attempt span");
        int(parent, a::NODE_ATTEMPT_INDEX).unwrap()
    };
    let calls: Vec<&SpanData> = spans.iter().filter(|s| s.name == a::LLM_SPAN).collect();
    assert_eq!(calls.len(), 5);

    let prefix = format!("{}:ask@0#", done.invocation_id);
    let lanes = |logical: &str| -> Vec<(i64, i64, Option<String>)> {
        let mut v: Vec<_> = calls
            .iter()
            .filter(|s| text(s, a::LLM_LOGICAL_CALL_ID).as_deref() == Some(logical))
            .map(|s| {
                (
                    node_attempt(s),
                    int(s, a::LLM_ATTEMPT_INDEX).unwrap(),
                    text(s, a::LLM_RETRY_REASON),
                )
            })
            .collect();
        v.sort();
        v
    };
    let transient = Some("transient".to_owned());
    assert_eq!(
        lanes(&format!("{prefix}0")),
        [(0, 0, None), (0, 1, transient), (1, 0, None)],
        "call #0: both call-level attempts and the node-level re-issue"
    );
    assert_eq!(lanes(&format!("{prefix}1")), [(0, 0, None), (1, 0, None)]);

    // The aggregator groups by the same id.
    let report = usage.invocation(&done.invocation_id).unwrap();
    let ids: Vec<&str> = report
        .calls
        .iter()
        .map(|c| c.logical_call_id.as_str())
        .collect();
    assert_eq!(ids, [format!("{prefix}0"), format!("{prefix}1")]);
}

#[tokio::test]
async fn breaker_transitions_are_span_events_on_the_calling_node_span() {
    let clock = ManualClock::new();
    let key = "test http://127.0.0.1/v1";
    let breaker = CircuitBreaker::new(
        key,
        BreakerPolicy {
            consecutive_failures: 1,
            cooldown: Duration::from_secs(5),
            ..BreakerPolicy::default()
        },
    )
    .clock(Arc::new(clock.clone()));
    let endpoint = Arc::new(Endpoint::new(key).breaker(breaker));
    let llm = Arc::new(ResilientProvider::new(
        ScriptedProvider::new(vec![down(), ok()]),
        endpoint,
    ));
    // The node degrades on a failed call (its span stays OK).
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let llm = Arc::clone(&llm);
        async move {
            let request = CompletionRequest::new(vec![Message::user("a")]).in_node(&ctx);
            let done = llm.complete(&request).await.is_ok();
            Ok::<DocUpdate, NodeError>(DocUpdate::default().done(done))
        }
    });

    let (exporter, tracer) = span_capture();
    let otel = OtelObserver::builder(&tracer).build();
    let state_changes = |span: &SpanData| -> Vec<[Option<String>; 4]> {
        span.events
            .iter()
            .filter(|e| e.name == a::CIRCUIT_BREAKER_STATE_CHANGE_EVENT)
            .map(|e| {
                let get = |k: &str| {
                    e.attributes
                        .iter()
                        .find(|kv| kv.key.as_str() == k)
                        .map(|kv| kv.value.as_str().into_owned())
                };
                [
                    get(a::CIRCUIT_BREAKER_ENDPOINT),
                    get(a::CIRCUIT_BREAKER_FROM),
                    get(a::CIRCUIT_BREAKER_TO),
                    get(a::CIRCUIT_BREAKER_REASON),
                ]
            })
            .collect()
    };
    let s = |v: &str| Some(v.to_owned());

    // Invocation 1: the call fails, the breaker opens.
    let first = otel
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    assert!(!first.state.done);
    let spans = exporter.get_finished_spans().unwrap();
    let node = spans.iter().find(|s| s.name == "ask").unwrap();
    assert_eq!(
        state_changes(node),
        [[s(key), s("closed"), s("open"), s("consecutive_failures")]]
    );
    let event = &node.events.events[0];
    assert!(node.start_time <= event.timestamp && event.timestamp <= node.end_time);
    let llm_span = spans.iter().find(|s| s.name == a::LLM_SPAN).unwrap();
    assert_eq!(llm_span.parent_span_id, node.span_context.span_id());
    assert!(
        state_changes(llm_span).is_empty(),
        "recorded once, on the node span"
    );
    exporter.reset();

    // Invocation 2 after the cooldown: the call half-opens the breaker, is the
    // probe, and closes it — two events, in order.
    clock.advance(Duration::from_secs(5));
    let second = otel
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    assert!(second.state.done);
    let spans = exporter.get_finished_spans().unwrap();
    let node = spans.iter().find(|s| s.name == "ask").unwrap();
    assert_eq!(
        state_changes(node),
        [
            [s(key), s("open"), s("half_open"), s("cooldown_elapsed")],
            [s(key), s("half_open"), s("closed"), s("probe_succeeded")],
        ]
    );
    let invocation = spans.iter().find(|s| s.name == a::INVOCATION_SPAN).unwrap();
    assert!(state_changes(invocation).is_empty());
}
