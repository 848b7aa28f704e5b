#![allow(clippy::unwrap_used)]
use super::*;
use crate::config::RuntimeConfig;
use crate::schema::canonical_string;
use crate::tool::Tool;

fn wire(
    messages: &[Message],
    tools: &[Tool],
    config: &RuntimeConfig,
    schema: Option<&Value>,
    path: StructuredOutputPath,
) -> Result<Value, LlmError> {
    let req = crate::test_support::wire_request(messages, tools, config, schema);
    body(&req, path, "Schema: {schema}").map(|b| serde_json::from_slice(&b).unwrap())
}

fn simple(config: &RuntimeConfig) -> Result<Value, LlmError> {
    wire(
        &[Message::user("hi")],
        &[],
        config,
        None,
        StructuredOutputPath::Native,
    )
}

#[test]
fn system_roles_and_tool_round_trip() {
    let call = ToolCall::new(
        "call_1",
        "get_weather",
        json!({"location": "SF"}).as_object().unwrap().clone(),
    );
    let msgs = [
        Message::system("Be brief."),
        Message::user("Weather?"),
        Message::assistant_tool_calls(vec![call]),
        Message::tool("call_1", "72F"),
        Message::tool("call_1", "again"),
        Message::user("thanks"),
    ];
    let got = wire(
        &msgs,
        &[],
        &RuntimeConfig::default(),
        None,
        StructuredOutputPath::Native,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "id": "call_1", "args": {"location": "SF"}}}]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "get_weather", "id": "call_1", "response": {"result": "72F"}}},
                    {"functionResponse": {"name": "get_weather", "id": "call_1", "response": {"result": "again"}}}]},
                {"role": "user", "parts": [{"text": "thanks"}]}
            ]
        })
    );
    assert!(got.get("model").is_none(), "the model travels in the URL");
}

#[test]
fn declared_fields_and_extras_under_generation_config() {
    let config = RuntimeConfig::default()
        .temperature(0.7)
        .max_tokens(256)
        .top_p(0.95)
        .seed(42)
        .frequency_penalty(0.5)
        .presence_penalty(0.25)
        .stop_sequences(["END"])
        .extra("topK", json!(40));
    assert_eq!(
        simple(&config).unwrap()["generationConfig"],
        json!({"temperature": 0.7, "maxOutputTokens": 256, "topP": 0.95, "seed": 42,
               "frequencyPenalty": 0.5, "presencePenalty": 0.25, "stopSequences": ["END"], "topK": 40})
    );
    assert!(simple(&RuntimeConfig::default())
        .unwrap()
        .get("generationConfig")
        .is_none());
}

#[test]
fn managed_collisions() {
    let err = |c: RuntimeConfig| simple(&c).unwrap_err().category().as_str();
    let gen = |c: RuntimeConfig| simple(&c).unwrap()["generationConfig"].clone();
    let t = RuntimeConfig::default().temperature(0.7);
    assert_eq!(
        err(t.clone().extra("temperature", json!(0.2))),
        "provider_invalid_request"
    );
    assert_eq!(gen(t.extra("temperature", json!(0.7)))["temperature"], 0.7);
    // Absent declared field: the extras key rides untouched.
    assert_eq!(
        gen(RuntimeConfig::default().extra("maxOutputTokens", json!(9)))["maxOutputTokens"],
        9
    );
    let s = RuntimeConfig::default().stop_sequences(["STOP"]);
    assert_eq!(
        gen(s.clone().extra("stopSequences", json!(["END", "STOP"])))["stopSequences"],
        json!(["STOP", "END"])
    );
    // Array-only: a string or a mixed list is malformed and ignored whole.
    for bad in [json!("END"), json!(["END", 1]), json!({"a": 1})] {
        assert_eq!(
            gen(s.clone().extra("stopSequences", bad))["stopSequences"],
            json!(["STOP"])
        );
    }
    assert_eq!(
        gen(RuntimeConfig::default().extra("stopSequences", json!("X")))["stopSequences"],
        "X"
    );
    // The snake-case declared name is not a Gemini key: it rides untouched.
    assert_eq!(
        gen(RuntimeConfig::default().extra("stream", json!(true)))["stream"],
        true
    );
}

