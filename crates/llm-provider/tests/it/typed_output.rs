//! Typed structured output (`TypedCompletion::complete_typed`) on the three wire
//! mappings against the scripted server: the derived schema on the wire, a reask
//! through the call-level lane, the answer deserialized into a user struct, and the
//! truncation diagnosis.

use std::time::Duration;

use openarmature_llm::{
    AnthropicProvider, CompletionRequest, ErrorCategory, GeminiProvider, LlmRetryConfig, Message,
    OpenAiProvider, Provider, RuntimeConfig, StructuredOutputInvalid, TypedCompletion,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use serde_json::{json, Value};

use crate::support::{completion, Server, Step};

/// The user's type: bounded strings and list, unknown fields denied.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Person {
    #[schemars(length(max = 40))]
    name: String,
    age: u8,
    #[schemars(length(max = 3))]
    tags: Vec<String>,
}

const BAD: &str = r#"{"name": "Ada", "age": "old"}"#;
const GOOD: &str = r#"{"name": "Ada", "age": 36, "tags": ["math"]}"#;

fn ada() -> Person {
    Person {
        name: "Ada".into(),
        age: 36,
        tags: vec!["math".into()],
    }
}

use crate::support::transport;

/// An OpenAI-compatible provider (`gpt-test`) on `server`.
fn openai(server: &Server) -> OpenAiProvider {
    OpenAiProvider::builder(&server.base_url, "gpt-test")
        .transport(transport())
        .build()
        .unwrap()
}

fn reasking(max_attempts: u32) -> LlmRetryConfig {
    LlmRetryConfig::from(
        RetryConfig::default()
            .max_attempts(max_attempts)
            .backoff(Constant(Duration::ZERO)),
    )
    .reask(|f: &StructuredOutputInvalid| format!("Invalid: {}. Fix it.", f.error_message))
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("Who was Ada Lovelace?")])
        .config(RuntimeConfig::default().max_tokens(64))
        .retry(reasking(3))
}

/// Runs the bad-then-good script and checks the shared outcome.
async fn reask_then_value<P: Provider>(server: &Server, provider: &P) -> Vec<Value> {
    let typed = provider.complete_typed::<Person>(&request()).await.unwrap();
    assert_eq!(typed.value, ada());
    assert_eq!(typed.response.parsed.as_ref().unwrap()["age"], 36);
    assert_eq!(server.request_count(), 2);
    let bodies = server.bodies();
    let second = bodies[1].to_string();
    assert!(second.contains("Invalid: "), "{second}");
    assert!(
        second.contains("old"),
        "the bad reply is in the transcript: {second}"
    );
    bodies
}

fn derived_schema_is(schema: &Value) {
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["name"]["maxLength"], 40);
    assert_eq!(schema["properties"]["tags"]["maxItems"], 3);
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
}

#[tokio::test]
async fn openai_reasks_then_deserializes() {
    let server = Server::start(vec![
        Step::json(200, completion(BAD)),
        Step::json(200, completion(GOOD)),
    ])
    .await;
    let p = openai(&server);
    let bodies = reask_then_value(&server, &p).await;
    let format = &bodies[0]["response_format"]["json_schema"];
    derived_schema_is(&format["schema"]);
    assert_eq!(format["strict"], true);
}

fn anthropic_reply(text: &str) -> Step {
    Step::json(
        200,
        json!({"type": "message", "id": "msg_1", "model": "claude-test", "role": "assistant",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 2}}),
    )
}

#[tokio::test]
async fn anthropic_reasks_then_deserializes() {
    let server = Server::start(vec![anthropic_reply(BAD), anthropic_reply(GOOD)]).await;
    let p = AnthropicProvider::builder("claude-test")
        .base_url(&server.base_url)
        .api_key("sk-test")
        .transport(transport())
        .build()
        .unwrap();
    let bodies = reask_then_value(&server, &p).await;
    derived_schema_is(&bodies[0]["output_config"]["format"]["schema"]);
}

fn gemini_reply(text: &str) -> Step {
    Step::json(
        200,
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}}),
    )
}

#[tokio::test]
async fn gemini_reasks_then_deserializes() {
    let server = Server::start(vec![gemini_reply(BAD), gemini_reply(GOOD)]).await;
    let p = GeminiProvider::builder("gemini-test")
        .base_url(server.base_url.replace("/v1", "/v1beta"))
        .api_key("k-123")
        .transport(transport())
        .build()
        .unwrap();
    let bodies = reask_then_value(&server, &p).await;
    derived_schema_is(&bodies[0]["generationConfig"]["responseJsonSchema"]);
}

