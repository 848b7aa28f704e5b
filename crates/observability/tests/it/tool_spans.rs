//! observability §5.5.11 / §5.5.12 with graph-engine §6's tool-call scope: one
//! `openarmature.tool.call` span per instrumented execution under the calling node's
//! span, payload gated, failures with `error.type` and an ERROR status; exactly one
//! typed event per execution; the scope returns the tool's outcome unchanged; the
//! start/complete form reports from a later point with the identity of its entry.

use std::sync::Arc;

use openarmature_graph::{
    state, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, NodeError, ObserverEvent, END,
};
use openarmature_llm::{ToolExecution, ToolScopeExt};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use opentelemetry::trace::Status;
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::SpanData;
use serde_json::json;

use crate::support::{attr, span_capture};
use openarmature_testkit::observe::{recording, Events};

state! {
    /// What the node kept of its tool calls.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// The weather tool's temperature.
        pub temp: i64,
        /// The failing tool's error text.
        pub tool_error: String,
    }
}

#[derive(Debug, thiserror::Error)]
#[error("upstream timed out")]
struct TimeoutError;

impl openarmature_graph::Categorized for TimeoutError {}

fn graph(events: &Events) -> CompiledGraph<Doc> {
    GraphBuilder::new(Doc::default())
        .add_node("agent", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            let weather = ToolExecution::new("get_weather")
                .tool_call_id("call_1")
                .arguments(json!({"city": "Paris"}));
            let temp = ctx
                .instrument_tool(weather, async { Ok::<_, TimeoutError>(json!({"c": 21})) })
                .await?;
            let failing = ToolExecution::new("lookup").arguments(json!({"q": "x"}));
            let err = ctx
                .instrument_tool(failing, async { Err::<i64, _>(TimeoutError) })
                .await
                .unwrap_err();
            // The start/complete form: the outcome is reported later, from another task.
            let scope = ctx.start_tool(ToolExecution::new("deferred"));
            tokio::spawn(async move { scope.fail(Some("E42"), "") })
                .await
                .unwrap();
            Ok::<_, NodeError>(
                DocUpdate::default()
                    .temp(temp["c"].as_i64().unwrap())
                    .tool_error(err.to_string()),
            )
        })
        .add_edge("agent", END)
        .entry("agent")
        .observer(recording("events", events))
        .compile()
        .unwrap()
}

async fn run(payload: bool) -> (Doc, Vec<SpanData>, Vec<Arc<ObserverEvent>>) {
    let events: Events = Arc::default();
    let graph = graph(&events);
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider)
        .disable_provider_payload(!payload)
        .build();
    let done = otel
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    graph.drain(None).await;
    let events = events.lock().unwrap().clone();
    (done.state, exporter.get_finished_spans().unwrap(), events)
}

fn tool_span<'s>(spans: &'s [SpanData], name: &str) -> &'s SpanData {
    spans
        .iter()
        .find(|s| {
            s.name == a::TOOL_SPAN
                && attr(s, a::TOOL_NAME) == Some(OtelValue::from(name.to_owned()))
        })
        .unwrap_or_else(|| panic!("no tool span for {name}"))
}

