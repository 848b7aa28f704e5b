//! Spec: llm-provider §8.1.1 (request mapping, content blocks §8.1.1.1), §8.1.5
//! (structured output, fallback §8.1.5.1), §6 *Managed-field collision* and §8
//! *Intra-impl wire-byte stability*.
//!
//! Canonicalization: the whole body is serialized with every object's keys sorted
//! recursively (`serde_json` compact output, shortest float form); arrays keep the
//! caller's order. Structurally equal inputs therefore give byte-identical bodies.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Map, Value};

use crate::error::LlmError;
use crate::message::{
    Content, ContentBlock, ImageSource, Message, SystemMessage, ToolCall, UserMessage,
};
use crate::provider::WireRequest;
use crate::schema::{canonical_string, is_strict_compatible, json_equal, schema_name, Canonical};
use crate::tool::ToolChoice;

/// How structured output reaches the model (§8.1.5 / §8.1.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredOutputPath {
    /// `response_format: {type: json_schema, ...}`.
    Native,
    /// A system directive carrying the schema; no `response_format`.
    PromptFallback,
}

/// Keys the mapping always manages: an extras value must equal the mapping's own
/// (absent counts as a value) or the call is rejected.
const STRUCTURAL: [&str; 4] = ["model", "messages", "tools", "tool_choice"];

/// Declared scalar fields, managed while the caller sets them (reject arm).
const SCALARS: &[&str] = crate::config::DECLARED_FIELDS.split_at(6).0;

/// Builds the canonical request body bytes for one attempt.
///
/// # Errors
/// `provider_invalid_request` on a managed-field conflict.
pub(crate) fn body(
    model: &str,
    request: &WireRequest<'_>,
    path: StructuredOutputPath,
    fallback_directive: &str,
) -> Result<Vec<u8>, LlmError> {
    let mut root = Map::with_capacity(8);
    root.insert("model".into(), Value::from(model));

    let fallback = request
        .response_schema
        .filter(|_| path == StructuredOutputPath::PromptFallback);
    // The messages are serialized straight from the typed list unless the fallback
    // directive edits them or an extra claims `messages` (its collision check
    // compares JSON values); then they are built as values, with the same bytes.
    let typed = fallback.is_none() && !request.config.extras.contains_key("messages");
    if !typed {
        root.insert(
            "messages".into(),
            Value::Array(messages(request, fallback, fallback_directive)),
        );
    }

    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        root.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = request.tool_choice {
        let wire = match choice {
            ToolChoice::Auto => Value::from("auto"),
            ToolChoice::Required => Value::from("required"),
            ToolChoice::None => Value::from("none"),
            ToolChoice::Tool { name } => json!({"type": "function", "function": {"name": name}}),
        };
        root.insert("tool_choice".into(), wire);
    }

    // Moved, not looked up and cloned: the declared scalars that are set.
    for (key, v) in request.config.declared_params() {
        if SCALARS.contains(&key.as_str()) {
            root.insert(key, v);
        }
    }
    if let Some(stop) = &request.config.stop_sequences {
        root.insert("stop".into(), Value::from(stop.clone()));
    }
    if let (Some(schema), StructuredOutputPath::Native) = (request.response_schema, path) {
        root.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {
                "name": schema_name(schema),
                "schema": schema,
                "strict": is_strict_compatible(schema),
            }}),
        );
    }

    if request.stream {
        // §8.1.6: the terminal chunk carries usage only when asked for.
        root.insert("stream".into(), Value::Bool(true));
        root.insert("stream_options".into(), json!({"include_usage": true}));
    }
    merge_extras(&mut root, &request.config.extras, request.stream)?;
    // Serialized in canonical form directly (no sorted copy of the tree).
    let wire = WireBody {
        root: &root,
        messages: typed.then_some(request.messages),
    };
    let mut out = Vec::with_capacity(512);
    serde_json::to_writer(&mut out, &wire)
        .map(|()| out)
        .map_err(|e| {
            LlmError::invalid_request(format!("cannot encode the request: {e}")).with_source(e)
        })
}

