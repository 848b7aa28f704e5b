//! What most observability tests share: the one-field test state, an in-memory span
//! capture, span attribute readers, the LLM summaries a node reports by hand, and a
//! test provider for the real `openarmature-llm` call loop.
#![allow(dead_code)]

use std::sync::Arc;

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmRequestSummary, LlmResponseSummary, LlmUsage,
};
use openarmature_graph::{state, NodeCtx, ObserverEvent};
use openarmature_llm::{AssistantMessage, Response, Usage};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

pub use openarmature_testkit::graphs::single_node;

state! {
    /// The test state.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// Set by the node.
        pub done: bool,
    }
}

/// A private tracer provider exporting every finished span to the returned exporter.
pub fn span_capture() -> (InMemorySpanExporter, SdkTracerProvider) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (exporter, provider)
}

/// The value of the span's attribute `key`.
pub fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// The span's attribute `key` as text.
pub fn text(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

/// The span's attribute `key` when it is an integer.
pub fn int(span: &SpanData, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Value::I64(i)) => Some(i),
        _ => None,
    }
}

/// The spans called `name`.
pub fn named<'s>(spans: &'s [SpanData], name: &str) -> Vec<&'s SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// Token usage with the three counts given.
pub fn usage(prompt: Option<u64>, completion: Option<u64>, total: Option<u64>) -> LlmUsage {
    LlmUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: total,
        ..LlmUsage::default()
    }
}

/// The summary of a request to `openai` / `gpt-test` with no messages, parameters
/// or extras.
pub fn request(call_id: &str) -> LlmRequestSummary {
    LlmRequestSummary::new(
        "openai",
        "gpt-test",
        call_id,
        Vec::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    )
}

/// A reply summary with `usage` and finish reason `finish`, nothing else.
pub fn reply(usage: LlmUsage, finish: &str) -> LlmResponseSummary {
    LlmResponseSummary::new(
        None,
        None,
        usage,
        Some(finish.to_owned().into()),
        None,
        None,
    )
}

/// Reports, from inside the node, attempt 0 of `request` completing with `response`
/// after `latency_ms`.
pub fn report_completed(
    ctx: &NodeCtx,
    request: LlmRequestSummary,
    response: LlmResponseSummary,
    latency_ms: f64,
) {
    ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
        ctx.call_site(),
        request,
        0,
        None,
        LlmAttemptOutcome::Completed(Arc::new(response)),
        Some(latency_ms),
    )));
}

/// A wire reply with text "ok", finish reason `stop` and `usage`.
pub fn ok_response(usage: Usage) -> Response {
    let mut response = Response::of(AssistantMessage::from_text("ok"));
    response.usage = usage;
    response
}

pub use openarmature_llm::testing::ScriptedProvider;
