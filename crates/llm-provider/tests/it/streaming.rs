//! llm-provider §5 / §8.1.6 streaming over real HTTP (a 127.0.0.1 SSE server), and
//! the graph-engine §6 `LlmTokenEvent`s a streamed call inside a node dispatches.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::StreamExt;
use openarmature_core::vocab::llm::LlmDeltaKind;
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, ObserverEvent, END};
use openarmature_llm::{
    CompletionRequest, DeltaKind, ErrorCategory, LlmError, Message, Provider, Response,
    RetryReason, StreamEvent, WireRequest,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use serde_json::json;

use crate::support::{sse, Step};

use crate::support::openai as provider;

fn ask() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("hi")])
}

/// One `data:` event per entry; a string entry is sent verbatim.
fn events(raw: &[serde_json::Value]) -> Step {
    Step::Sse {
        events: raw
            .iter()
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
            .collect(),
        gap: Duration::ZERO,
    }
}

#[tokio::test]
async fn a_stream_yields_deltas_as_they_arrive_then_the_assembled_response() {
    let gap = Duration::from_millis(300);
    let (server, p) = provider(vec![sse(&["Hel", "lo ", "world"], gap)]).await;
    let request = ask();
    let mut stream = p.stream(&request);
    let mut deltas = Vec::new();
    let mut first_delta_at = None;
    let mut response = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Delta(d) => {
                first_delta_at.get_or_insert_with(Instant::now);
                deltas.push((d.chunk_index, d.kind, d.text));
            }
            StreamEvent::Completed(r) => response = Some((*r, Instant::now())),
            other => panic!("unexpected {other:?}"),
        }
    }
    let (response, done_at) = response.unwrap();
    assert_eq!(
        deltas,
        [
            (0, DeltaKind::Content, "Hel".to_owned()),
            (1, DeltaKind::Content, "lo ".to_owned()),
            (2, DeltaKind::Content, "world".to_owned()),
        ]
    );
    assert!(
        done_at - first_delta_at.unwrap() >= Duration::from_millis(400),
        "the first delta must arrive before the rest of the stream is sent"
    );
    assert_eq!(response.content(), Some("Hello world"));
    assert_eq!(response.usage.total_tokens, Some(6));
    assert_eq!(response.raw["object"], "chat.completion");
    let body = &server.bodies()[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn complete_with_stream_returns_the_same_response_as_the_atomic_path() {
    let (_s, p) = provider(vec![sse(&["a", "b"], Duration::ZERO)]).await;
    let streamed = p.complete(&ask().stream(true)).await.unwrap();
    assert_eq!(streamed.content(), Some("ab"));
    assert_eq!(streamed.finish_reason.as_str(), "stop");
}

#[tokio::test]
async fn tool_call_fragments_and_reasoning_are_reassembled() {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| json!({"id": "cc", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let (_s, p) = provider(vec![events(&[
        chunk(json!({"reasoning": "Think."}), json!(null)),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "get", "arguments": ""}}]}),
            json!(null),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}), json!(null)),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}), json!("tool_calls")),
        json!("[DONE]"),
    ])])
    .await;
    let tool = openarmature_llm::Tool::new(
        "get",
        "weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    );
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let request = ask().tools(vec![tool]);
    let mut stream = p.stream(&request);
    let mut response: Option<Response> = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Delta(d) => kinds.lock().unwrap().push(d.kind),
            StreamEvent::Completed(r) => response = Some(*r),
            _ => {}
        }
    }
    let response = response.unwrap();
    assert_eq!(*kinds.lock().unwrap(), [DeltaKind::Reasoning]);
    let call = &response.message.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("c1", "get"));
    assert_eq!(call.arguments.as_ref().unwrap()["city"], "Oslo");
    assert_eq!(
        Message::Assistant(response.message.clone()).to_json()["content"],
        json!([{"type": "thinking", "text": "Think."}])
    );
}

