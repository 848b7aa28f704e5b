//! Unit tests of the extension-0006 Anthropic stream assembly (`stream.rs`).
use super::*;
use crate::error::ErrorCategory;
use crate::response::FinishReason;
use serde_json::json;

fn prepared() -> Prepared {
    let tool = crate::test_support::city_schema(false);
    crate::test_support::prepared_with("get_weather", &tool, None)
}

use crate::test_support::Deltas;

fn feed(events: &[Value]) -> (Assembler, Result<(), LlmError>, Deltas) {
    crate::test_support::feed(events.iter().map(|e| SseEvent {
        event: e.get("type").and_then(Value::as_str).map(str::to_owned),
        data: e.to_string(),
    }))
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}})
}

#[test]
fn text_and_thinking_deltas_assemble_like_the_atomic_body() {
    let (a, ok, deltas) = feed(&[
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello, "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "world."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]);
    ok.unwrap();
    assert!(a.is_done() && a.completed());
    assert_eq!(
        deltas,
        [
            (DeltaKind::Reasoning, "Hmm.".to_owned()),
            (DeltaKind::Content, "Hello, ".to_owned()),
            (DeltaKind::Content, "world.".to_owned()),
        ]
    );
    let r = a.response(&prepared(), None, None).unwrap();
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        (r.usage.prompt_tokens, r.usage.completion_tokens),
        (Some(12), Some(5))
    );
    assert_eq!(r.raw["content"][0]["signature"], "sig");
    assert_eq!(r.raw["content"][1]["text"], "Hello, world.");
    assert_eq!(r.raw["id"], "msg_1");
    // The same body parsed atomically gives the same response.
    let atomic = parse_value(r.raw.clone().into_value(), &prepared(), None, None).unwrap();
    assert_eq!(atomic, r);
}

#[test]
fn tool_input_fragments_join_into_the_tool_call() {
    let (a, ok, deltas) = feed(&[
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]);
    ok.unwrap();
    assert!(deltas.is_empty(), "tool input is not reported: {deltas:?}");
    let r = a.response(&prepared(), None, None).unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    let call = &r.message.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_1", "get_weather")
    );
    assert_eq!(
        call.arguments.clone().map(Value::Object),
        Some(json!({"city": "Paris"}))
    );
}

#[test]
fn an_overloaded_error_event_is_transient_and_bad_events_are_typed() {
    let (_, err, _) = feed(&[
        start(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    let err = err.unwrap_err();
    assert_eq!(err.category(), ErrorCategory::ProviderUnavailable);
    assert!(err.category().is_transient());
    let (_, err, _) = feed(&[
        start(),
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    ]);
    assert_eq!(
        err.unwrap_err().category(),
        ErrorCategory::ProviderRateLimit
    );

    // A delta for a block never started, a tool input that is not JSON.
    let (_, err, _) = feed(&[
        start(),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}),
    ]);
    assert_eq!(
        err.unwrap_err().category(),
        ErrorCategory::ProviderInvalidResponse
    );
    let (a, ok, _) = feed(&[
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        json!({"type": "message_stop"}),
    ]);
    ok.unwrap();
    let err = a.response(&prepared(), None, None).unwrap_err();
    assert_eq!(err.category(), ErrorCategory::ProviderInvalidResponse);
}

#[test]
fn a_cut_stream_is_not_complete() {
    let (a, ok, _) = feed(&[
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
    ]);
    ok.unwrap();
    assert!(!a.completed());
    // No message_start at all: not a response.
    let (a, ok, _) = feed(&[json!({"type": "message_stop"})]);
    ok.unwrap();
    assert!(a.completed());
    let err = a.response(&prepared(), None, None).unwrap_err();
    assert_eq!(err.category(), ErrorCategory::ProviderInvalidResponse);
}
