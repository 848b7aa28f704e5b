//! An invocation exported through the real OTLP/HTTP exporter (batch processor, its own
//! export thread) to a collector stand-in on 127.0.0.1 that decodes the protobuf
//! `ExportTraceServiceRequest`s it receives.
//!
//! - `a_retried_invocation_arrives_over_otlp_http`: one node fails once with a transient
//!   error and is retried by the pipeline's `RetryMiddleware`, so two attempt spans must
//!   arrive.
//! - `a_retried_llm_call_arrives_over_otlp_http`: one node makes an LLM call through the
//!   real OpenAI-compatible provider to a mock on 127.0.0.1 that answers 503, then 200;
//!   the call-level retry makes two `openarmature.llm.complete` spans under the node
//!   span, sharing one logical call id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{CategorizedError, GraphBuilder, InvokeOptions, NodeCtx, NodeError, END};
use openarmature_llm::{
    CompletionRequest, LlmRetryConfig, Message, OpenAiProvider, Provider, Transport,
};
use openarmature_observability::attributes as a;
use openarmature_observability::export::{OtlpExport, Protocol};
use openarmature_observability::OtelObserver;
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::RetryMiddleware;
use openarmature_testkit::{Reply, Script};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio::sync::mpsc;

use crate::otlp_support;
use crate::support::{Doc, DocUpdate};

fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s AnyValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(AnyValue::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn string(span: &Span, key: &str) -> Option<String> {
    match attr(span, key) {
        Some(AnyValue::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_invocation_arrives_over_otlp_http() {
    let (collector, mut rx) = otlp_support::collector::<ExportTraceServiceRequest>().await;
    let addr = collector.addr();

    let provider = OtlpExport::from_env()
        .protocol(Protocol::HttpProtobuf)
        .endpoint(format!("http://{addr}"))
        .timeout(Duration::from_secs(5))
        .service_name("openarmature-otlp-test")
        .tracer_provider()
        .expect("provider");
    let otel = OtelObserver::builder(&provider).build();

    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let retry = RetryConfig::default()
        .max_attempts(3)
        .backoff(Constant(Duration::ZERO));
    let graph = GraphBuilder::new(Doc::default())
        .add_node("flaky", move |_s: Arc<Doc>, _ctx: NodeCtx| {
            let counter = Arc::clone(&counter);
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                    let err = CategorizedError::new(
                        openarmature_graph::Category::PROVIDER_RATE_LIMIT,
                        "slow down",
                    )
                    .transient(true);
                    return Err(err.into());
                }
                Ok(DocUpdate::default().done(true))
            }
        })
        .node_middleware("flaky", Arc::new(RetryMiddleware::new(retry)))
        .add_edge("flaky", END)
        .entry("flaky")
        .compile()
        .expect("compile");

    let mut meta = serde_json::Map::new();
    meta.insert("tenantId".into(), "acme".into());
    let options = InvokeOptions {
        correlation_id: Some("req-42".into()),
        metadata: meta,
        ..InvokeOptions::default()
    };
    let done = otel
        .invoke(&graph, Doc::default(), options)
        .await
        .expect("invoke");
    assert!(done.state.done);
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // Shutting the provider down flushes the batch processor (blocking: it waits for
    // the export thread, which talks to the collector running on this runtime).
    tokio::task::spawn_blocking(move || provider.shutdown())
        .await
        .expect("join")
        .expect("shutdown flushes");

    let (spans, service) = receive(&mut rx, 3).await;
    assert_eq!(
        service,
        Some(AnyValue::StringValue("openarmature-otlp-test".into()))
    );

    let by_name: HashMap<&str, Vec<&Span>> = spans.iter().fold(HashMap::new(), |mut m, s| {
        m.entry(s.name.as_str()).or_default().push(s);
        m
    });
    let invocation = by_name[a::INVOCATION_SPAN][0];
    assert_eq!(
        string(invocation, a::GRAPH_ENTRY_NODE).as_deref(),
        Some("flaky")
    );
    assert_eq!(
        string(invocation, a::CORRELATION_ID).as_deref(),
        Some("req-42")
    );
    assert_eq!(
        string(invocation, a::IMPLEMENTATION_NAME).as_deref(),
        Some(a::IMPLEMENTATION)
    );
    assert_eq!(
        string(invocation, "openarmature.user.tenantId").as_deref(),
        Some("acme")
    );

    let mut attempts = by_name["flaky"].clone();
    attempts.sort_by_key(|s| int(s, a::NODE_ATTEMPT_INDEX));
    assert_eq!(attempts.len(), 2);
    for (i, span) in attempts.iter().enumerate() {
        assert_eq!(int(span, a::NODE_ATTEMPT_INDEX), Some(i as i64));
        assert_eq!(
            span.parent_span_id, invocation.span_id,
            "attempts are siblings"
        );
        assert_eq!(span.trace_id, invocation.trace_id);
        assert_eq!(string(span, a::CORRELATION_ID).as_deref(), Some("req-42"));
    }
    let failed = attempts[0];
    assert_eq!(
        string(failed, a::ERROR_CATEGORY).as_deref(),
        Some("node_exception")
    );
    let status = failed.status.as_ref().expect("status");
    assert_eq!(status.message, "node_exception");
    assert!(failed.events.iter().any(|e| e.name == "exception"));
    assert_eq!(string(attempts[1], a::ERROR_CATEGORY), None);
}

/// Receives exports until `n` spans arrived; returns them and the `service.name`.
async fn receive(
    rx: &mut mpsc::UnboundedReceiver<(String, ExportTraceServiceRequest)>,
    n: usize,
) -> (Vec<Span>, Option<AnyValue>) {
    let mut spans = Vec::new();
    let mut service = None;
    while spans.len() < n {
        let (path, req) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an export within 10 s")
            .expect("collector alive");
        assert_eq!(path, "/v1/traces");
        for rs in req.resource_spans {
            for kv in rs.resource.into_iter().flat_map(|r| r.attributes) {
                if kv.key == "service.name" {
                    service = kv.value.and_then(|v| v.value);
                }
            }
            for ss in rs.scope_spans {
                assert_eq!(
                    ss.scope.as_ref().map(|s| s.name.as_str()),
                    Some("openarmature")
                );
                spans.extend(ss.spans);
            }
        }
    }
    (spans, service)
}

fn status_code(span: &Span) -> i32 {
    span.status.as_ref().map_or(0, |s| s.code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_llm_call_arrives_over_otlp_http() {
    // The collector.
    let (collector, mut rx) = otlp_support::collector::<ExportTraceServiceRequest>().await;
    let collector_addr = collector.addr();

    // The LLM provider: 503 first, then a completion.
    let completion = serde_json::json!({
        "id": "chatcmpl-otlp", "object": "chat.completion", "model": "mock-model-2024",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    });
    let llm_server = Script::new([
        Reply::body(
            503,
            br#"{"error":{"type":"service_unavailable","message":"down"}}"#,
        ),
        Reply::json(200, completion),
    ])
    .keep_alive()
    .start()
    .await
    .expect("mock LLM provider");
    let llm = Arc::new(
        OpenAiProvider::builder(llm_server.base_url(), "mock-model")
            .transport(
                Transport::default()
                    .no_proxy()
                    .timeout(Duration::from_secs(5)),
            )
            .build()
            .expect("provider"),
    );

    let tracer = OtlpExport::from_env()
        .protocol(Protocol::HttpProtobuf)
        .endpoint(format!("http://{collector_addr}"))
        .timeout(Duration::from_secs(5))
        .service_name("openarmature-otlp-llm-test")
        .tracer_provider()
        .expect("provider");
    let otel = OtelObserver::builder(&tracer).build();

    let graph = GraphBuilder::new(Doc::default())
        .add_node("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
            let llm = Arc::clone(&llm);
            async move {
                let retry = RetryConfig::default()
                    .max_attempts(2)
                    .backoff(Constant(Duration::ZERO));
                let request = CompletionRequest::new(vec![Message::user("hi")])
                    .retry(LlmRetryConfig::from(retry))
                    .in_node(&ctx);
                let response = llm.complete(&request).await?;
                Ok::<DocUpdate, NodeError>(
                    DocUpdate::default().done(response.content() == Some("hello")),
                )
            }
        })
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .expect("compile");
    let done = otel
        .invoke(
            &graph,
            Doc::default(),
            InvokeOptions::default().correlation_id("req-llm"),
        )
        .await
        .expect("invoke");
    assert!(done.state.done);
    let hits = llm_server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(hits, 2, "503, then the retry");

    tokio::task::spawn_blocking(move || tracer.shutdown())
        .await
        .expect("join")
        .expect("shutdown flushes");
    let (spans, service) = receive(&mut rx, 4).await;
    assert_eq!(spans.len(), 4, "invocation, node, two LLM attempts");
    assert_eq!(
        service,
        Some(AnyValue::StringValue("openarmature-otlp-llm-test".into()))
    );
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };

    let invocation = named(a::INVOCATION_SPAN)[0];
    assert_eq!(
        string(invocation, a::INVOCATION_ID).as_deref(),
        Some(done.invocation_id.as_str())
    );
    assert_eq!(
        string(invocation, a::GRAPH_ENTRY_NODE).as_deref(),
        Some("ask")
    );
    assert_eq!(status_code(invocation), 1, "OK");

    let node = named("ask")[0];
    assert_eq!(node.parent_span_id, invocation.span_id);
    assert_eq!(node.trace_id, invocation.trace_id);
    assert_eq!(int(node, a::NODE_ATTEMPT_INDEX), Some(0));
    assert_eq!(status_code(node), 1, "the call succeeded: the node is OK");

    let mut attempts = named(a::LLM_SPAN);
    attempts.sort_by_key(|s| int(s, a::LLM_ATTEMPT_INDEX));
    assert_eq!(attempts.len(), 2);
    let logical = format!("{}:ask@0#0", done.invocation_id);
    for (i, span) in attempts.iter().enumerate() {
        assert_eq!(int(span, a::LLM_ATTEMPT_INDEX), Some(i as i64));
        assert_eq!(span.parent_span_id, node.span_id, "attempts are siblings");
        assert_eq!(span.trace_id, invocation.trace_id);
        assert_eq!(
            string(span, a::LLM_LOGICAL_CALL_ID).as_deref(),
            Some(logical.as_str()),
            "one logical call"
        );
        assert_eq!(string(span, a::LLM_MODEL).as_deref(), Some("mock-model"));
        assert_eq!(string(span, a::GEN_AI_SYSTEM).as_deref(), Some("openai"));
        assert_eq!(string(span, a::CORRELATION_ID).as_deref(), Some("req-llm"));
    }
    let (failed, retried) = (attempts[0], attempts[1]);
    assert_eq!(string(failed, a::LLM_RETRY_REASON), None);
    assert_eq!(status_code(failed), 2, "ERROR");
    assert_eq!(
        string(failed, a::ERROR_CATEGORY).as_deref(),
        Some("provider_unavailable")
    );
    assert_eq!(
        string(retried, a::LLM_RETRY_REASON).as_deref(),
        Some("transient")
    );
    assert_eq!(status_code(retried), 1, "OK");
    assert_eq!(string(retried, a::ERROR_CATEGORY), None);
    assert_eq!(int(retried, a::LLM_USAGE_TOTAL_TOKENS), Some(9));
    assert_eq!(
        string(retried, a::LLM_FINISH_REASON).as_deref(),
        Some("stop")
    );
    assert_eq!(
        string(retried, a::GEN_AI_RESPONSE_MODEL).as_deref(),
        Some("mock-model-2024")
    );
}

/// Counts the exports it forwards to the default client.
#[derive(Debug)]
struct Counting {
    inner: openarmature_observability::export::ReqwestBlockingClient,
    sent: Arc<AtomicU32>,
}

impl opentelemetry_http::HttpClient for Counting {
    fn send_bytes<'s, 'f>(
        &'s self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<
                        opentelemetry_http::Response<opentelemetry_http::Bytes>,
                        opentelemetry_http::HttpError,
                    >,
                > + Send
                + 'f,
        >,
    >
    where
        's: 'f,
        Self: 'f,
    {
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.inner.send_bytes(request)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_supplied_http_client_carries_the_export() {
    let (collector, mut rx) = otlp_support::collector::<ExportTraceServiceRequest>().await;
    let sent = Arc::new(AtomicU32::new(0));
    let inner = reqwest::blocking::Client::builder().no_proxy();
    let inner = tokio::task::spawn_blocking(move || inner.build())
        .await
        .expect("join")
        .expect("client");
    let client = Counting {
        inner: openarmature_observability::export::ReqwestBlockingClient::new(inner),
        sent: Arc::clone(&sent),
    };
    let provider = OtlpExport::from_env()
        .protocol(Protocol::HttpProtobuf)
        .endpoint(format!("http://{}", collector.addr()))
        .http_client(client)
        .tracer_provider()
        .expect("provider");
    let otel = OtelObserver::builder(&provider).build();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("done", |_s: Arc<Doc>, _ctx: NodeCtx| async move {
            Ok(DocUpdate::default().done(true))
        })
        .add_edge("done", END)
        .entry("done")
        .compile()
        .expect("compile");
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .expect("invoke");
    tokio::task::spawn_blocking(move || provider.shutdown())
        .await
        .expect("join")
        .expect("shutdown flushes");
    let (path, req) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("an export within 10 s")
        .expect("collector alive");
    assert_eq!(path, "/v1/traces");
    assert!(!req.resource_spans.is_empty());
    assert!(
        sent.load(Ordering::SeqCst) >= 1,
        "the export went through the caller's client"
    );
}