#[tokio::test]
async fn broken_streams_fail_with_a_category() {
    let content =
        json!({"choices": [{"index": 0, "delta": {"content": "Par"}, "finish_reason": null}]});
    let cases = [
        (
            vec![
                content.clone(),
                json!({"error": {"code": 503, "message": "overloaded"}}),
            ],
            ErrorCategory::ProviderUnavailable,
        ),
        (
            vec![
                content.clone(),
                json!({"error": {"code": 400, "message": "bad"}}),
            ],
            ErrorCategory::ProviderInvalidRequest,
        ),
        (
            vec![json!("{not json")],
            ErrorCategory::ProviderInvalidResponse,
        ),
        (
            vec![json!({"choices": 3})],
            ErrorCategory::ProviderInvalidResponse,
        ),
        (
            vec![json!({"choices": [{"delta": {"content": 7}}]})],
            ErrorCategory::ProviderInvalidResponse,
        ),
        // Cut off: no finish reason, no usage, no [DONE].
        (vec![content], ErrorCategory::ProviderUnavailable),
    ];
    for (raw, want) in cases {
        let (_s, p) = provider(vec![events(&raw)]).await;
        let e = p.complete(&ask().stream(true)).await.unwrap_err();
        assert_eq!(e.category(), want, "{raw:?}: {e}");
    }
}

#[tokio::test]
async fn a_stream_retried_at_call_level_announces_the_retry() {
    let down = Step::json(503, json!({"error": {"message": "down"}}));
    let (server, p) = provider(vec![down, sse(&["ok"], Duration::ZERO)]).await;
    let retry = RetryConfig::default()
        .max_attempts(2)
        .backoff(Constant(Duration::ZERO));
    let request = ask().retry(retry);
    let items: Vec<StreamEvent> = p
        .stream(&request)
        .map(Result::unwrap)
        .collect::<Vec<_>>()
        .await;
    assert!(matches!(
        items[0],
        StreamEvent::Retry {
            attempt_index: 1,
            reason: RetryReason::Transient
        }
    ));
    assert!(matches!(&items[1], StreamEvent::Delta(d) if d.chunk_index == 0 && d.text == "ok"));
    assert!(matches!(&items[2], StreamEvent::Completed(r) if r.content() == Some("ok")));
    assert_eq!(server.request_count(), 2);
}

state! {
    /// The node's state.
    #[derive(Default, PartialEq)]
    pub struct S => SUpdate {
        /// The answer.
        pub answer: String,
    }
}

#[tokio::test]
async fn a_streamed_call_in_a_node_dispatches_token_events_before_its_completion() {
    let (_s, p) = provider(vec![sse(&["Hel", "lo"], Duration::ZERO)]).await;
    let p = Arc::new(p);
    let graph = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, ctx: NodeCtx| {
            let p = Arc::clone(&p);
            async move {
                let request = ask().stream(true).in_node(&ctx);
                let r = p.complete(&request).await?;
                Ok(SUpdate::default().answer(r.content().unwrap_or_default().to_owned()))
            }
        })
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();
    let (reg, seen) = crate::support::recorder();
    let out = graph
        .invoke_with(S::default(), InvokeOptions::default().observer(reg))
        .await
        .unwrap();
    assert_eq!(out.state.answer, "Hello");
    graph.drain(None).await;
    let seen = seen.lock().unwrap();
    let tokens: Vec<_> = seen
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmToken(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tokens.len(), 2);
    assert_eq!(
        (tokens[0].chunk_index, tokens[0].delta.as_str()),
        (0, "Hel")
    );
    assert_eq!(tokens[1].delta_kind, LlmDeltaKind::Content);
    assert_eq!(tokens[0].model, "gpt-test");
    let completion = seen
        .iter()
        .position(|e| matches!(&**e, ObserverEvent::LlmCompletion(_)))
        .unwrap();
    let last_token = seen
        .iter()
        .rposition(|e| matches!(&**e, ObserverEvent::LlmToken(_)))
        .unwrap();
    assert!(last_token < completion);
    let ObserverEvent::LlmCompletion(done) = &*seen[completion] else {
        unreachable!()
    };
    assert_eq!(&*done.request.call_id, tokens[0].call_id);
}

/// A mapping without streaming: the trait's defaults.
struct AtomicOnly(AtomicUsize);

impl Provider for AtomicOnly {
    fn model(&self) -> &str {
        "m"
    }
    fn provider_name(&self) -> &str {
        "atomic-only"
    }
    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }
    fn send<'a>(&'a self, _: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(LlmError::unavailable("not reached in this test")) })
    }
}

#[tokio::test]
async fn a_mapping_without_streaming_rejects_a_streamed_call_before_sending() {
    let p = AtomicOnly(AtomicUsize::new(0));
    assert!(!p.supports_streaming());
    let e = p.complete(&ask().stream(true)).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
    assert!(e.to_string().contains("does not support streaming"), "{e}");
    let e = p.stream(&ask()).response().await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
    assert_eq!(
        p.0.load(Ordering::SeqCst),
        0,
        "no fallback to an atomic send"
    );
}
