//! Spec: llm-provider §8.2.1 (request mapping; content blocks §8.2.1.1, the `tool`
//! role §8.2.1.2), §8.2.5 (structured output, fallback §8.2.5.1), §6 *Managed-field
//! collision* and §8 *Intra-impl wire-byte stability*.
//!
//! Canonicalization: the body is built as a JSON value and serialized with every
//! object's keys sorted recursively (compact `serde_json` output); arrays keep the
//! caller's order. Structurally equal inputs therefore give byte-identical bodies.

use serde_json::{json, Map, Value};

use crate::config::RuntimeConfig;
use crate::error::LlmError;
use crate::message::{
    system_prompt, AssistantMessage, Content, ContentBlock, ImageSource, Message,
};
use crate::provider::WireRequest;
use crate::schema::{self, json_equal, Canonical};
use crate::tool::ToolChoice;

use super::StructuredOutputPath;

/// The name of the synthetic tool of the §8.2.5.1 tool-call coercion fallback.
pub const SYNTHETIC_TOOL_NAME: &str = "structured_output";

/// The description of the synthetic tool.
const SYNTHETIC_TOOL_DESCRIPTION: &str =
    "Return the final answer as this tool's input; the input must conform to its schema.";

/// Wire keys the mapping always sets: an extras value must equal the mapping's own.
const ALWAYS: [&str; 2] = ["model", "messages"];

/// Non-additive keys managed while the mapping produces them (structural keys set by
/// the call, and the declared scalars that are set): an equal extras value is a
/// no-op, a different one is rejected; while absent an extras key rides untouched.
const WHILE_PRODUCED: [&str; 7] = [
    "system",
    "tools",
    "tool_choice",
    "output_config",
    "temperature",
    "top_p",
    "max_tokens",
];

/// §8.2.1 pre-send config checks: `max_tokens` is required; `seed` and the penalties
/// have no Anthropic equivalent and are never dropped quietly.
///
/// # Errors
/// `provider_invalid_request` naming the field.
pub(crate) fn check_config(config: &RuntimeConfig) -> Result<(), LlmError> {
    if config.max_tokens.is_none() {
        return Err(LlmError::invalid_request(
            "max_tokens is required by the Anthropic Messages mapping (llm-provider §8.2.1); set RuntimeConfig::max_tokens",
        ));
    }
    let unsupported = [
        ("seed", config.seed.is_some()),
        ("frequency_penalty", config.frequency_penalty.is_some()),
        ("presence_penalty", config.presence_penalty.is_some()),
    ];
    if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(LlmError::invalid_request(format!(
            "`{field}` is not supported by the Anthropic Messages API (llm-provider §8.2.1)"
        )));
    }
    Ok(())
}

/// Builds the canonical request body bytes for one attempt.
///
/// # Errors
/// `provider_invalid_request` on a managed-field conflict.
pub(crate) fn body(
    model: &str,
    request: &WireRequest<'_>,
    path: Option<StructuredOutputPath>,
    fallback_directive: &str,
) -> Result<Vec<u8>, LlmError> {
    let mut root = Map::with_capacity(10);
    root.insert("model".into(), Value::from(model));

    let directive = match (request.response_schema, path) {
        (Some(schema), Some(StructuredOutputPath::PromptFallback)) => {
            Some(schema::directive(fallback_directive, schema))
        }
        _ => None,
    };
    if let Some(system) = system_prompt(request.messages, directive.as_deref()) {
        root.insert("system".into(), Value::from(system));
    }
    root.insert("messages".into(), Value::Array(messages(request.messages)));

    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    let mut tool_choice = request.tool_choice.map(|choice| match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
    });
    match (request.response_schema, path) {
        (Some(schema), Some(StructuredOutputPath::Native)) => {
            root.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": schema}}),
            );
        }
        (Some(schema), Some(StructuredOutputPath::ToolCoercion)) => {
            tools.push(json!({"name": SYNTHETIC_TOOL_NAME,
                "description": SYNTHETIC_TOOL_DESCRIPTION, "input_schema": schema}));
            tool_choice = Some(json!({"type": "tool", "name": SYNTHETIC_TOOL_NAME}));
        }
        _ => {}
    }
    if !tools.is_empty() {
        root.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = tool_choice {
        root.insert("tool_choice".into(), choice);
    }

    // The declared fields Anthropic supports (the others were rejected pre-send).
    for (key, v) in request.config.declared_params() {
        if matches!(
            key.as_str(),
            "temperature" | "top_p" | "max_tokens" | "stop_sequences"
        ) {
            root.insert(key, v);
        }
    }

    if request.stream {
        root.insert("stream".into(), Value::Bool(true));
    }
    merge_extras(&mut root, &request.config.extras, request.stream)?;
    let mut out = Vec::with_capacity(512);
    serde_json::to_writer(&mut out, &Canonical(&Value::Object(root)))
        .map(|()| out)
        .map_err(|e| {
            LlmError::invalid_request(format!("cannot encode the request: {e}")).with_source(e)
        })
}