fn truncated() -> Step {
    let mut body = completion(r#"{"name": "Ada", "age": 36, "tags": ["ma"#);
    body["choices"][0]["finish_reason"] = json!("length");
    Step::json(200, body)
}

#[tokio::test]
async fn a_truncated_answer_is_diagnosed_and_not_reasked_with_the_same_bound() {
    let server = Server::start(vec![truncated(), Step::json(200, completion(GOOD))]).await;
    let p = openai(&server);
    let error = p.complete_typed::<Person>(&request()).await.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::StructuredOutputInvalid);
    let failure = error.structured_output().unwrap();
    assert!(failure.is_truncated());
    assert!(error.to_string().contains("truncated"), "{error}");
    assert_eq!(
        server.request_count(),
        1,
        "no reask with the same max_tokens"
    );
}

#[tokio::test]
async fn a_truncated_answer_is_reasked_when_the_next_bound_is_raised() {
    let server = Server::start(vec![truncated(), Step::json(200, completion(GOOD))]).await;
    let p = openai(&server);
    let raised = reasking(3).per_attempt_override(vec![RuntimeConfig::default().max_tokens(256)]);
    let request = request().retry(raised);
    let typed = p.complete_typed::<Person>(&request).await.unwrap();
    assert_eq!(typed.value, ada());
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        (&bodies[0]["max_tokens"], &bodies[1]["max_tokens"]),
        (&json!(64), &json!(256))
    );
}

#[tokio::test]
async fn the_derived_schema_replaces_a_hand_written_one() {
    let body = completion(r#"{"name": "A", "age": 300, "tags": []}"#);
    let server = Server::start(vec![Step::json(200, body)]).await;
    let p = openai(&server);
    let request =
        CompletionRequest::new(vec![Message::user("x")]).response_schema(json!({"type": "object"}));
    let error = p.complete_typed::<Person>(&request).await.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::StructuredOutputInvalid);
    assert!(!error.structured_output().unwrap().is_truncated());
    assert!(error.to_string().contains("/age"), "{error}");
    let sent = &server.bodies()[0]["response_format"]["json_schema"]["schema"];
    assert_eq!(sent["properties"]["age"]["maximum"], 255);
}

/// A type whose `Deserialize` is stricter than its schema.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Even {
    #[serde(deserialize_with = "even")]
    #[schemars(with = "u32")]
    n: u32,
}

fn even<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = <u32 as serde::Deserialize>::deserialize(d)?;
    if n % 2 == 0 {
        Ok(n)
    } else {
        Err(serde::de::Error::custom(format!("{n} is odd")))
    }
}

#[tokio::test]
async fn a_schema_valid_answer_that_does_not_deserialize_is_structured_output_invalid() {
    let server = Server::start(vec![
        Step::json(200, completion(r#"{"n": 3}"#)),
        Step::json(200, completion(r#"{"n": 4}"#)),
    ])
    .await;
    let p = openai(&server);
    let request = CompletionRequest::new(vec![Message::user("x")]);
    let error = p.complete_typed::<Even>(&request).await.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::StructuredOutputInvalid);
    assert!(error.to_string().contains("3 is odd"), "{error}");
    assert_eq!(
        error.structured_output().unwrap().output_content,
        r#"{"n": 3}"#
    );
    assert_eq!(p.complete_typed::<Even>(&request).await.unwrap().value.n, 4);
}

#[tokio::test]
async fn a_context_window_500_is_not_retried_by_either_classifier() {
    use openarmature_llm::resilience::ProviderClassifier;
    let full = r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#;
    for classifier in [None, Some(ProviderClassifier::openai())] {
        let steps = vec![
            Step::json(500, serde_json::from_str(full).unwrap()),
            Step::json(200, completion(GOOD)),
        ];
        let server = Server::start(steps).await;
        let p = OpenAiProvider::builder(&server.base_url, "gpt-test")
            .transport(transport())
            .build()
            .unwrap();
        let mut base = RetryConfig::default()
            .max_attempts(3)
            .backoff(Constant(Duration::ZERO));
        if let Some(c) = classifier {
            base = base.classifier(c);
        }
        let request = CompletionRequest::new(vec![Message::user("x")]).retry(base);
        let error = p.complete_typed::<Person>(&request).await.unwrap_err();
        assert_eq!(error.category(), ErrorCategory::ProviderInvalidRequest);
        assert!(error.is_context_window_exceeded());
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn an_in_stream_context_size_error_is_not_retried() {
    let chunk = json!({"id": "cc-s", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": "{\"name\": \"A"}, "finish_reason": null}]});
    let error = json!({"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}});
    let events = vec![chunk.to_string(), error.to_string()];
    let server = Server::start(vec![
        Step::Sse {
            events,
            gap: Duration::ZERO,
        },
        Step::json(200, completion(GOOD)),
    ])
    .await;
    let p = openai(&server);
    let retry = RetryConfig::default()
        .max_attempts(3)
        .backoff(Constant(Duration::ZERO));
    let request = CompletionRequest::new(vec![Message::user("x")])
        .stream(true)
        .retry(retry);
    let error = p.complete_typed::<Person>(&request).await.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::ProviderInvalidRequest);
    assert!(error.is_context_window_exceeded(), "{error}");
    assert_eq!(server.request_count(), 1);
}
