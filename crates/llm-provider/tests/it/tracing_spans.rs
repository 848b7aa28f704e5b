//! Feature `tracing-spans`: a run seen through a capturing `tracing` layer — a node
//! retried by node-level retry, an LLM call whose wire attempt is retried (real HTTP
//! on 127.0.0.1), a tool call and a degraded node each produce their spans / events,
//! with the expected parents and the OpenTelemetry observer's attribute names.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{state, GraphBuilder, NodeCtx, NodeError, END};
use openarmature_llm::{
    CompletionRequest, Message, OpenAiProvider, Provider, ToolExecution, ToolScopeExt, Transport,
};
use openarmature_pipeline::retry::{Constant, RetryConfig, Sleeper};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::support::{completion, Server, Step};

state! {
    /// The traced graph's state.
    #[derive(Default, PartialEq)]
    pub struct T => TUpdate {
        /// The model's answer.
        pub answer: String,
        /// The tool's result.
        pub weather: String,
        /// Written by the degraded node.
        pub note: String,
    }
}

/// One captured span or event: its name, fields and the index of its parent span.
#[derive(Debug, Clone, Default)]
struct Captured {
    name: String,
    fields: BTreeMap<String, String>,
    parent: Option<usize>,
    level: String,
}

impl Captured {
    fn field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

#[derive(Default)]
struct Capture {
    spans: Mutex<Vec<Captured>>,
    events: Mutex<Vec<Captured>>,
}

/// This layer's index of a span, kept in the span's extensions (span ids are reused).
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Capture>);

