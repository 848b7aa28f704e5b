//! The Gemini provider over real HTTP against a 127.0.0.1 server (llm-provider §8.3):
//! endpoint, API-key header, `ready()`, error mapping and the shared call-level retry.

use std::time::Duration;

use openarmature_llm::{
    CompletionRequest, ErrorCategory, GeminiProvider, Message, Provider, RuntimeConfig, Transport,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use serde_json::json;

use crate::support::{Server, Step};

fn provider(server: &Server) -> GeminiProvider {
    GeminiProvider::builder("gemini-test")
        .base_url(server.base_url.replace("/v1", "/v1beta"))
        .api_key("k-123")
        .transport(crate::support::transport())
        .build()
        .unwrap()
}

fn reply(text: &str) -> Step {
    Step::json(
        200,
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}}),
    )
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![Message::system("Be brief."), Message::user("Hi")])
        .config(RuntimeConfig::default().max_tokens(16))
}

#[tokio::test]
async fn posts_generate_content_with_the_key_header() {
    let server = Server::start(vec![reply("Hello")]).await;
    let p = provider(&server);
    let r = p.complete(&request()).await.unwrap();
    assert_eq!(r.content(), Some("Hello"));
    assert_eq!(r.usage.total_tokens, Some(4));
    let head = server.heads()[0].clone();
    assert!(
        head.starts_with("POST /v1beta/models/gemini-test:generateContent HTTP/1.1"),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains("x-goog-api-key: k-123"));
    assert!(!head.to_ascii_lowercase().contains("authorization"));
    assert_eq!(
        server.bodies()[0],
        json!({"systemInstruction": {"parts": [{"text": "Be brief."}]},
               "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
               "generationConfig": {"maxOutputTokens": 16}})
    );
}

#[tokio::test]
async fn ready_reads_the_model_resource() {
    let server = Server::start(vec![
        Step::json(200, json!({"name": "models/gemini-test"})),
        Step::json(
            404,
            json!({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}),
        ),
    ])
    .await;
    let p = provider(&server);
    p.ready().await.unwrap();
    let e = p.ready().await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidModel);
    let heads = server.heads();
    assert!(heads[0].starts_with("GET /v1beta/models/gemini-test HTTP/1.1"));
}

#[tokio::test]
async fn call_level_retry_resends_identical_bytes() {
    let unavailable = Step::json(
        503,
        json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}),
    );
    let server = Server::start(vec![unavailable, reply("ok")]).await;
    let p = provider(&server);
    let retry = RetryConfig::default()
        .max_attempts(2)
        .backoff(Constant(Duration::ZERO));
    let r = p.complete(&request().retry(retry)).await.unwrap();
    assert_eq!(r.content(), Some("ok"));
    let bodies = server.requests();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}

#[tokio::test]
async fn errors_keep_status_and_wait() {
    let server = Server::start(vec![Step::Respond {
        status: 429,
        headers: vec![("Retry-After".into(), "7".into())],
        body: br#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}"#.to_vec(),
    }])
    .await;
    let e = provider(&server).complete(&request()).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderRateLimit);
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(e.error_type(), Some("RESOURCE_EXHAUSTED"));
    assert_eq!(e.to_string(), "quota");
}

#[tokio::test]
async fn stream_and_oversized_bodies_are_refused() {
    let server = Server::start(vec![Step::Chunked { bytes: 4096 }]).await;
    let p = provider(&server);
    assert!(!p.supports_streaming());
    let e = p.complete(&request().stream(true)).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
    let e = p.stream(&request()).response().await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
    assert!(e.to_string().contains("does not support streaming"), "{e}");
    assert_eq!(server.request_count(), 0, "rejected pre-send");
    let small = GeminiProvider::builder("models/gemini-test")
        .base_url(format!("{}beta/", server.base_url))
        .transport(Transport::default().no_proxy().max_response_bytes(1024))
        .build()
        .unwrap();
    assert_eq!(small.model(), "gemini-test");
    let e = small.complete(&request()).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
}

#[test]
fn builder_rejects_bad_inputs() {
    let bad = |b: openarmature_llm::GeminiBuilder| b.build().unwrap_err().category();
    assert_eq!(
        bad(GeminiProvider::builder("m").base_url("ftp://x")),
        ErrorCategory::ProviderInvalidRequest
    );
    assert_eq!(
        bad(GeminiProvider::builder("models/")),
        ErrorCategory::ProviderInvalidRequest
    );
    let p = GeminiProvider::builder("gemini-2.5-flash")
        .api_key("AIza-secret")
        .build()
        .unwrap();
    assert_eq!(
        p.generate_url(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    let debug = format!("{p:?}");
    assert!(!debug.contains("AIza") && debug.contains("<redacted>"));
}
