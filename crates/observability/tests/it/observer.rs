//! observability §4–§7 through the public API, on an in-memory exporter: LLM attempt
//! spans, the `disable_llm_spans` opt-out, a graph-attached observer, log
//! correlation, and §3.4 metadata rejection.

use std::sync::Arc;

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmFailure, LlmRequestSummary, LlmResponseSummary,
    LlmUsage, RetryReason,
};
use openarmature_graph::{CompiledGraph, InvokeOptions, NodeCtx, ObserverEvent, Registration};
use openarmature_observability::attributes as a;
use openarmature_observability::{InvokeError, OtelObserver, OtelObserverBuilder};
use opentelemetry::logs::Severity;
use opentelemetry::trace::Status;
use opentelemetry::Value;
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::json;

use crate::support::single_node;
use crate::support::{attr, named, report_completed, span_capture, text, Doc, DocUpdate};

/// A node that reports a two-attempt LLM call (a transient failure, then a reply).
fn llm_graph() -> CompiledGraph<Doc> {
    single_node::<Doc>("ask", |_s: Arc<Doc>, ctx: NodeCtx| async move {
        let site = ctx.call_site();
        let request = LlmRequestSummary::new(
            "openai",
            "gpt-test",
            "call-1",
            vec![json!({"role": "user", "content": "hi"})],
            json!({"temperature": 0.5}).as_object().cloned().unwrap(),
            serde_json::Map::new(),
        );
        let failed = LlmAttemptOutcome::Failed {
            failure: LlmFailure::new("provider_unavailable", None, "503"),
            response: None,
        };
        let usage = LlmUsage {
            prompt_tokens: Some(5),
            completion_tokens: Some(1),
            total_tokens: Some(6),
            ..LlmUsage::default()
        };
        let reply = LlmAttemptOutcome::Completed(Arc::new(LlmResponseSummary::new(
            Some("gpt-test-2024".into()),
            Some("cc-1".into()),
            usage,
            Some("stop".into()),
            Some("hello".into()),
            None,
        )));
        for (i, reason, outcome) in [(0, None, failed), (1, Some(RetryReason::Transient), reply)] {
            ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
                site.clone(),
                request.clone(),
                i,
                reason,
                outcome,
                Some(3.0),
            )));
        }
        Ok(DocUpdate::default().done(true))
    })
}

#[tokio::test]
async fn llm_attempts_are_sibling_spans_under_the_calling_node() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let done = otel
        .invoke(&llm_graph(), Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let node = named(&spans, "ask")[0];
    let mut attempts = named(&spans, a::LLM_SPAN);
    attempts.sort_by_key(|s| attr(s, a::LLM_ATTEMPT_INDEX).map(|v| v.to_string()));
    assert_eq!(attempts.len(), 2);
    for s in &attempts {
        assert_eq!(s.parent_span_id, node.span_context.span_id());
        // An emitter without a logical call id: the call is its own logical call.
        assert_eq!(
            attr(s, a::LLM_LOGICAL_CALL_ID),
            Some(Value::from(format!("{}:call-1", done.invocation_id)))
        );
        assert_eq!(attr(s, a::LLM_MODEL), Some(Value::from("gpt-test")));
        assert_eq!(attr(s, "gen_ai.request.temperature"), Some(Value::F64(0.5)));
    }
    let (first, second) = (attempts[0], attempts[1]);
    assert_eq!(attr(first, a::LLM_ATTEMPT_INDEX), Some(Value::I64(0)));
    assert_eq!(
        attr(first, a::LLM_RETRY_REASON),
        None,
        "attempt 0 has no reason"
    );
    assert_eq!(
        first.status,
        Status::error("provider_unavailable"),
        "each attempt carries its own outcome"
    );
    assert_eq!(
        attr(first, a::ERROR_CATEGORY),
        Some(Value::from("provider_unavailable"))
    );
    assert_eq!(
        attr(second, a::LLM_RETRY_REASON),
        Some(Value::from("transient"))
    );
    assert_eq!(second.status, Status::Ok);
    assert_eq!(attr(second, a::LLM_USAGE_TOTAL_TOKENS), Some(Value::I64(6)));
    assert_eq!(
        attr(second, a::GEN_AI_RESPONSE_MODEL),
        Some(Value::from("gpt-test-2024"))
    );
    assert_eq!(
        attr(second, a::LLM_CACHE_READ_INPUT_TOKENS),
        None,
        "not reported"
    );
}

#[tokio::test]
async fn disable_llm_spans_keeps_every_other_span() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider)
        .disable_llm_spans(true)
        .disable_genai_semconv(true)
        .build();
    otel.invoke(&llm_graph(), Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["ask", a::INVOCATION_SPAN]);
}

