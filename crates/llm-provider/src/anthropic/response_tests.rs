#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::*;

use crate::test_support::prepared;

fn parse_value(
    v: Value,
    schema: Option<&Value>,
    path: Option<StructuredOutputPath>,
) -> Result<Response, LlmError> {
    parse(
        &serde_json::to_vec(&v).unwrap(),
        &prepared(schema),
        schema,
        path,
    )
}

fn message(content: Value, stop: &str, usage: Value) -> Value {
    json!({"type": "message", "id": "msg_1", "model": "claude-test", "role": "assistant",
        "content": content, "stop_reason": stop, "usage": usage})
}

#[test]
fn text_thinking_and_usage() {
    let r = parse_value(
        message(
            json!([{"type": "text", "text": "hi"}]),
            "end_turn",
            json!({"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 9}),
        ),
        None,
        None,
    )
    .unwrap();
    assert_eq!(r.content(), Some("hi"));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        crate::test_support::token_counts(&r.usage),
        [Some(3), Some(2), Some(5), None]
    );
    let r = parse_value(
        message(
            json!([{"type": "thinking", "thinking": "hm", "signature": "s"},
                   {"type": "redacted_thinking", "data": "d"}, {"type": "text", "text": "42"},
                   {"type": "server_tool_use", "id": "x"}]),
            "max_tokens",
            json!({"input_tokens": "abc", "output_tokens": 7}),
        ),
        None,
        None,
    )
    .unwrap();
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(
        serde_json::to_value(&r.message.content).unwrap(),
        json!([{"type": "thinking", "text": "hm", "signature": "s"},
               {"type": "redacted_thinking", "data": "d"}, {"type": "text", "text": "42"}])
    );
    assert_eq!(
        (
            r.usage.prompt_tokens,
            r.usage.completion_tokens,
            r.usage.total_tokens
        ),
        (None, Some(7), None)
    );
    assert_eq!(r.raw["usage"]["input_tokens"], "abc");
}

#[test]
fn stop_reasons() {
    for (wire, want) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("something_new", "error"),
    ] {
        let r = parse_value(
            message(json!([{"type": "text", "text": "x"}]), wire, json!({})),
            None,
            None,
        )
        .unwrap();
        assert_eq!(r.finish_reason.as_str(), want, "{wire}");
    }
}

#[test]
fn tool_use_strict_and_lenient() {
    let with = |input: Value, stop: &str| {
        parse_value(
            message(
                json!([{"type": "text", "text": "let me check"},
                {"type": "tool_use", "id": "toolu_1", "name": "get", "input": input}]),
                stop,
                json!({}),
            ),
            None,
            None,
        )
    };
    let r = with(json!({"city": "SF"}), "tool_use").unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.content(), Some("let me check"));
    assert_eq!(r.message.tool_calls[0].id, "toolu_1");
    assert_eq!(
        r.message.tool_calls[0].arguments.as_ref().unwrap()["city"],
        "SF"
    );
    let bad = with(json!({"town": "SF"}), "tool_use").unwrap_err();
    assert_eq!(bad.category().as_str(), "provider_invalid_response");
    let degraded = with(json!("not an object"), "weird").unwrap();
    assert_eq!(degraded.message.tool_calls[0].arguments, None);
}

#[test]
fn structured_output_native_and_coerced() {
    let schema = json!({"type": "object", "properties": {"value": {"type": "integer"}},
        "required": ["value"]});
    let native = |text: &str| {
        parse_value(
            message(
                json!([{"type": "text", "text": text}]),
                "end_turn",
                json!({}),
            ),
            Some(&schema),
            Some(StructuredOutputPath::Native),
        )
    };
    assert_eq!(
        native(r#"{"value":42}"#).unwrap().parsed,
        Some(json!({"value": 42}))
    );
    let e = native(r#"{"value":"x"}"#).unwrap_err();
    let soi = e.structured_output().unwrap();
    assert_eq!(soi.output_content, r#"{"value":"x"}"#);
    assert_eq!(soi.response_id.as_deref(), Some("msg_1"));

    let coerced = |content: Value| {
        parse_value(
            message(content, "tool_use", json!({})),
            Some(&schema),
            Some(StructuredOutputPath::ToolCoercion),
        )
    };
    let r = coerced(
        json!([{"type": "tool_use", "id": "t", "name": SYNTHETIC_TOOL_NAME,
        "input": {"value": 42}}]),
    )
    .unwrap();
    assert_eq!(r.parsed, Some(json!({"value": 42})));
    assert_eq!(r.content(), Some(r#"{"value":42}"#));
    assert!(r.message.tool_calls.is_empty());
    assert_eq!(r.finish_reason, FinishReason::Stop);
    let e = coerced(
        json!([{"type": "tool_use", "id": "t", "name": SYNTHETIC_TOOL_NAME,
        "input": {"value": "no"}}]),
    )
    .unwrap_err();
    assert_eq!(e.category().as_str(), "structured_output_invalid");
    let e = coerced(json!([{"type": "text", "text": "I refuse"}])).unwrap_err();
    assert_eq!(e.structured_output().unwrap().output_content, "I refuse");
}

#[test]
fn rejects_bad_shapes() {
    for bad in [
        json!([]),
        json!({"type": "message", "role": "assistant"}),
        json!({"content": "text", "stop_reason": "end_turn"}),
        json!({"content": [{"type": "text"}], "stop_reason": "end_turn"}),
        json!({"role": "user", "content": [], "stop_reason": "end_turn"}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    ] {
        let e = parse_value(bad.clone(), None, None).unwrap_err();
        assert_eq!(e.category().as_str(), "provider_invalid_response", "{bad}");
    }
    assert!(parse(b"{\"content\": [", &prepared(None), None, None).is_err());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        crate::test_support::json_value(
            "type text input name id content usage",
            "text tool_use thinking get end_turn",
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics(content in json_value(), stop in json_value(), usage in json_value()) {
            let body = json!({"role": "assistant", "content": content, "stop_reason": stop, "usage": usage});
            let schema = json!({"type": "object"});
            for path in [None, Some(StructuredOutputPath::Native), Some(StructuredOutputPath::ToolCoercion)] {
                let s = path.map(|_| &schema);
                if let Ok(r) = parse_value(body.clone(), s, path) {
                    prop_assert_eq!(&r.raw, &body);
                }
            }
        }
    }
}