#[tokio::test]
async fn each_execution_makes_one_span_under_the_node_with_payload_gated() {
    let (state, spans, _) = run(true).await;
    assert_eq!(
        (state.temp, state.tool_error.as_str()),
        (21, "upstream timed out")
    );
    let node = spans.iter().find(|s| s.name == "agent").unwrap();
    let tools: Vec<&SpanData> = spans.iter().filter(|s| s.name == a::TOOL_SPAN).collect();
    assert_eq!(tools.len(), 3);
    for t in &tools {
        assert_eq!(t.parent_span_id, node.span_context.span_id());
        assert!(t.start_time >= node.start_time && t.end_time <= node.end_time);
        assert!(t
            .attributes
            .iter()
            .all(|kv| !kv.key.as_str().starts_with("gen_ai.")));
    }
    let ok = tool_span(&spans, "get_weather");
    assert_eq!(ok.status, Status::Ok);
    assert_eq!(attr(ok, a::TOOL_CALL_ID), Some("call_1".into()));
    assert_eq!(
        attr(ok, a::TOOL_CALL_ARGUMENTS),
        Some(r#"{"city":"Paris"}"#.into())
    );
    assert_eq!(attr(ok, a::TOOL_CALL_RESULT), Some(r#"{"c":21}"#.into()));
    assert_eq!(attr(ok, a::ERROR_TYPE), None);

    let failed = tool_span(&spans, "lookup");
    assert!(
        matches!(failed.status, Status::Error { ref description } if description == "upstream timed out")
    );
    assert_eq!(attr(failed, a::ERROR_TYPE), Some("TimeoutError".into()));
    assert_eq!(
        attr(failed, a::TOOL_CALL_ID),
        None,
        "standalone: no call id"
    );
    assert_eq!(attr(failed, a::TOOL_CALL_RESULT), None);
    let exception = failed
        .events
        .iter()
        .find(|e| e.name == a::EXCEPTION_EVENT)
        .unwrap();
    assert!(exception
        .attributes
        .iter()
        .any(|kv| kv.key.as_str() == a::EXCEPTION_TYPE && kv.value == "TimeoutError".into()));

    let deferred = tool_span(&spans, "deferred");
    assert_eq!(attr(deferred, a::ERROR_TYPE), Some("E42".into()));
}

#[tokio::test]
async fn payload_off_keeps_identity_and_drops_arguments_and_result() {
    let (_, spans, _) = run(false).await;
    let ok = tool_span(&spans, "get_weather");
    assert_eq!(attr(ok, a::TOOL_CALL_ID), Some("call_1".into()));
    assert_eq!(attr(ok, a::TOOL_CALL_ARGUMENTS), None);
    assert_eq!(attr(ok, a::TOOL_CALL_RESULT), None);
}

#[tokio::test]
async fn one_typed_event_per_execution_with_entry_identity() {
    let (_, _, events) = run(true).await;
    let successes: Vec<_> = events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::ToolCall(t) => Some(t),
            _ => None,
        })
        .collect();
    let failures: Vec<_> = events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::ToolCallFailed(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!((successes.len(), failures.len()), (1, 2));
    let ok = successes[0];
    assert_eq!(ok.call.tool_name, "get_weather");
    assert_eq!(ok.call.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(ok.call.arguments, Some(json!({"city": "Paris"})));
    assert_eq!(ok.result, json!({"c": 21}));
    assert_eq!(&*ok.call.site.node_name, "agent");
    assert_eq!(ok.call.site.lineage.attempt_index, 0);
    assert!(ok.call.latency_ms.is_some_and(|ms| ms >= 0.0));
    let deferred = failures
        .iter()
        .find(|f| f.call.tool_name == "deferred")
        .unwrap();
    assert_eq!(deferred.error_type.as_deref(), Some("E42"));
    assert_eq!(deferred.error_message, "");
    assert_eq!(&*deferred.call.site.node_name, "agent");
    // Every execution has its own call id.
    let mut ids: Vec<&str> = successes
        .iter()
        .map(|e| &*e.call.call_id)
        .chain(failures.iter().map(|e| &*e.call.call_id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn langfuse_renders_each_execution_as_a_tool_observation() {
    use openarmature_observability::langfuse::{LangfuseObserver, Level, ObservationType};
    let events: Events = Arc::default();
    let graph = graph(&events);
    let langfuse = LangfuseObserver::builder()
        .disable_provider_payload(false)
        .build();
    langfuse
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let traces = langfuse.traces();
    assert_eq!(traces.len(), 1);
    let all = traces[0].all_observations();
    let node = all.iter().find(|o| o.name == "agent").unwrap();
    assert_eq!(
        node.children.len(),
        3,
        "the three tool observations nest under the node"
    );
    let by_tool = |name: &str| {
        node.children
            .iter()
            .find(|o| o.metadata.get("openarmature_tool_name") == Some(&json!(name)))
            .unwrap_or_else(|| panic!("no observation for {name}"))
    };
    let ok = by_tool("get_weather");
    assert_eq!(ok.kind, ObservationType::Tool);
    assert_eq!(ok.level, Level::Default);
    assert_eq!(
        ok.metadata.get("openarmature_tool_call_id"),
        Some(&json!("call_1"))
    );
    assert_eq!(ok.input, Some(json!({"city": "Paris"})));
    assert_eq!(ok.output, Some(json!({"c": 21})));
    let failed = by_tool("lookup");
    assert_eq!(failed.level, Level::Error);
    assert_eq!(
        failed.metadata.get("error_type"),
        Some(&json!("TimeoutError"))
    );
    assert_eq!(
        failed.metadata.get("error_message"),
        Some(&json!("upstream timed out"))
    );
    assert_eq!(failed.status_message.as_deref(), Some("upstream timed out"));
    assert_eq!(failed.output, None);
}