fn simple_graph() -> CompiledGraph<Doc> {
    single_node::<Doc>("only", |_s: Arc<Doc>, _ctx: NodeCtx| async move {
        Ok(DocUpdate::default().done(true))
    })
}

#[tokio::test]
async fn a_graph_attached_observer_closes_invocations_in_close_all() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let graph = simple_graph();
    graph.attach_observer(Registration::new("otel", otel.clone()));
    graph.invoke(Doc::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(
        named(&exporter.get_finished_spans().unwrap(), "only").len(),
        1
    );
    otel.close_all();
    let spans = exporter.get_finished_spans().unwrap();
    let root = named(&spans, a::INVOCATION_SPAN)[0];
    assert_eq!(root.status, Status::Ok);
    assert_eq!(attr(root, a::GRAPH_ENTRY_NODE), Some(Value::from("only")));
    let minted = attr(root, a::CORRELATION_ID).expect("a correlation id is minted");
    assert_eq!(
        attr(named(&spans, "only")[0], a::CORRELATION_ID),
        Some(minted)
    );
}

#[tokio::test]
async fn log_records_carry_their_node_span_and_correlation_id() {
    let (exporter, provider) = span_capture();
    let logs = InMemoryLogExporter::default();
    let logger_provider = SdkLoggerProvider::builder()
        .with_simple_exporter(logs.clone())
        .build();
    let otel = OtelObserver::builder(&provider)
        .logger_provider(&logger_provider)
        .build();
    let logging = otel.clone();
    let graph = single_node::<Doc>("talk", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let otel = logging.clone();
        async move {
            otel.log(&ctx, Severity::Info, "hello from talk");
            Ok(DocUpdate::default().done(true))
        }
    });
    let options = InvokeOptions {
        correlation_id: Some("corr-7".into()),
        metadata: json!({"tenantId": "acme"}).as_object().cloned().unwrap(),
        ..InvokeOptions::default()
    };
    otel.invoke(&graph, Doc::default(), options).await.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let talk = named(&spans, "talk")[0];
    let emitted = logs.get_emitted_logs().unwrap();
    assert_eq!(emitted.len(), 1);
    let record = &emitted[0].record;
    let cx = record.trace_context().expect("trace context");
    assert_eq!(cx.span_id, talk.span_context.span_id());
    assert_eq!(cx.trace_id, talk.span_context.trace_id());
    let attrs: Vec<(String, String)> = record
        .attributes_iter()
        .map(|(k, v)| (k.to_string(), format!("{v:?}")))
        .collect();
    assert!(attrs
        .iter()
        .any(|(k, v)| k == a::CORRELATION_ID && v.contains("corr-7")));
    assert!(attrs
        .iter()
        .any(|(k, v)| k == "openarmature.user.tenantId" && v.contains("acme")));
}

#[tokio::test]
async fn reserved_metadata_is_rejected_before_anything_runs() {
    let (exporter, provider) = span_capture();
    let otel: OtelObserver = OtelObserverBuilder::from_tracer(
        opentelemetry::trace::TracerProvider::tracer(&provider, "custom"),
    )
    .build();
    let options = InvokeOptions {
        metadata: json!({"openarmature.user.x": 1})
            .as_object()
            .cloned()
            .unwrap(),
        ..InvokeOptions::default()
    };
    let err = otel
        .invoke(&simple_graph(), Doc::default(), options)
        .await
        .unwrap_err();
    assert!(matches!(err, InvokeError::Metadata(_)));
    assert_eq!(err.category(), "invocation_metadata_invalid");
    assert!(exporter.get_finished_spans().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_invoke_still_closes_the_invocation_span() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let graph = single_node::<Doc>("stuck", |_s: Arc<Doc>, _ctx: NodeCtx| async move {
        std::future::pending::<()>().await;
        Ok(DocUpdate::default())
    });
    let run = otel.invoke(&graph, Doc::default(), InvokeOptions::default());
    let timed_out = tokio::time::timeout(std::time::Duration::from_secs(1), run).await;
    assert!(timed_out.is_err());
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(named(&spans, a::INVOCATION_SPAN).len(), 1);
}

/// A node reporting one attempt whose request is `content` and whose reply is "hello".
fn payload_graph(content: String) -> CompiledGraph<Doc> {
    single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let content = content.clone();
        async move {
            let request = LlmRequestSummary::new(
                "openai",
                "gpt-test",
                "call-1",
                vec![json!({"role": "user", "content": content})],
                serde_json::Map::new(),
                json!({"repetition_penalty": 1.05})
                    .as_object()
                    .cloned()
                    .unwrap(),
            );
            let reply = LlmResponseSummary::new(
                None,
                None,
                LlmUsage::default(),
                Some("tool_calls".into()),
                Some("hello".into()),
                Some(vec![
                    json!({"id": "c1", "name": "search", "arguments": {"q": "x"}}),
                ]),
            );
            report_completed(&ctx, request, reply, 1.0);
            Ok(DocUpdate::default().done(true))
        }
    })
}