#[test]
fn structured_output_paths() {
    let schema = json!({"type": "object", "properties": {"v": {"type": "integer"}}});
    let msgs = [Message::system("Sys."), Message::user("Go.")];
    let config = RuntimeConfig::default();
    let native = wire(
        &msgs,
        &[],
        &config,
        Some(&schema),
        StructuredOutputPath::Native,
    )
    .unwrap();
    assert_eq!(
        native["generationConfig"],
        json!({"responseMimeType": "application/json", "responseJsonSchema": schema})
    );
    let fallback = wire(
        &msgs,
        &[],
        &config,
        Some(&schema),
        StructuredOutputPath::PromptFallback,
    )
    .unwrap();
    assert!(fallback.get("generationConfig").is_none());
    assert_eq!(
        fallback["systemInstruction"]["parts"][0]["text"],
        format!("Sys.\n\nSchema: {}", canonical_string(&schema))
    );
    let conflict = config.extra("responseMimeType", json!("text/plain"));
    let e = wire(
        &msgs,
        &[],
        &conflict,
        Some(&schema),
        StructuredOutputPath::Native,
    );
    assert_eq!(
        e.unwrap_err().category().as_str(),
        "provider_invalid_request"
    );
}

#[test]
fn parts_images_and_signatures() {
    let mut url = ContentBlock::image_url("https://x/cat.JPG?s=1");
    if let ContentBlock::Image(i) = &mut url {
        i.detail = Some(crate::message::ImageDetail::High);
    }
    let user = Message::user_blocks(vec![
        ContentBlock::text("look"),
        ContentBlock::image_inline("image/png", "QUJD"),
        url,
        ContentBlock::image_url("data:image/webp;base64,AAAA"),
    ]);
    let asst: Message = serde_json::from_value(json!({"role": "assistant",
        "content": [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": "ok", "signature": "s1"},
                    {"type": "redacted_thinking", "data": "zz"}, {"type": "text", "text": "plain", "signature": ""}],
        "tool_calls": [{"id": "c", "name": "f", "arguments": {}, "signature": "s2"}]}))
    .unwrap();
    let got = contents(&[user, asst, Message::tool("c", "r")]).unwrap();
    assert_eq!(
        got[0]["parts"],
        json!([{"text": "look"},
            {"inlineData": {"mimeType": "image/png", "data": "QUJD"}},
            {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://x/cat.JPG?s=1"}},
            {"inlineData": {"mimeType": "image/webp", "data": "AAAA"}}])
    );
    assert_eq!(
        got[1]["parts"],
        json!([{"text": "hmm", "thought": true}, {"text": "ok", "thoughtSignature": "s1"},
            {"text": "plain"},
            {"functionCall": {"name": "f", "id": "c", "args": {}}, "thoughtSignature": "s2"}])
    );
    let unknown = Message::user_blocks(vec![ContentBlock::image_url("https://x/y")]);
    assert_eq!(
        contents(&[unknown]).unwrap_err().category().as_str(),
        "provider_invalid_request"
    );
}

#[test]
fn byte_stable_across_key_orders() {
    let (a, b) = crate::test_support::one_tool_two_key_orders();
    let c1 = RuntimeConfig::default()
        .extra("x", json!({"q": 1, "p": 2}))
        .extra("topK", json!(3));
    let c2 = RuntimeConfig::default()
        .extra("topK", json!(3))
        .extra("x", json!({"p": 2, "q": 1}));
    let bytes = |tools: &[Tool], config: &RuntimeConfig| {
        let msgs = [Message::user("x")];
        let req = WireRequest {
            messages: &msgs,
            tools,
            config,
            response_schema: None,
            tool_choice: Some(&ToolChoice::Tool { name: "t".into() }),
            stream: false,
        };
        body(&req, StructuredOutputPath::Native, "").unwrap()
    };
    let one = bytes(&[a], &c1);
    assert_eq!(one, bytes(&[b], &c2));
    let text = String::from_utf8(one).unwrap();
    assert!(text.starts_with(r#"{"contents":[{"parts":[{"text":"x"}],"role":"user"}],"generationConfig":{"topK":3,"x":{"p":2,"q":1}}"#));
    assert!(text.contains(
        r#""toolConfig":{"functionCallingConfig":{"allowedFunctionNames":["t"],"mode":"ANY"}}"#
    ));
}