/// The wire messages as JSON values, with the §8.1.5.1 fallback directive applied.
fn messages(
    request: &WireRequest<'_>,
    fallback: Option<&Value>,
    fallback_directive: &str,
) -> Vec<Value> {
    let mut messages: Vec<Value> = request.messages.iter().map(message).collect();
    if let Some(schema) = fallback {
        let directive = crate::schema::directive(fallback_directive, schema);
        match messages.first_mut() {
            Some(Value::Object(first))
                if first.get("role").and_then(Value::as_str) == Some("system") =>
            {
                let existing = first
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let joined = format!("{existing}\n\n{directive}");
                first.insert("content".into(), Value::from(joined));
            }
            _ => messages.insert(0, json!({"role": "system", "content": directive})),
        }
    }
    messages
}

/// The body root in canonical form (keys sorted, values through [`Canonical`]), with
/// `messages` serialized from the typed list when the root does not hold them.
struct WireBody<'a> {
    root: &'a Map<String, Value>,
    messages: Option<&'a [Message]>,
}

impl Serialize for WireBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entries: Vec<(&str, Option<&Value>)> = self
            .root
            .iter()
            .map(|(key, value)| (key.as_str(), Some(value)))
            .collect();
        if self.messages.is_some() {
            entries.push(("messages", None));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut out = serializer.serialize_map(Some(entries.len()))?;
        for (key, value) in entries {
            match (value, self.messages) {
                (Some(value), _) => out.serialize_entry(key, &Canonical(value))?,
                (None, Some(messages)) => out.serialize_entry(key, &WireMessages(messages))?,
                (None, None) => {}
            }
        }
        out.end()
    }
}

/// The message list, serialized without building JSON values: the same bytes as
/// `Canonical(&Value::Array(messages.map(message)))`.
struct WireMessages<'a>(&'a [Message]);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            match m {
                // The common shapes, keys in canonical order.
                Message::System(SystemMessage {
                    content: Content::Text(text),
                }) => out.serialize_element(&TextMessage("system", text))?,
                Message::User(UserMessage {
                    content: Content::Text(text),
                }) => out.serialize_element(&TextMessage("user", text))?,
                other => out.serialize_element(&Canonical(&message(other)))?,
            }
        }
        out.end()
    }
}

/// `{"content": text, "role": role}`.
struct TextMessage<'a>(&'a str, &'a str);

impl Serialize for TextMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(2))?;
        out.serialize_entry("content", self.1)?;
        out.serialize_entry("role", self.0)?;
        out.end()
    }
}

/// §6 *Managed-field collision* for the §8.1 managed keys; every other extra rides
/// untouched at the body root.
fn merge_extras(
    root: &mut Map<String, Value>,
    extras: &Map<String, Value>,
    stream: bool,
) -> Result<(), LlmError> {
    let conflict = |key: &str, ours: &str| {
        LlmError::invalid_request(format!(
            "config extras `{key}` conflicts with the value the OpenAI mapping manages ({ours})"
        ))
    };
    for (key, value) in extras {
        let key = key.as_str();
        if STRUCTURAL.contains(&key) {
            match root.get(key) {
                Some(ours) if json_equal(ours, value) => {}
                Some(_) => return Err(conflict(key, "set by the call")),
                None => return Err(conflict(key, "absent on this call")),
            }
        } else if key == "stream" {
            // Always managed: the call fixes the mode (unary sends no `stream` key).
            if !json_equal(value, &Value::Bool(stream)) {
                return Err(conflict(key, if stream { "true" } else { "false" }));
            }
        } else if key == "stream_options" && stream {
            let ours = json!({"include_usage": true});
            if !json_equal(value, &ours) {
                return Err(conflict(key, "{include_usage: true}"));
            }
        } else if key == "stop" && root.contains_key("stop") {
            merge_stop(root, value);
        } else if (SCALARS.contains(&key) || key == "response_format") && root.contains_key(key) {
            if root.get(key).is_some_and(|ours| !json_equal(ours, value)) {
                return Err(conflict(key, "the declared value"));
            }
        } else {
            root.insert(key.to_owned(), value.clone());
        }
    }
    Ok(())
}

