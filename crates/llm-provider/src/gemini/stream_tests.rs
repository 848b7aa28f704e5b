//! Unit tests of the extension-0006 Gemini stream assembly (`stream.rs`).
use super::*;
use crate::error::ErrorCategory;
use crate::response::FinishReason;
use serde_json::json;

fn prepared() -> Prepared {
    let tool = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    crate::test_support::prepared_with("get_weather", &tool, None)
}

use crate::test_support::Deltas;

fn feed(chunks: &[Value]) -> (Assembler, Result<(), LlmError>, Deltas) {
    crate::test_support::feed(chunks.iter().map(|c| SseEvent {
        event: None,
        data: c.to_string(),
    }))
}

fn text(t: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}],
           "modelVersion": "gemini-test", "responseId": "r1"})
}

#[test]
fn text_parts_join_and_the_last_chunk_gives_finish_and_usage() {
    let (a, ok, deltas) = feed(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me think.", "thought": true}]}}],
               "modelVersion": "gemini-test", "responseId": "r1"}),
        text("Hello, "),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "world."}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 3, "totalTokenCount": 7}}),
    ]);
    ok.unwrap();
    assert!(a.completed());
    assert_eq!(
        deltas,
        [
            (DeltaKind::Reasoning, "Let me think.".to_owned()),
            (DeltaKind::Content, "Hello, ".to_owned()),
            (DeltaKind::Content, "world.".to_owned()),
        ]
    );
    let r = a.response(&prepared(), None).unwrap();
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        r.raw["candidates"][0]["content"]["parts"][1]["text"],
        "Hello, world."
    );
    assert_eq!(r.raw["responseId"], "r1");
    assert_eq!(
        (r.usage.prompt_tokens, r.usage.total_tokens),
        (Some(4), Some(7))
    );
    let atomic = parse_value(r.raw.clone().into_value(), &prepared(), None).unwrap();
    assert_eq!(atomic, r);
}

#[test]
fn function_calls_arrive_whole_and_keep_their_order() {
    let (a, ok, deltas) = feed(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}
    ]}, "finishReason": "STOP"}]}),
    ]);
    ok.unwrap();
    assert!(deltas.is_empty());
    let r = a.response(&prepared(), None).unwrap();
    let cities: Vec<_> = r
        .message
        .tool_calls
        .iter()
        .map(|c| c.arguments.as_ref().unwrap()["city"].clone())
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("Rome")]);
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn error_chunks_are_categorized_and_a_cut_stream_is_not_complete() {
    let (_, err, _) = feed(&[
        text("Hel"),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ]);
    let err = err.unwrap_err();
    assert_eq!(err.category(), ErrorCategory::ProviderUnavailable);
    let (_, err, _) = feed(&[json!({"candidates": {"not": "a list"}})]);
    assert_eq!(
        err.unwrap_err().category(),
        ErrorCategory::ProviderInvalidResponse
    );
    let (a, ok, _) = feed(&[text("Hel")]);
    ok.unwrap();
    assert!(!a.completed());
    // A blocked prompt has no candidates but is a complete answer.
    let (a, ok, _) = feed(&[json!({"promptFeedback": {"blockReason": "SAFETY"}})]);
    ok.unwrap();
    assert!(a.completed());
    let r = a.response(&prepared(), None).unwrap();
    assert_eq!(r.finish_reason, FinishReason::ContentFilter);
}
