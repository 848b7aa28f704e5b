//! A hostile server cannot crash the client: every misbehaviour ends in a typed
//! error with a §7 category (llm-provider §7 / §8.1.3; issue 5).

use std::time::Duration;

use openarmature_llm::{
    CompletionRequest, ErrorCategory, LlmError, Message, OpenAiProvider, Provider, Transport,
};
use serde_json::json;

use crate::support::{completion, Server, Step};

/// An OpenAI-compatible provider bound to `m` at `base_url` over `transport`.
fn provider_at(base_url: &str, transport: Transport) -> OpenAiProvider {
    OpenAiProvider::builder(base_url, "m")
        .transport(transport)
        .build()
        .unwrap()
}

/// One `hi` call on `provider`.
async fn hi(provider: &OpenAiProvider) -> Result<openarmature_llm::Response, LlmError> {
    provider
        .complete(&CompletionRequest::new(vec![Message::user("hi")]))
        .await
}

async fn call(steps: Vec<Step>) -> Result<openarmature_llm::Response, LlmError> {
    let server = Server::start(steps).await;
    let transport = Transport::default()
        .no_proxy()
        .timeout(Duration::from_millis(600));
    hi(&provider_at(&server.base_url, transport)).await
}

async fn category(steps: Vec<Step>) -> ErrorCategory {
    call(steps).await.unwrap_err().category()
}

#[tokio::test]
async fn sane_server_round_trip() {
    let r = call(vec![Step::json(200, completion("hello"))])
        .await
        .unwrap();
    assert_eq!(r.content(), Some("hello"));
}

#[tokio::test]
async fn truncated_json_is_invalid_response() {
    let e = call(vec![Step::body(
        200,
        br#"{"choices": [{"message": {"role": "assis"#,
    )])
    .await
    .unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
    assert!(
        std::error::Error::source(&e).is_some(),
        "keeps the JSON error as cause"
    );
}

#[tokio::test]
async fn wrong_types_are_invalid_response() {
    for body in [
        json!({"choices": "nope"}),
        json!({"choices": [{"message": {"role": "assistant", "content": 5}, "finish_reason": "stop"}]}),
        json!({"choices": [{"message": {"role": "user", "content": "x"}, "finish_reason": "stop"}]}),
        json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": 1}]}, "finish_reason": "tool_calls"}]}),
        json!([1, 2, 3]),
        json!("just a string"),
    ] {
        assert_eq!(
            category(vec![Step::json(200, body.clone())]).await,
            ErrorCategory::ProviderInvalidResponse,
            "{body}"
        );
    }
}

#[tokio::test]
async fn ok_status_with_an_error_body_is_invalid_response() {
    let e = call(vec![Step::json(
        200,
        json!({"error": {"message": "overloaded", "type": "server_error"}}),
    )])
    .await
    .unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
    assert!(e.to_string().contains("overloaded"), "{e}");
}

#[tokio::test]
async fn endless_body_times_out_as_unavailable() {
    let started = std::time::Instant::now();
    assert_eq!(
        category(vec![Step::Endless]).await,
        ErrorCategory::ProviderUnavailable
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn slow_body_hits_the_read_timeout() {
    // Headers promise a body that stalls after one byte.
    let server = Server::start(vec![Step::Stall]).await;
    let transport = Transport::default()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_millis(300));
    let provider = provider_at(&server.base_url, transport);
    let started = std::time::Instant::now();
    let e = hi(&provider).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderUnavailable);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(e.to_string().contains("timed out"), "{e}");
}

#[tokio::test]
async fn ten_megabyte_body_exceeds_the_cap() {
    let ten_mb = 10 * 1024 * 1024;
    // With a Content-Length: rejected before reading.
    let mut body = vec![b' '; ten_mb];
    body[0] = b'{';
    let e = call(vec![Step::body(200, &body)]).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
    assert!(e.to_string().contains("limit"), "{e}");
    // Without one (chunked): rejected once the cap is crossed.
    assert_eq!(
        category(vec![Step::Chunked { bytes: ten_mb }]).await,
        ErrorCategory::ProviderInvalidResponse
    );
}

#[tokio::test]
async fn a_small_cap_is_configurable() {
    let server = Server::start(vec![Step::json(200, completion(&"x".repeat(2000)))]).await;
    let transport = Transport::default().no_proxy().max_response_bytes(1024);
    let provider = provider_at(&server.base_url, transport);
    let e = hi(&provider).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
}

#[tokio::test]
async fn dropped_connections_are_unavailable() {
    assert_eq!(
        category(vec![Step::Drop]).await,
        ErrorCategory::ProviderUnavailable
    );
    assert_eq!(
        category(vec![Step::Truncated {
            declared: 500,
            sent: 10
        }])
        .await,
        ErrorCategory::ProviderUnavailable
    );
    assert_eq!(
        category(vec![Step::Raw(b"this is not HTTP at all\r\n\r\n".to_vec())]).await,
        ErrorCategory::ProviderUnavailable
    );
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let provider = OpenAiProvider::builder("http://127.0.0.1:9/v1", "m")
        .api_key("sk-secret-value")
        .build()
        .unwrap();
    assert!(!format!("{provider:?}").contains("sk-secret-value"));
}

#[tokio::test]
async fn refused_connection_is_unavailable() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let provider = provider_at(&base_url, Transport::default().no_proxy());
    let e = hi(&provider).await.unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderUnavailable);
    assert_eq!(
        provider.ready().await.unwrap_err().category(),
        ErrorCategory::ProviderUnavailable
    );
}

#[tokio::test]
async fn error_statuses_with_hostile_bodies_keep_their_category() {
    let huge = vec![b'x'; 9 * 1024 * 1024];
    assert_eq!(
        category(vec![Step::body(500, &huge)]).await,
        ErrorCategory::ProviderUnavailable
    );
    assert_eq!(
        category(vec![Step::body(401, b"<html>")]).await,
        ErrorCategory::ProviderAuthentication
    );
    assert_eq!(
        category(vec![Step::body(429, b"")]).await,
        ErrorCategory::ProviderRateLimit
    );
}

#[tokio::test]
async fn rate_limit_exposes_retry_after() {
    let date = httpdate_in(90);
    let steps = vec![
        Step::Respond {
            status: 429,
            headers: vec![("Retry-After".into(), "7".into())],
            body: b"{}".to_vec(),
        },
        Step::Respond {
            status: 429,
            headers: vec![("Retry-After".into(), date)],
            body: b"{}".to_vec(),
        },
    ];
    let server = Server::start(steps).await;
    let provider = crate::support::openai_at(&server, "m");
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    let first = provider.complete(&request).await.unwrap_err();
    assert_eq!(first.retry_after(), Some(Duration::from_secs(7)));
    let second = provider.complete(&request).await.unwrap_err();
    let wait = second.retry_after().unwrap();
    assert!(
        wait > Duration::from_secs(80) && wait <= Duration::from_secs(90),
        "{wait:?}"
    );
}

fn httpdate_in(secs: u64) -> String {
    httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(secs))
}
