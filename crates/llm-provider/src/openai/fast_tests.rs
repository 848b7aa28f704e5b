#![allow(clippy::unwrap_used)]

use super::*;
use crate::openai::response::parse_value;
use crate::response::json_body;
use proptest::prelude::*;
use serde_json::json;

fn prepared() -> Prepared {
    crate::test_support::prepared(None)
}

fn with_schema() -> (Prepared, Value) {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"]});
    (crate::test_support::prepared(Some(&schema)), schema)
}

/// The general mapping's answer for `text`, shown as text (errors by category and
/// message).
fn general(text: &str, prepared: &Prepared, schema: Option<&Value>) -> String {
    shown(json_body(text.as_bytes()).and_then(|raw| parse_value(raw, prepared, schema)))
}

fn shown(result: Result<Response, LlmError>) -> String {
    match result {
        Ok(r) => format!(
            "{r:?} id={:?} model={:?}",
            r.response_id(),
            r.response_model()
        ),
        Err(e) => format!("{}: {e}", e.category().as_str()),
    }
}

use crate::error::LlmError;

/// `text` is read here, and to the general mapping's answer.
fn read_here(text: &str, prepared: &Prepared, schema: Option<&Value>) {
    let fast = parse(text.as_bytes().to_vec(), prepared, schema);
    assert!(fast.is_ok(), "gave up on {text}");
    let fast = fast.unwrap();
    assert_eq!(fast.raw.text(), Some(text));
    assert_eq!(shown(Ok(fast)), general(text, prepared, schema), "{text}");
}

/// `text` is left to the general mapping (and the mapping's answer is its).
fn left(text: &str, prepared: &Prepared, schema: Option<&Value>) {
    assert!(
        parse(text.as_bytes().to_vec(), prepared, schema).is_err(),
        "read {text}"
    );
    let through = crate::openai::response::parse(text.as_bytes().to_vec(), prepared, schema);
    assert_eq!(shown(through), general(text, prepared, schema), "{text}");
}

fn answer(message: &str, extra: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion","created":1735689600,"model":"m",
        "choices":[{{"index":0,"message":{message},"logprobs":null,"finish_reason":"stop"}}]{extra}}}"#
    )
}

#[test]
fn plain_answers_are_read_from_the_text_as_the_general_mapping_reads_them() {
    let p = prepared();
    for text in [
        answer(
            r#"{"role":"assistant","content":"Paris.","refusal":null}"#,
            "",
        ),
        answer(
            r#"{"role":"assistant","content":"caf\u00e9 \"quoted\"\n"}"#,
            r#","usage":{"prompt_tokens":42,"completion_tokens":27,"total_tokens":69,
            "prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0}}"#,
        ),
        answer(r#"{"content":null}"#, r#","usage":null"#),
        answer(
            r#"{"role":null,"content":""}"#,
            r#","usage":{"prompt_tokens":"abc","completion_tokens":-5,"total_tokens":1.5,
            "prompt_tokens_details":null},"system_fingerprint":{"deep":[[[1]]]}"#,
        ),
        r#"{"choices":[{"message":{"content":"a"},"finish_reason":"length"},7,"x"],
            "responseId":"r","modelVersion":"v","id":null}"#
            .to_owned(),
        r#"{"choices":[{"message":{"content":"a"},"finish_reason":"content_filter"}],
            "usage":{"total_tokens":true,"completion_tokens":null}}"#
            .to_owned(),
        answer(
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"get","arguments":"{\"city\":\"B\"}"}}]}"#,
            "",
        )
        .replace("\"stop\"", "\"tool_calls\""),
    ] {
        read_here(&text, &p, None);
    }
    let (p, schema) = with_schema();
    read_here(
        &answer(r#"{"content":"{\"name\":\"x\"}"}"#, ""),
        &p,
        Some(&schema),
    );
}

