//! An API key never leaves through what the client reports: a server echoing the key
//! in an error body (as OpenAI's "Incorrect API key provided: sk-…" does) or in a
//! successful body cannot put it into an error's `Display` / `Debug`, its cause chain,
//! or a response's raw body (what payload capture exports). Each provider.

use std::time::Duration;

use openarmature_llm::{
    AnthropicProvider, CompletionRequest, GeminiProvider, LlmError, Message, OpenAiProvider,
    Provider, RuntimeConfig, Transport,
};
use openarmature_testkit::{MockServer, Reply, Script};
use serde_json::json;

const KEY: &str = "sk-SECRET-0123456789abcdef";

fn transport() -> Transport {
    Transport::default()
        .no_proxy()
        .timeout(Duration::from_secs(5))
}

fn everything(e: &LlmError) -> String {
    let mut all = format!("{e} {e:?}");
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        all.push_str(&format!(" {c} {c:?}"));
        cause = c.source();
    }
    all
}

async fn echoing(ok: serde_json::Value) -> MockServer {
    let echo = json!({"error": {"message": format!("Incorrect API key provided: {KEY}"),
        "type": "invalid_request_error", "code": "invalid_api_key"}});
    Script::new([Reply::json(401, echo), Reply::json(200, ok)])
        .start()
        .await
        .unwrap()
}

async fn check<P: Provider + std::fmt::Debug>(provider: &P, server: &MockServer, key_header: &str) {
    let request = CompletionRequest::new(vec![Message::user("hi")])
        .config(RuntimeConfig::default().max_tokens(16));
    let err = provider.complete(&request).await.unwrap_err();
    let text = everything(&err);
    assert!(!text.contains(KEY), "the key leaked: {text}");
    assert!(
        text.contains("[REDACTED]"),
        "the echo was not kept, redacted: {text}"
    );
    let ok = provider.complete(&request).await.unwrap();
    assert!(
        !ok.raw.to_string().contains(KEY),
        "the key is in the raw body"
    );
    assert!(!format!("{ok:?}").contains(KEY));
    assert!(
        !format!("{provider:?}").contains(KEY),
        "the provider's Debug shows the key"
    );
    // The key was really sent (the test is not vacuous).
    let sent = server.requests();
    assert!(sent[0].header(key_header).is_some_and(|v| v.contains(KEY)));
}

#[tokio::test]
async fn openai_compatible() {
    let ok = json!({"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": format!("your key is {KEY}")}}]});
    let server = echoing(ok).await;
    let provider = OpenAiProvider::builder(server.base_url(), "m")
        .api_key(KEY)
        .transport(transport())
        .build()
        .unwrap();
    check(&provider, &server, "authorization").await;
}

#[tokio::test]
async fn anthropic() {
    let ok = json!({"type": "message", "id": "m1", "model": "c", "role": "assistant",
        "content": [{"type": "text", "text": format!("key {KEY}")}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = echoing(ok).await;
    let provider = AnthropicProvider::builder("c")
        .base_url(server.base_url())
        .api_key(KEY)
        .transport(transport())
        .build()
        .unwrap();
    check(&provider, &server, "x-api-key").await;
}

#[tokio::test]
async fn gemini() {
    let ok = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": format!("key {KEY}")}]},
        "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}});
    let server = echoing(ok).await;
    let provider = GeminiProvider::builder("g")
        .base_url(server.base_url())
        .api_key(KEY)
        .transport(transport())
        .build()
        .unwrap();
    check(&provider, &server, "x-goog-api-key").await;
}
