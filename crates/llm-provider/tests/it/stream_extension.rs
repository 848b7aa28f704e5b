//! Extension 0006 over real HTTP (a 127.0.0.1 SSE server): Anthropic and Gemini
//! streamed calls yield their deltas through `Provider::stream` and end with the
//! assembled response; with the extension off they are rejected before sending.

use std::time::Duration;

use futures::StreamExt;
use openarmature_llm::{
    AnthropicProvider, CompletionRequest, DeltaKind, ErrorCategory, GeminiProvider, Message,
    Provider, RuntimeConfig, StreamEvent, Transport,
};
use serde_json::json;

use crate::support::{Server, Step};

fn events(raw: &[serde_json::Value]) -> Step {
    Step::Sse {
        events: raw.iter().map(ToString::to_string).collect(),
        gap: Duration::ZERO,
    }
}

fn ask() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("hi")])
        .config(RuntimeConfig::default().max_tokens(32))
}

async fn drive(
    p: &dyn Provider,
    request: &CompletionRequest,
) -> (Vec<(DeltaKind, String)>, String) {
    let mut stream = p.stream(request);
    let mut deltas = Vec::new();
    let mut content = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Delta(d) => deltas.push((d.kind, d.text)),
            StreamEvent::Completed(r) => content = r.content().map(str::to_owned),
            other => panic!("unexpected {other:?}"),
        }
    }
    (deltas, content.unwrap())
}

fn anthropic(server: &Server, on: bool) -> AnthropicProvider {
    AnthropicProvider::builder("claude-test")
        .base_url(&server.base_url)
        .transport(Transport::default().no_proxy())
        .stream_extension(on)
        .build()
        .unwrap()
}

fn gemini(server: &Server, on: bool) -> GeminiProvider {
    GeminiProvider::builder("gemini-test")
        .base_url(&server.base_url)
        .transport(Transport::default().no_proxy())
        .stream_extension(on)
        .build()
        .unwrap()
}

/// Streams `ask()` on `p`: the deltas `Hel`, `lo`, then the content `Hello`.
async fn drives_hello(p: &dyn Provider) {
    let (deltas, content) = drive(p, &ask()).await;
    assert_eq!(
        deltas,
        [
            (DeltaKind::Content, "Hel".into()),
            (DeltaKind::Content, "lo".into())
        ]
    );
    assert_eq!(content, "Hello");
}

#[tokio::test]
async fn anthropic_streams_deltas_and_sends_stream_true() {
    let server = Server::start(vec![events(&[
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "model": "claude-test", "content": [], "stop_reason": null, "usage": {"input_tokens": 2, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ])])
    .await;
    let p = anthropic(&server, true);
    assert!(p.supports_streaming());
    drives_hello(&p).await;
    assert_eq!(server.bodies()[0]["stream"], true);
    assert!(
        server.heads()[0].contains("POST /v1/messages"),
        "{:?}",
        server.heads()
    );
}

#[tokio::test]
async fn gemini_streams_on_its_streaming_endpoint() {
    let server = Server::start(vec![events(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2, "totalTokenCount": 4}}),
    ])])
    .await;
    let p = gemini(&server, true);
    drives_hello(&p).await;
    let head = &server.heads()[0];
    assert!(
        head.contains("/models/gemini-test:streamGenerateContent?alt=sse"),
        "{head}"
    );
}

#[tokio::test]
async fn without_the_extension_a_stream_is_rejected_before_sending() {
    let server = Server::start(Vec::new()).await;
    for p in [
        Box::new(anthropic(&server, false)) as Box<dyn Provider>,
        Box::new(gemini(&server, false)),
    ] {
        assert!(!p.supports_streaming());
        let err = p.stream(&ask()).response().await.unwrap_err();
        assert_eq!(err.category(), ErrorCategory::ProviderInvalidRequest);
    }
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_provider_unavailable() {
    let server = Server::start(vec![events(&[
        json!({"type": "message_start", "message": {"id": "m",
        "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 2}}}),
    ])])
    .await;
    let err = anthropic(&server, true)
        .stream(&ask())
        .response()
        .await
        .unwrap_err();
    assert_eq!(err.category(), ErrorCategory::ProviderUnavailable);
}
