#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn prepared(schema: Option<Value>) -> Prepared {
    crate::test_support::prepared(schema.as_ref())
}

fn parse_json(v: Value) -> Result<Response, LlmError> {
    parse(&serde_json::to_vec(&v).unwrap(), &prepared(None), None)
}

fn candidate(parts: Value, finish: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
           "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": "x", "totalTokenCount": 18,
                             "cachedContentTokenCount": 4, "thoughtsTokenCount": 2},
           "responseId": "r-1", "modelVersion": "gemini-2.5"})
}

#[test]
fn text_usage_and_raw() {
    let r = parse_json(candidate(json!([{"text": "a"}, {"text": "b"}]), "STOP")).unwrap();
    assert_eq!(r.content(), Some("ab"));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        crate::test_support::token_counts(&r.usage),
        [Some(12), None, Some(18), Some(4)]
    );
    assert_eq!(r.raw["usageMetadata"]["candidatesTokenCount"], "x");
    assert_eq!(
        (r.response_id(), r.response_model()),
        (Some("r-1"), Some("gemini-2.5"))
    );
}

#[test]
fn finish_reason_table() {
    for (wire, want) in [
        ("STOP", FinishReason::Stop),
        ("MAX_TOKENS", FinishReason::Length),
        ("SAFETY", FinishReason::ContentFilter),
        ("SPII", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        ("MALFORMED_FUNCTION_CALL", FinishReason::Error),
        ("OTHER", FinishReason::Error),
        ("IMAGE_SAFETY", FinishReason::Error),
    ] {
        let r = parse_json(candidate(json!([{"text": "a"}]), wire)).unwrap();
        assert_eq!(r.finish_reason, want, "{wire}");
    }
    let blocked = parse_json(json!({"promptFeedback": {"blockReason": "SAFETY"}})).unwrap();
    assert_eq!(blocked.finish_reason, FinishReason::ContentFilter);
    assert!(blocked.message.content.is_none());
}

#[test]
fn thought_signatures_are_captured() {
    let r = parse_json(candidate(
        json!([{"text": "plan", "thought": true},
               {"text": "hi", "thoughtSignature": "s0"},
               {"functionCall": {"name": "get", "id": "c1", "args": {"city": "B"}}, "thoughtSignature": "s1"},
               {"functionCall": {"name": "get", "args": {"city": "C"}}}]),
        "STOP",
    ))
    .unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    let blocks = serde_json::to_value(&r.message.content).unwrap();
    assert_eq!(
        blocks,
        json!([{"type": "thinking", "text": "plan"}, {"type": "text", "text": "hi", "signature": "s0"}])
    );
    let calls = &r.message.tool_calls;
    assert_eq!(
        (calls[0].id.as_str(), calls[0].signature.as_deref()),
        ("c1", Some("s1"))
    );
    assert_eq!(
        (calls[1].id.as_str(), calls[1].signature.as_deref()),
        ("call_1", None)
    );
}

#[test]
fn tool_calls_strict_and_lenient() {
    let with = |args: Value, finish: &str| {
        parse_json(candidate(
            json!([{"functionCall": {"name": "get", "id": "c", "args": args}}]),
            finish,
        ))
    };
    assert!(with(json!({"city": "B"}), "STOP").is_ok());
    assert_eq!(
        with(json!({"city": 1}), "STOP")
            .unwrap_err()
            .category()
            .as_str(),
        "provider_invalid_response"
    );
    // A `functionCall` part makes the reported finish reason `tool_calls` whatever
    // the raw `finishReason`: a non-error response, so a malformed call is refused
    // (§3), not surfaced leniently.
    for raw in ["MALFORMED_FUNCTION_CALL", "OTHER", ""] {
        assert_eq!(
            with(json!("oops"), raw).unwrap_err().category().as_str(),
            "provider_invalid_response",
            "{raw}"
        );
    }
}

#[test]
fn structured_output() {
    let schema = json!({"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]});
    let run = |text: &str| {
        parse(
            &serde_json::to_vec(&candidate(json!([{ "text": text }]), "STOP")).unwrap(),
            &prepared(Some(schema.clone())),
            Some(&schema),
        )
    };
    assert_eq!(
        run(r#"{"value":42}"#).unwrap().parsed,
        Some(json!({"value": 42}))
    );
    let e = run(r#"{"value":"x"}"#).unwrap_err();
    let soi = e.structured_output().unwrap();
    assert_eq!(
        (soi.response_id.as_deref(), soi.finish_reason),
        (Some("r-1"), FinishReason::Stop)
    );
}

#[test]
fn rejects_bad_shapes() {
    for bad in [
        json!([]),
        json!({}),
        json!({"candidates": []}),
        json!({"candidates": [3]}),
        json!({"candidates": [{"content": {"role": "user", "parts": []}}]}),
        json!({"candidates": [{"content": {"parts": {}}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": 5}]}}]}),
        json!({"error": {"message": "x"}}),
    ] {
        let e = parse_json(bad.clone()).unwrap_err();
        assert_eq!(e.category().as_str(), "provider_invalid_response", "{bad}");
    }
    assert!(parse(b"{\"candidates\": [", &prepared(None), None).is_err());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        crate::test_support::json_value(
"candidates content parts text thought functionCall args name finishReason usageMetadata promptFeedback",
"STOP model get x",
)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics(value in json_value(), bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse(&bytes, &prepared(None), None);
            let _ = crate::gemini::errors::from_status(500, &reqwest::header::HeaderMap::new(), &bytes);
            let encoded = serde_json::to_vec(&value).unwrap();
            if let Ok(r) = parse(&encoded, &prepared(None), None) {
                prop_assert_eq!(&r.raw, &value);
            }
        }
    }
}