/// The list-shaped merge arm for `stop`: declared values first, then the caller's,
/// de-duplicated (first occurrence wins). A string is a one-element list; any other
/// shape, or a list with a non-string element, is malformed and ignored whole.
fn merge_stop(root: &mut Map<String, Value>, extra: &Value) {
    let extra: Option<Vec<&str>> = match extra {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(items) => items.iter().map(Value::as_str).collect(),
        _ => None,
    };
    let Some(extra) = extra else { return };
    let Some(Value::Array(declared)) = root.get("stop") else {
        return;
    };
    let mut merged: Vec<Value> = Vec::new();
    for item in declared
        .iter()
        .cloned()
        .chain(extra.into_iter().map(Value::from))
    {
        if !merged.contains(&item) {
            merged.push(item);
        }
    }
    root.insert("stop".into(), Value::Array(merged));
}

fn message(m: &Message) -> Value {
    match m {
        Message::System(s) => json!({"role": "system", "content": content(&s.content)}),
        Message::User(u) => json!({"role": "user", "content": content(&u.content)}),
        Message::Assistant(a) => {
            let mut out = Map::new();
            out.insert("role".into(), Value::from("assistant"));
            let text = a.content.as_ref().map_or(Value::Null, assistant_content);
            out.insert("content".into(), text);
            if !a.tool_calls.is_empty() {
                out.insert(
                    "tool_calls".into(),
                    Value::Array(a.tool_calls.iter().map(tool_call).collect()),
                );
            }
            Value::Object(out)
        }
        Message::Tool(t) => {
            json!({"role": "tool", "content": t.content, "tool_call_id": t.tool_call_id})
        }
    }
}

fn content(c: &Content) -> Value {
    match c {
        Content::Text(t) => Value::from(t.as_str()),
        Content::Blocks(blocks) => Value::Array(blocks.iter().filter_map(block).collect()),
    }
}

/// Assistant content with thinking blocks stripped (§8.1.1 strip-on-send): one text
/// block becomes a string, several an array of text parts, none `null`.
fn assistant_content(c: &Content) -> Value {
    match c {
        Content::Text(t) => Value::from(t.as_str()),
        Content::Blocks(blocks) => {
            let texts = crate::message::text_parts(blocks);
            match texts.as_slice() {
                [] => Value::Null,
                [one] => Value::from(*one),
                many => Value::Array(
                    many.iter()
                        .map(|t| json!({"type": "text", "text": t}))
                        .collect(),
                ),
            }
        }
    }
}

/// One §8.1.1.1 content entry; thinking blocks and signatures are never sent.
fn block(b: &ContentBlock) -> Option<Value> {
    match b {
        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
        ContentBlock::Image(image) => {
            let url = match &image.source {
                ImageSource::Url { url } => url.clone(),
                ImageSource::Inline { base64_data } => format!(
                    "data:{};base64,{base64_data}",
                    image.media_type.as_deref().unwrap_or_default()
                ),
            };
            let mut image_url = Map::new();
            image_url.insert("url".into(), Value::from(url));
            if let Some(detail) = image.detail {
                image_url.insert("detail".into(), Value::from(detail.as_str()));
            }
            Some(json!({"type": "image_url", "image_url": image_url}))
        }
        ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => None,
    }
}

