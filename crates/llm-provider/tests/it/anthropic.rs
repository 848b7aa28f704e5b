//! The §8.2 Anthropic provider end to end against a scripted server on 127.0.0.1:
//! endpoint, headers, body, response mapping, errors, retries and pre-send rejects.

use std::time::Duration;

use openarmature_llm::anthropic::StructuredOutputPath;
use openarmature_llm::{
    AnthropicProvider, CompletionRequest, ErrorCategory, Message, ModelCapabilities, Provider,
    RuntimeConfig, Transport,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use serde_json::{json, Value};

use crate::support::{Server, Step};

fn reply(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "model": "claude-test", "role": "assistant",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 2}})
}

fn provider(server: &Server) -> AnthropicProvider {
    AnthropicProvider::builder("claude-test")
        .base_url(&server.base_url)
        .api_key("sk-test")
        .transport(crate::support::transport())
        .build()
        .unwrap()
}

fn request(text: &str) -> CompletionRequest {
    CompletionRequest::new(vec![Message::system("Be brief."), Message::user(text)])
        .config(RuntimeConfig::default().max_tokens(32))
}

#[tokio::test]
async fn round_trip_with_headers() {
    let server = Server::start(vec![Step::json(200, reply("Hello back."))]).await;
    let p = provider(&server);
    assert_eq!(p.provider_name(), "anthropic");
    let r = p.complete(&request("Hello.")).await.unwrap();
    assert_eq!(r.content(), Some("Hello back."));
    assert_eq!(r.usage.total_tokens, Some(7));
    assert_eq!(r.response_id(), Some("msg_1"));
    let head = server.heads()[0].to_ascii_lowercase();
    assert!(head.starts_with("post /v1/messages "), "{head}");
    assert!(head.contains("\r\nx-api-key: sk-test"), "{head}");
    assert!(head.contains("\r\nanthropic-version: 2023-06-01"), "{head}");
    assert!(!head.contains("authorization"), "{head}");
    assert_eq!(
        server.bodies()[0],
        json!({"model": "claude-test", "max_tokens": 32, "system": "Be brief.",
            "messages": [{"role": "user", "content": "Hello."}]})
    );
}

#[tokio::test]
async fn pre_send_rejects_send_nothing() {
    let server = Server::start(vec![]).await;
    let p = provider(&server);
    let no_max = CompletionRequest::new(vec![Message::user("x")]);
    let seeded = request("x").config(RuntimeConfig::default().max_tokens(8).seed(3));
    let streamed = request("x").stream(true);
    let smuggled = request("x").config(
        RuntimeConfig::default()
            .max_tokens(8)
            .extra("stream", json!(true)),
    );
    for r in [no_max, seeded, streamed, smuggled] {
        let e = p.complete(&r).await.unwrap_err();
        assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest, "{r:?}");
    }
    // No streaming: the trait's defaults reject `Provider::stream` too (§5).
    assert!(!p.supports_streaming());
    let e = p.stream(&request("x")).response().await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
    assert!(e.to_string().contains("does not support streaming"), "{e}");
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn transient_errors_retry_at_the_call_level() {
    let overloaded = json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "overloaded"}, "request_id": "r"});
    let server = Server::start(vec![
        Step::json(529, overloaded.clone()),
        Step::json(200, reply("ok")),
    ])
    .await;
    let p = provider(&server);
    let retry = RetryConfig::default()
        .max_attempts(2)
        .backoff(Constant(Duration::ZERO));
    let r = p.complete(&request("x").retry(retry)).await.unwrap();
    assert_eq!(r.content(), Some("ok"));
    assert_eq!(server.request_count(), 2);

    let server = Server::start(vec![Step::json(529, overloaded)]).await;
    let e = provider(&server).complete(&request("x")).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderUnavailable);
    assert_eq!(e.status(), Some(529));
    assert_eq!(e.error_type(), Some("overloaded_error"));
}

#[tokio::test]
async fn connection_failure_is_unavailable() {
    let server = Server::start(vec![Step::Drop]).await;
    let e = provider(&server).complete(&request("x")).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderUnavailable);
}

#[tokio::test]
async fn tool_coercion_fallback() {
    let server = Server::start(vec![Step::json(
        200,
        json!({"type": "message", "id": "m", "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "t", "name": "structured_output",
                "input": {"value": 42}}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )])
    .await;
    let p = AnthropicProvider::builder("claude-legacy")
        .base_url(&server.base_url)
        .transport(Transport::default().no_proxy())
        .capabilities(ModelCapabilities::default().native_response_format(false))
        .build()
        .unwrap();
    assert_eq!(
        p.structured_output_path(false),
        StructuredOutputPath::ToolCoercion
    );
    assert_eq!(
        p.structured_output_path(true),
        StructuredOutputPath::PromptFallback
    );
    let schema = json!({"type": "object", "properties": {"value": {"type": "integer"}},
        "required": ["value"]});
    let r = p
        .complete(&request("Generate.").response_schema(schema.clone()))
        .await
        .unwrap();
    assert_eq!(r.parsed, Some(json!({"value": 42})));
    let body = &server.bodies()[0];
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "structured_output"})
    );
    assert_eq!(body["tools"][0]["input_schema"], schema);
    assert!(body.get("output_config").is_none());
}

#[tokio::test]
async fn ready_checks_the_model_entry() {
    let server = Server::start(vec![
        Step::json(200, json!({"type": "model", "id": "claude-test"})),
        Step::json(
            404,
            json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-test"}}),
        ),
    ])
    .await;
    let p = provider(&server);
    p.ready().await.unwrap();
    let e = p.ready().await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidModel);
    let head = server.heads()[0].to_ascii_lowercase();
    assert!(head.starts_with("get /v1/models/claude-test "), "{head}");
}
