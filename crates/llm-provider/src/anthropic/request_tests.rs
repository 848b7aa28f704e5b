#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::*;
use crate::schema::canonical_string;
use crate::tool::Tool;

use crate::test_support::wire_request as req;

fn build(messages: &[Message], config: &RuntimeConfig) -> Result<Value, LlmError> {
    body("m", &req(messages, &[], config, None), None, "{schema}")
        .map(|b| serde_json::from_slice(&b).unwrap())
}

fn cfg() -> RuntimeConfig {
    RuntimeConfig::default().max_tokens(64)
}

#[test]
fn config_checks() {
    assert!(check_config(&cfg()).is_ok());
    for bad in [
        RuntimeConfig::default(),
        cfg().seed(1),
        cfg().frequency_penalty(0.1),
        cfg().presence_penalty(0.0),
    ] {
        let e = check_config(&bad).unwrap_err();
        assert_eq!(e.category().as_str(), "provider_invalid_request", "{bad:?}");
    }
}

#[test]
fn system_tool_role_and_blocks() {
    let calls: Vec<crate::message::ToolCall> = serde_json::from_value(
        json!([{"id": "t1", "name": "f", "arguments": {"b": 1, "a": 2}},
            {"id": "t2", "name": "f", "arguments": {}}]),
    )
    .unwrap();
    let thinking: Message = serde_json::from_value(json!({"role": "assistant", "content": [
        {"type": "thinking", "text": "r", "signature": "s"},
        {"type": "thinking", "text": "foreign"},
        {"type": "redacted_thinking", "data": "d"},
        {"type": "text", "text": "a", "signature": "g"}]}))
    .unwrap();
    let msgs = [
        Message::system("S"),
        Message::user("q"),
        Message::assistant_tool_calls(calls),
        Message::tool("t1", "r1"),
        Message::tool("t2", "r2"),
        thinking,
        Message::user_blocks(vec![
            ContentBlock::image_inline("image/png", "QQ=="),
            ContentBlock::image_url("https://x/y.png"),
        ]),
    ];
    let b = build(&msgs, &cfg()).unwrap();
    assert_eq!(b["system"], "S");
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 2, "b": 1}},
                {"type": "tool_use", "id": "t2", "name": "f", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "r2"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "r", "signature": "s"},
                {"type": "redacted_thinking", "data": "d"},
                {"type": "text", "text": "a"}]},
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="}},
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}
        ])
    );
    assert!(build(&[Message::user("q")], &cfg())
        .unwrap()
        .get("system")
        .is_none());
}

#[test]
fn managed_extras() {
    let msgs = [Message::user("hi")];
    let ok = |c: RuntimeConfig| build(&msgs, &c).unwrap();
    let rejected = |c: RuntimeConfig| {
        build(&msgs, &c).unwrap_err().category().as_str() == "provider_invalid_request"
    };
    assert!(rejected(cfg().extra("stream", json!(true))));
    assert!(rejected(cfg().extra("stream", json!(1))));
    assert!(ok(cfg().extra("stream", json!(false)))
        .get("stream")
        .is_none());
    assert!(rejected(cfg().extra("model", json!("other"))));
    assert_eq!(ok(cfg().extra("model", json!("m")))["model"], "m");
    assert!(rejected(cfg().extra("max_tokens", json!(65))));
    assert_eq!(ok(cfg().extra("max_tokens", json!(64.0)))["max_tokens"], 64);
    assert!(rejected(
        cfg().temperature(0.5).extra("temperature", json!(0.1))
    ));
    assert_eq!(
        ok(cfg().extra("temperature", json!(0.1)))["temperature"],
        0.1
    );
    // Unset structural keys ride untouched (e.g. disable_parallel_tool_use).
    let choice = json!({"type": "auto", "disable_parallel_tool_use": true});
    assert_eq!(
        ok(cfg().extra("tool_choice", choice.clone()))["tool_choice"],
        choice
    );
    let stop = cfg().stop_sequences(["STOP"]);
    assert_eq!(
        ok(stop.clone().extra("stop_sequences", json!(["END", "STOP"])))["stop_sequences"],
        json!(["STOP", "END"])
    );
    assert_eq!(
        ok(stop.clone().extra("stop_sequences", json!("END")))["stop_sequences"],
        json!(["STOP"])
    );
    assert_eq!(
        ok(stop.extra("stop_sequences", json!(["END", 3])))["stop_sequences"],
        json!(["STOP"])
    );
    assert_eq!(
        ok(cfg().extra("stop_sequences", json!("X")))["stop_sequences"],
        json!("X")
    );
    assert_eq!(
        ok(cfg().extra("metadata", json!({"user_id": "u"})))["metadata"]["user_id"],
        "u"
    );
}

#[test]
fn structured_output_paths() {
    let schema = json!({"type": "object", "properties": {"v": {"type": "integer"}}});
    let msgs = [Message::system("S"), Message::user("hi")];
    let tools = [Tool::new("t", "d", json!({"type": "object"}))];
    let config = cfg();
    let mk = |tools: &[Tool], path| {
        let bytes = body(
            "m",
            &req(&msgs, tools, &config, Some(&schema)),
            Some(path),
            "D {schema}",
        )
        .unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    };
    let native = mk(&[], StructuredOutputPath::Native);
    assert_eq!(
        native["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema}})
    );
    assert!(native.get("tools").is_none());
    let coerced = mk(&[], StructuredOutputPath::ToolCoercion);
    assert_eq!(coerced["tools"][0]["name"], SYNTHETIC_TOOL_NAME);
    assert_eq!(coerced["tools"][0]["input_schema"], schema);
    assert_eq!(
        coerced["tool_choice"],
        json!({"type": "tool", "name": SYNTHETIC_TOOL_NAME})
    );
    assert!(coerced.get("output_config").is_none());
    let prompted = mk(&tools, StructuredOutputPath::PromptFallback);
    assert_eq!(
        prompted["system"],
        format!("S\n\nD {}", canonical_string(&schema))
    );
    assert_eq!(prompted["tools"].as_array().unwrap().len(), 1);
}

#[test]
fn byte_stable() {
    let (a, b) = crate::test_support::one_tool_two_key_orders();
    let msgs = [Message::user("x")];
    let c1 = cfg()
        .temperature(0.5)
        .extra("z", json!(1))
        .extra("y", json!({"q": 1, "p": 2}));
    let c2 = cfg()
        .extra("y", json!({"p": 2, "q": 1}))
        .extra("z", json!(1))
        .temperature(0.5);
    let one = body("m", &req(&msgs, &[a], &c1, None), None, "").unwrap();
    let two = body("m", &req(&msgs, &[b], &c2, None), None, "").unwrap();
    assert_eq!(one, two);
    let text = String::from_utf8(one).unwrap();
    assert!(text
        .starts_with(r#"{"max_tokens":64,"messages":[{"content":"x","role":"user"}],"model":"m""#));
}