#[test]
fn anything_else_is_left_to_the_general_mapping() {
    let p = prepared();
    let lenient = answer(r#"{"content":"a"}"#, "").replace("\"stop\"", "\"error\"");
    let calls = |call: &str| {
        answer(&format!(r#"{{"content":null,"tool_calls":[{call}]}}"#), "")
            .replace("\"stop\"", "\"tool_calls\"")
    };
    for text in [
        lenient,
        answer(r#"{"content":"a"}"#, "").replace("\"stop\"", "\"unknown\""),
        answer(r#"{"content":"a"}"#, "").replace("\"stop\"", "null"),
        answer(r#"{"role":"user","content":"a"}"#, ""),
        answer(r#"{"content":[{"type":"text","text":"a"}]}"#, ""),
        answer(r#"{"content":7}"#, ""),
        // A list where an object stands: a derived struct would read it by position.
        answer(r#"["assistant","a"]"#, ""),
        answer(r#"{"content":"a"}"#, r#","usage":[1,2,3]"#),
        answer(
            r#"{"content":"a"}"#,
            r#","usage":{"prompt_tokens":{"n":1}}"#,
        ),
        answer(
            r#"{"content":"a"}"#,
            r#","usage":{"prompt_tokens_details":[4]}"#,
        ),
        answer(r#"{"content":"a"}"#, r#","id":7"#),
        // Duplicate keys: the value keeps the last.
        answer(r#"{"content":"a","content":"b"}"#, ""),
        // What building a value rejects and skipping would not.
        answer(r#"{"content":"a"}"#, r#","x":"\ud800""#),
        answer(r#"{"content":"\ud83d\ude00"}"#, ""),
        answer(r#"{"content":"a"}"#, r#","x":1e400"#),
        answer(
            r#"{"content":"a"}"#,
            &format!(r#","x":{}"#, "9".repeat(400)),
        ),
        answer(
            r#"{"content":"a"}"#,
            &format!(r#","x":{}{}"#, "[".repeat(200), "]".repeat(200)),
        ),
        r#"{"choices":[]}"#.to_owned(),
        r#"{"choices":{"0":{}}}"#.to_owned(),
        r#"{"error":{"message":"overloaded"}}"#.to_owned(),
        r#"[1]"#.to_owned(),
        r#"{"choices":["#.to_owned(),
        calls(r#"{"id":"c1","function":{"name":"nope","arguments":"{}"}}"#),
        calls(r#"{"id":"","function":{"name":"get","arguments":"{\"city\":\"B\"}"}}"#),
        calls(r#"{"id":"c1","function":{"name":"get","arguments":"{\"city\":"}}"#),
        calls(r#"{"id":"c1","function":{"name":"get","arguments":{"city":"B"}}}"#),
        calls(r#"{"id":"c1","function":{"name":"get","arguments":"{\"city\":\"B\",\"x\":1}"}}"#),
    ] {
        left(&text, &p, None);
    }
    let (p, schema) = with_schema();
    left(
        &answer(r#"{"content":"{\"age\":3}"}"#, ""),
        &p,
        Some(&schema),
    );
    left(&answer(r#"{"content":"not json"}"#, ""), &p, Some(&schema));
    // Not UTF-8.
    assert!(parse(b"{\"choices\":[\xff]}".to_vec(), &prepared(), None).is_err());
}

#[test]
fn every_text_the_guard_passes_builds_a_value() {
    for text in [
        r#"{"a":1e30,"b":12345678901234567890123,"c":"\u00e9\n","d":[[[]]]}"#,
        r#"{"e":"1e99 in a string is only text","f":-1E-30}"#,
    ] {
        assert!(value_safe(text), "{text}");
        assert!(serde_json::from_str::<Value>(text).is_ok(), "{text}");
    }
    let long = format!("[{}e99]", "9".repeat(250));
    let longer = format!("[{}.5]", "9".repeat(320));
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    for text in [
        "1e400",
        "[1E+999]",
        "\"\\uD800\"",
        "{\"a\":[\"\\udc00\"]}",
        long.as_str(),
        longer.as_str(),
        deep.as_str(),
    ] {
        // Each is a text building a value refuses; the guard turns them all away.
        assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
        assert!(!value_safe(text), "{text}");
    }
    assert!(
        !value_safe("\"\\ud83d\\ude00\""),
        "a pair is turned away too"
    );
}

/// Bodies shaped like chat completions: mostly plain (read here), with arbitrary
/// parts mixed in (left to the general mapping).
fn completion_like() -> impl Strategy<Value = Value> {
    let part = || {
        crate::test_support::json_value(
            "role content tool_calls function arguments name id usage prompt_tokens cached_tokens",
            "stop length tool_calls error assistant get {\"city\":\"B\"} {\"city\":\"B\",\"x\":1} {",
        )
    };
    let word = |words: &'static [&'static str]| prop::sample::select(words).prop_map(Value::from);
    let content = prop_oneof![3 => ".{0,24}".prop_map(Value::from), 1 => part()];
    let finish = prop_oneof![
        3 => word(&["stop", "length", "tool_calls", "content_filter"]),
        1 => part()
    ];
    let arguments = prop_oneof![
        3 => word(&["{\"city\":\"B\"}", "{\"city\":\"B\",\"x\":1}", "{\"city\":"]),
        1 => part()
    ];
    let calls = prop_oneof![
        2 => Just(Value::Null),
        2 => arguments.prop_map(|a| json!([{"id": "c", "type": "function",
            "function": {"name": "get", "arguments": a}}])),
        1 => part()
    ];
    let counter = || prop_oneof![3 => any::<u32>().prop_map(Value::from), 1 => part()];
    let usage = prop_oneof![
        3 => (counter(), counter(), counter()).prop_map(|(p, c, t)| json!({
            "prompt_tokens": p, "completion_tokens": c, "total_tokens": t,
            "prompt_tokens_details": {"cached_tokens": t}})),
        1 => part()
    ];
    (content, calls, finish, usage, part()).prop_map(|(content, calls, finish, usage, extra)| {
        json!({
            "id": "x",
            "choices": [{"message": {"role": "assistant", "content": content,
                "tool_calls": calls}, "finish_reason": finish}, extra.clone()],
            "usage": usage,
            "extra": extra
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever this module reads, the general mapping reads the same.
    #[test]
    fn what_is_read_here_is_the_general_mappings_answer(value in completion_like()) {
        let text = serde_json::to_string(&value).unwrap();
        let p = prepared();
        let through = crate::openai::response::parse(text.as_bytes().to_vec(), &p, None);
        prop_assert_eq!(shown(through), general(&text, &p, None));
    }

    #[test]
    fn never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(bytes, &prepared(), None);
    }
}