/// Runs [`payload_graph`] over `content` under `otel`; the spans `exporter` got.
async fn payload_spans(
    otel: &OtelObserver,
    exporter: &InMemorySpanExporter,
    content: String,
) -> Vec<SpanData> {
    otel.invoke(
        &payload_graph(content),
        Doc::default(),
        InvokeOptions::default(),
    )
    .await
    .unwrap();
    exporter.get_finished_spans().unwrap()
}

#[tokio::test]
async fn payload_is_off_by_default_and_capped_when_on() {
    let (exporter, default_tracing) = span_capture();
    let otel = OtelObserver::builder(&default_tracing).build();
    let spans = payload_spans(&otel, &exporter, "hi".into()).await;
    let llm = named(&spans, a::LLM_SPAN)[0];
    for key in [
        a::LLM_INPUT_MESSAGES,
        a::LLM_OUTPUT_CONTENT,
        a::LLM_OUTPUT_TOOL_CALLS,
        a::LLM_REQUEST_EXTRAS,
    ] {
        assert_eq!(attr(llm, key), None, "{key} is payload");
    }
    // The identity projections are not payload.
    assert_eq!(
        attr(llm, a::LLM_OUTPUT_TOOL_CALLS_COUNT),
        Some(Value::I64(1))
    );

    let (exporter, tracing) = span_capture();
    let otel = OtelObserver::builder(&tracing)
        .disable_provider_payload(false)
        .payload_byte_cap(256)
        .unwrap()
        .build();
    let long = "日本".repeat(100);
    let spans = payload_spans(&otel, &exporter, long.clone()).await;
    let llm = named(&spans, a::LLM_SPAN)[0];
    let messages = text(llm, a::LLM_INPUT_MESSAGES).unwrap();
    let full = format!(r#"[{{"content":"{long}","role":"user"}}]"#);
    let marker = format!("…[truncated, {} bytes total]", full.len());
    assert!(messages.len() <= 256);
    let prefix = messages.strip_suffix(&marker).expect("the marker ends it");
    assert!(full.starts_with(prefix));
    assert_eq!(text(llm, a::LLM_OUTPUT_CONTENT).as_deref(), Some("hello"));
    assert_eq!(
        text(llm, a::LLM_OUTPUT_TOOL_CALLS).as_deref(),
        Some(r#"[{"arguments":{"q":"x"},"id":"c1","name":"search"}]"#)
    );
    assert_eq!(
        text(llm, a::LLM_REQUEST_EXTRAS).as_deref(),
        Some(r#"{"repetition_penalty":1.05}"#)
    );
}

#[test]
fn a_payload_cap_below_256_bytes_is_rejected() {
    let (_exporter, provider) = span_capture();
    let err = OtelObserver::builder(&provider)
        .payload_byte_cap(255)
        .unwrap_err();
    assert_eq!(err.requested, 255);
}

#[tokio::test]
async fn a_registration_renders_the_invocation_from_lifecycle_events() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let graph = single_node::<Doc>("boom", |_s: Arc<Doc>, _ctx: NodeCtx| async move {
        Err::<DocUpdate, _>("kaput".into())
    });
    graph.attach_observer(otel.registration());
    let times: Arc<std::sync::Mutex<Vec<std::time::SystemTime>>> = Arc::default();
    let sink = Arc::clone(&times);
    graph.attach_observer(Registration::new(
        "times",
        openarmature_graph::observer_fn(move |e: Arc<ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                if let Some(n) = e.as_node() {
                    sink.lock().unwrap().push(n.at);
                }
                Ok(())
            }
        }),
    ));
    let options = InvokeOptions {
        metadata: json!({"tenantId": "acme"}).as_object().cloned().unwrap(),
        ..InvokeOptions::default()
    };
    assert!(graph.invoke_with(Doc::default(), options).await.is_err());
    graph.drain(None).await;
    // No close_all: the `completed` lifecycle event closed the invocation span.
    let spans = exporter.get_finished_spans().unwrap();
    let root = named(&spans, a::INVOCATION_SPAN)[0];
    assert_eq!(root.status, Status::error("node_exception"));
    assert_eq!(attr(root, a::GRAPH_ENTRY_NODE), Some(Value::from("boom")));
    assert_eq!(
        attr(root, "openarmature.user.tenantId"),
        Some(Value::from("acme"))
    );
    let node = named(&spans, "boom")[0];
    let times = times.lock().unwrap();
    assert_eq!(
        (node.start_time, node.end_time),
        (times[0], times[1]),
        "node spans take the events' timestamps"
    );
    assert!(root.start_time <= node.start_time && node.end_time <= root.end_time);
}