impl<S> Layer<S> for Recorder
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut captured = Captured {
            name: attrs.metadata().name().to_owned(),
            parent,
            level: attrs.metadata().level().to_string(),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut captured.fields));
        let mut spans = self.0.spans.lock().unwrap();
        span.extensions_mut().insert(Index(spans.len()));
        spans.push(captured);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(index) = span.extensions().get::<Index>().map(|i| i.0) else {
            return;
        };
        values.record(&mut Fields(&mut self.0.spans.lock().unwrap()[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let parent = ctx
            .event_span(event)
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut captured = Captured {
            name: event.metadata().name().to_owned(),
            parent,
            level: event.metadata().level().to_string(),
            ..Captured::default()
        };
        event.record(&mut Fields(&mut captured.fields));
        self.0.events.lock().unwrap().push(captured);
    }
}

#[derive(Clone, Default)]
struct NoSleep;

impl Sleeper for NoSleep {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

fn retry(max: u32) -> RetryConfig {
    RetryConfig::default()
        .max_attempts(max)
        .backoff(Constant(Duration::from_millis(1)))
        .sleeper(NoSleep)
}

fn down() -> Step {
    Step::json(
        503,
        json!({"error": {"type": "service_unavailable", "message": "down"}}),
    )
}

/// Runs `graph` once with a capturing subscriber as this thread's default (the
/// current-thread test runtime polls every span's future here).
async fn traced(graph: &openarmature_graph::CompiledGraph<T>) -> (T, Recorder) {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let out = graph.invoke(T::default()).await.unwrap();
    (out, recorder)
}

#[tokio::test]
async fn a_run_shows_its_node_llm_tool_and_degradation_spans() {
    // Node attempt 0: wire attempts 0 and 1 both 503 (the call fails, the node is
    // retried); node attempt 1: wire attempt 0 answers.
    let server = Server::start(vec![down(), down(), Step::json(200, completion("hi"))]).await;
    let provider = OpenAiProvider::builder(&server.base_url, "gpt-test")
        .transport(Transport::default().no_proxy())
        .build()
        .unwrap();
    let provider = Arc::new(provider);
    let graph = GraphBuilder::new(T::default())
        .add_node("ask", move |_s: Arc<T>, _ctx: NodeCtx| {
            let provider = Arc::clone(&provider);
            async move {
                let request = CompletionRequest::new(vec![Message::user("hi")]).retry(retry(2));
                let response = provider.complete(&request).await?;
                Ok(TUpdate::default().answer(response.content().unwrap_or_default().to_owned()))
            }
        })
        .node_middleware("ask", RetryMiddleware::new(retry(2)))
        .add_node("act", |_s: Arc<T>, ctx: NodeCtx| async move {
            let call = ToolExecution::new("get_weather")
                .tool_call_id("call_1")
                .arguments(json!({"city": "Paris"}));
            let result = ctx
                .instrument_tool(call, async {
                    tracing::info!("inside the tool");
                    Ok::<_, std::io::Error>(json!({"temperature_c": 21}))
                })
                .await?;
            Ok::<_, NodeError>(TUpdate::default().weather(result.to_string()))
        })
        .add_node("broken", |_s: Arc<T>, _ctx: NodeCtx| async move {
            Err::<TUpdate, NodeError>(NodeError::from(std::io::Error::other("boom")))
        })
        .node_middleware(
            "broken",
            FailureIsolationMiddleware::with_update(
                "broken_degraded",
                TUpdate::default().note("degraded".to_owned()),
            ),
        )
        .add_edge("ask", "act")
        .add_edge("act", "broken")
        .add_edge("broken", END)
        .entry("ask")
        .compile()
        .unwrap();

    let (out, recorder) = traced(&graph).await;
    assert_eq!(out.answer, "hi");
    assert_eq!(out.note, "degraded");
    assert_eq!(server.request_count(), 3);

    let spans = recorder.0.spans.lock().unwrap().clone();
    let events = recorder.0.events.lock().unwrap().clone();
    let named = |name: &str| -> Vec<(usize, &Captured)> {
        spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name == name)
            .collect()
    };

    // The invocation is the root.
    let invocations = named("openarmature.invocation");
    assert_eq!(invocations.len(), 1, "{spans:#?}");
    let (inv, invocation) = invocations[0];
    assert_eq!(invocation.parent, None);
    assert_eq!(
        invocation.field("openarmature.graph.entry_node"),
        Some("ask")
    );
    assert_eq!(invocation.field("otel.status_code"), Some("OK"));
    let id = invocation.field("openarmature.invocation_id").unwrap();

    // One span per node attempt, all children of the invocation.
    let nodes = named("openarmature.node");
    let seen: Vec<(&str, &str, &str)> = nodes
        .iter()
        .map(|(_, s)| {
            (
                s.field("otel.name").unwrap(),
                s.field("openarmature.node.attempt_index").unwrap(),
                s.field("otel.status_code").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ask", "0", "ERROR"),
            ("ask", "1", "OK"),
            ("act", "0", "OK"),
            ("broken", "0", "ERROR"),
        ]
    );
    for (_, node) in &nodes {
        assert_eq!(node.parent, Some(inv));
        assert_eq!(node.field("openarmature.invocation_id"), Some(id));
        assert_eq!(
            node.field("openarmature.node.name"),
            node.field("otel.name")
        );
    }
    let (ask0, ask0_span) = nodes[0];
    assert_eq!(
        ask0_span.field("openarmature.error.category"),
        Some("node_exception")
    );
    let (ask1, _) = nodes[1];
    let (act, _) = nodes[2];
    assert_eq!(nodes[3].1.field("exception.message"), Some("boom"));

    // One span per wire attempt, under the node attempt that made the call.
    let llm = named("openarmature.llm.complete");
    let attempts: Vec<(Option<usize>, &str, Option<&str>)> = llm
        .iter()
        .map(|(_, s)| {
            (
                s.parent,
                s.field("openarmature.llm.attempt_index").unwrap(),
                s.field("openarmature.llm.retry_reason"),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (Some(ask0), "0", None),
            (Some(ask0), "1", Some("transient")),
            (Some(ask1), "0", None),
        ]
    );
    for (_, s) in &llm {
        assert_eq!(s.field("otel.name"), Some("chat gpt-test"));
        assert_eq!(s.field("gen_ai.operation.name"), Some("chat"));
        assert_eq!(s.field("gen_ai.system"), Some("openai"));
        assert_eq!(s.field("gen_ai.request.model"), Some("gpt-test"));
    }
    let failed = llm[0].1;
    assert_eq!(failed.field("otel.status_code"), Some("ERROR"));
    assert_eq!(failed.field("error.type"), Some("provider_unavailable"));
    assert_eq!(failed.field("gen_ai.usage.input_tokens"), None);
    let answered = llm[2].1;
    assert_eq!(answered.field("otel.status_code"), Some("OK"));
    assert_eq!(answered.field("error.type"), None);
    assert_eq!(answered.field("gen_ai.response.model"), Some("m"));
    assert_eq!(answered.field("gen_ai.response.id"), Some("cc-test"));
    assert_eq!(
        answered.field("gen_ai.response.finish_reasons"),
        Some("stop")
    );
    assert_eq!(answered.field("gen_ai.usage.input_tokens"), Some("3"));
    assert_eq!(answered.field("gen_ai.usage.output_tokens"), Some("1"));

    // The tool call: a child of its node attempt; work in the tool nests under it.
    let tools = named("openarmature.tool.call");
    assert_eq!(tools.len(), 1);
    let (tool, tool_span) = tools[0];
    assert_eq!(tool_span.parent, Some(act));
    assert_eq!(
        tool_span.field("otel.name"),
        Some("execute_tool get_weather")
    );
    assert_eq!(tool_span.field("gen_ai.tool.name"), Some("get_weather"));
    assert_eq!(tool_span.field("gen_ai.tool.call.id"), Some("call_1"));
    assert_eq!(tool_span.field("otel.status_code"), Some("OK"));
    let inside: Vec<&Captured> = events
        .iter()
        .filter(|e| e.field("message") == Some("inside the tool"))
        .collect();
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].parent, Some(tool));

    // The degraded node: a WARN event where the failure was caught (outside the
    // failed attempt's span, in the invocation's).
    let degraded: Vec<&Captured> = events
        .iter()
        .filter(|e| e.name == "openarmature.failure_isolation")
        .collect();
    assert_eq!(degraded.len(), 1, "{events:#?}");
    let degraded = degraded[0];
    assert_eq!(degraded.level, "WARN");
    assert_eq!(degraded.parent, Some(inv));
    assert_eq!(
        degraded.field("openarmature.failure_isolation.event_name"),
        Some("broken_degraded")
    );
    assert_eq!(degraded.field("openarmature.node.name"), Some("broken"));
    assert_eq!(degraded.field("exception.message"), Some("boom"));
    assert_eq!(degraded.field("openarmature.node.fan_out_index"), None);
}

fn tool_graph() -> openarmature_graph::CompiledGraph<T> {
    GraphBuilder::new(T::default())
        .add_node("act", |_s: Arc<T>, ctx: NodeCtx| async move {
            let call = ToolExecution::new("lookup");
            let outcome = ctx
                .instrument_tool(call, async {
                    Err::<serde_json::Value, _>(std::io::Error::other("no such city"))
                })
                .await;
            Ok::<_, NodeError>(TUpdate::default().weather(format!("{}", outcome.is_err())))
        })
        .add_edge("act", END)
        .entry("act")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_failed_tool_call_marks_its_span() {
    let (out, recorder) = traced(&tool_graph()).await;
    assert_eq!(out.weather, "true");
    let spans = recorder.0.spans.lock().unwrap();
    let tool = spans
        .iter()
        .find(|s| s.name == "openarmature.tool.call")
        .unwrap();
    assert_eq!(tool.field("otel.status_code"), Some("ERROR"));
    assert_eq!(tool.field("error.type"), Some("Error"));
    assert_eq!(tool.field("exception.message"), Some("no such city"));
    assert_eq!(tool.field("gen_ai.tool.call.id"), None);
}

/// A `Write` into a shared buffer (the fmt layer's writer).
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_fmt_layer_shows_the_run_with_span_timings() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(move || writer.clone())
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE),
    );
    {
        let _default = tracing::subscriber::set_default(subscriber);
        tool_graph().invoke(T::default()).await.unwrap();
    }
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let closes: Vec<&str> = text.lines().filter(|l| l.contains("close")).collect();
    // Innermost first: the tool, its node attempt, the invocation; each with timings.
    assert_eq!(closes.len(), 3, "{text}");
    assert!(closes[0].contains("openarmature.tool.call{"), "{text}");
    assert!(closes[1].contains("openarmature.node{"), "{text}");
    assert!(closes[2].contains("openarmature.invocation{"), "{text}");
    assert!(closes.iter().all(|l| l.contains("time.busy")), "{text}");
    assert!(
        closes[0].contains("openarmature.invocation{")
            && closes[0].contains("gen_ai.tool.name=lookup"),
        "the tool span's line shows its parents and fields: {text}"
    );
}