fn tool_call(c: &ToolCall) -> Value {
    let arguments = c.arguments.as_ref().map_or_else(
        || "{}".to_owned(),
        |a| canonical_string(&Value::Object(a.clone())),
    );
    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::RuntimeConfig;
    use crate::tool::Tool;

    fn build(messages: &[Message], config: &RuntimeConfig) -> Result<Value, LlmError> {
        let req = crate::test_support::wire_request(messages, &[], config, None);
        body("m", &req, StructuredOutputPath::Native, "{schema}")
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn extras_collisions() {
        let msgs = [Message::user("hi")];
        let ok = |c: RuntimeConfig| build(&msgs, &c).unwrap();
        let err = |c: RuntimeConfig| build(&msgs, &c).unwrap_err().category().as_str();
        assert_eq!(
            err(RuntimeConfig::default().extra("model", json!("x"))),
            "provider_invalid_request"
        );
        assert_eq!(
            ok(RuntimeConfig::default().extra("model", json!("m")))["model"],
            "m"
        );
        assert_eq!(
            err(RuntimeConfig::default().extra("tools", json!([]))),
            "provider_invalid_request"
        );
        let t = RuntimeConfig::default().temperature(0.7);
        assert_eq!(
            err(t.clone().extra("temperature", json!(0.2))),
            "provider_invalid_request"
        );
        assert_eq!(ok(t.extra("temperature", json!(0.7)))["temperature"], 0.7);
        assert_eq!(
            ok(RuntimeConfig::default().extra("temperature", json!(0.2)))["temperature"],
            0.2
        );
        let s = RuntimeConfig::default().stop_sequences(["STOP"]);
        assert_eq!(
            ok(s.clone().extra("stop", json!(["END", "STOP"])))["stop"],
            json!(["STOP", "END"])
        );
        assert_eq!(
            ok(s.clone().extra("stop", json!("END")))["stop"],
            json!(["STOP", "END"])
        );
        assert_eq!(
            ok(s.clone().extra("stop", json!(["END", 1])))["stop"],
            json!(["STOP"])
        );
        assert_eq!(
            ok(s.extra("stop", json!({"a": 1})))["stop"],
            json!(["STOP"])
        );
        assert_eq!(
            ok(RuntimeConfig::default().extra("stop", json!(5)))["stop"],
            json!(5)
        );
        assert_eq!(
            err(RuntimeConfig::default().extra("stream", json!(true))),
            "provider_invalid_request"
        );
        assert!(ok(RuntimeConfig::default().extra("stream", json!(false)))
            .get("stream")
            .is_none());
        assert_eq!(
            ok(RuntimeConfig::default().extra("stream_options", json!({"a": 1})))["stream_options"],
            json!({"a": 1})
        );
    }

    #[test]
    fn typed_messages_serialize_as_the_value_path() {
        let calls: Vec<ToolCall> = serde_json::from_value(json!([
            {"id": "c1", "name": "f", "arguments": {"b": 1, "a": [true, null]}}]))
        .unwrap();
        let thinking: Message = serde_json::from_value(json!({"role": "assistant", "content": [
            {"type": "thinking", "text": "r", "signature": "s"}, {"type": "text", "text": "a"},
            {"type": "text", "text": "b"}]}))
        .unwrap();
        let msgs = [
            Message::system("Be \"brief\"\n\u{7}é"),
            Message::user("hi"),
            Message::assistant("ok"),
            Message::user_blocks(vec![
                ContentBlock::text("look"),
                ContentBlock::image_url("https://x/y.png"),
                ContentBlock::image_inline("image/png", "QUJD"),
            ]),
            Message::assistant_tool_calls(calls),
            Message::tool("c1", "{\"r\":1}"),
            thinking,
            Message::user("😀"),
        ];
        let config = RuntimeConfig::default().temperature(0.5).seed(3);
        let typed = build(&msgs, &config).unwrap();
        let via_values = config.clone().extra("messages", typed["messages"].clone());
        let bytes = |c: &RuntimeConfig| {
            let req = crate::test_support::wire_request(&msgs, &[], c, None);
            body("m", &req, StructuredOutputPath::Native, "{schema}").unwrap()
        };
        assert_eq!(bytes(&config), bytes(&via_values));
        let text = String::from_utf8(bytes(&config)).unwrap();
        assert!(
            text.starts_with(r#"{"messages":[{"content":"Be \"brief\"\n\u0007é","role":"system"}"#)
        );
    }

    #[test]
    fn byte_stable_and_thinking_stripped() {
        let (a, b) = crate::test_support::one_tool_two_key_orders();
        let msgs = [Message::user("x")];
        let config = RuntimeConfig::default();
        let mk = |tools: &[Tool]| {
            body(
                "m",
                &crate::test_support::wire_request(&msgs, tools, &config, None),
                StructuredOutputPath::Native,
                "",
            )
            .unwrap()
        };
        assert_eq!(mk(&[a]), mk(&[b]));
        let asst: Message = serde_json::from_value(json!({"role": "assistant", "content": [
            {"type": "thinking", "text": "r", "signature": "s"}, {"type": "text", "text": "42."}]}))
        .unwrap();
        assert_eq!(
            message(&asst),
            json!({"role": "assistant", "content": "42."})
        );
    }
}
