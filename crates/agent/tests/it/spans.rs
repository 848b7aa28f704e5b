//! The agent's tool calls as OpenTelemetry spans (observability §5.5.12): one
//! `openarmature.tool.call` span per call, under the tools node's span, with the
//! model's tool-call id and, for a rejected call, the agent's category as `error.type`.

use openarmature_agent::{Agent, Conversation, TOOL_ARGUMENTS_INVALID};
use openarmature_graph::InvokeOptions;
use openarmature_llm::Message;
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

use crate::support::*;

fn attr(span: &SpanData, key: &str) -> Option<OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

#[tokio::test]
async fn each_tool_call_is_a_span_under_its_tools_step() {
    let model = scripted(vec![
        calls(&[
            ("c1", "weather", json!({"city": "Lima"})),
            ("c2", "add", json!({"a": "x", "b": 1})),
        ]),
        answer("ok"),
    ]);
    let agent = Agent::builder(model)
        .tool(weather_tool(&counter()))
        .tool(add_tool(&counter()))
        .build()
        .unwrap();
    let graph = agent.graph().unwrap();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = OtelObserver::builder(&provider).build();
    let start = Conversation::new(vec![Message::user("go")]);
    otel.invoke(&graph, start, InvokeOptions::default())
        .await
        .unwrap();
    graph.drain(None).await;
    let spans = exporter.get_finished_spans().unwrap();

    let tool_steps: Vec<&SpanData> = spans.iter().filter(|s| s.name == "tools").collect();
    assert_eq!(tool_steps.len(), 2, "one tools step per call");
    let tool_spans: Vec<&SpanData> = spans.iter().filter(|s| s.name == a::TOOL_SPAN).collect();
    assert_eq!(tool_spans.len(), 2);
    for (span, (id, name)) in tool_spans.iter().zip([("c1", "weather"), ("c2", "add")]) {
        assert_eq!(attr(span, a::TOOL_CALL_ID), Some(id.into()));
        assert_eq!(attr(span, a::TOOL_NAME), Some(name.into()));
        assert!(
            tool_steps
                .iter()
                .any(|step| step.span_context.span_id() == span.parent_span_id),
            "the tool span of {id} is under a tools step"
        );
    }
    assert_eq!(attr(tool_spans[0], a::ERROR_TYPE), None);
    assert_eq!(
        attr(tool_spans[1], a::ERROR_TYPE),
        Some(TOOL_ARGUMENTS_INVALID.as_str().into())
    );
}