/// §6 *Managed-field collision* for the §8.2 managed keys; every other extra rides
/// untouched at the body root.
fn merge_extras(
    root: &mut Map<String, Value>,
    extras: &Map<String, Value>,
    stream: bool,
) -> Result<(), LlmError> {
    let conflict = |key: &str, ours: &str| {
        LlmError::invalid_request(format!(
            "config extras `{key}` conflicts with the value the Anthropic mapping manages ({ours})"
        ))
    };
    for (key, value) in extras {
        let key = key.as_str();
        if key == "stream" {
            // Managed: only the call's own value is allowed (`false` unless the call
            // streams under extension 0006).
            if value != &Value::Bool(stream) {
                let ours = if stream {
                    "true: this call streams"
                } else {
                    "false: this call does not stream"
                };
                return Err(conflict(key, ours));
            }
        } else if key == "stop_sequences" && root.contains_key(key) {
            merge_stop_sequences(root, value);
        } else if ALWAYS.contains(&key) || (WHILE_PRODUCED.contains(&key) && root.contains_key(key))
        {
            if root.get(key).is_some_and(|ours| !json_equal(ours, value)) {
                return Err(conflict(key, "set by the call"));
            }
        } else {
            root.insert(key.to_owned(), value.clone());
        }
    }
    Ok(())
}

/// The list-shaped merge arm for `stop_sequences`: declared values first, then the
/// caller's, de-duplicated (first occurrence wins). Anthropic's field is array-only:
/// anything but a list of strings is malformed and ignored whole.
fn merge_stop_sequences(root: &mut Map<String, Value>, extra: &Value) {
    let Some(extra) = extra
        .as_array()
        .and_then(|items| items.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
    else {
        return;
    };
    let Some(Value::Array(declared)) = root.get("stop_sequences") else {
        return;
    };
    let mut merged: Vec<Value> = Vec::with_capacity(declared.len() + extra.len());
    for item in declared
        .iter()
        .cloned()
        .chain(extra.into_iter().map(Value::from))
    {
        if !merged.contains(&item) {
            merged.push(item);
        }
    }
    root.insert("stop_sequences".into(), Value::Array(merged));
}

/// The wire `messages`: system messages removed (they went to `system`), each run of
/// consecutive `tool` messages collapsed into one `user` message of `tool_result`
/// blocks (§8.2.1.2).
fn messages(list: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(list.len());
    let mut results: Vec<Value> = Vec::new();
    for m in list {
        if let Message::Tool(t) = m {
            results.push(json!({"type": "tool_result", "tool_use_id": t.tool_call_id,
                "content": t.content}));
            continue;
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        match m {
            Message::User(u) => out.push(json!({"role": "user", "content": content(&u.content)})),
            Message::Assistant(a) => out.push(assistant(a)),
            Message::System(_) | Message::Tool(_) => {}
        }
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    out
}

fn content(c: &Content) -> Value {
    match c {
        Content::Text(t) => Value::from(t.as_str()),
        Content::Blocks(blocks) => Value::Array(blocks.iter().filter_map(block).collect()),
    }
}

/// An assistant message: plain text stays a string; blocks and tool calls become a
/// content array (blocks in order, then one `tool_use` per tool call).
fn assistant(a: &AssistantMessage) -> Value {
    if a.tool_calls.is_empty() {
        if let Some(Content::Text(t)) = &a.content {
            return json!({"role": "assistant", "content": t});
        }
    }
    let mut entries: Vec<Value> = match &a.content {
        None => Vec::new(),
        Some(Content::Text(t)) if t.is_empty() => Vec::new(),
        Some(Content::Text(t)) => vec![json!({"type": "text", "text": t})],
        Some(Content::Blocks(blocks)) => blocks.iter().filter_map(block).collect(),
    };
    entries.extend(a.tool_calls.iter().map(|c| {
        let input = Value::Object(c.arguments.clone().unwrap_or_default());
        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
    }));
    json!({"role": "assistant", "content": entries})
}

/// One §8.2.1.1 content entry. Signatures Anthropic never issues (on text blocks)
/// are foreign and dropped; a thinking block without a signature cannot have come
/// from Anthropic (it signs every thinking block) and is stripped (§3.1.7).
fn block(b: &ContentBlock) -> Option<Value> {
    match b {
        ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
        ContentBlock::Image(image) => {
            let source = match &image.source {
                ImageSource::Url { url } => json!({"type": "url", "url": url}),
                ImageSource::Inline { base64_data } => json!({"type": "base64",
                    "media_type": image.media_type.as_deref().unwrap_or_default(),
                    "data": base64_data}),
            };
            Some(json!({"type": "image", "source": source}))
        }
        ContentBlock::Thinking(t) => t.signature.as_ref().map(
            |signature| json!({"type": "thinking", "thinking": t.text, "signature": signature}),
        ),
        ContentBlock::RedactedThinking(r) => {
            Some(json!({"type": "redacted_thinking", "data": r.data}))
        }
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
