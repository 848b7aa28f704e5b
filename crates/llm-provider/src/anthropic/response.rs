//! Spec: llm-provider §8.2.2 (response mapping), §8.2.5 (structured output, the
//! tool-call coercion fallback §8.2.5.1), §3 *Validation under
//! `finish_reason: "error"`* and §7 *Malformed usage counter*.
//!
//! Parsing never panics and never trusts the body: anything that is not the §6
//! shape is `provider_invalid_response`; a malformed usage counter is only "not
//! reported". Content entries of types this mapping does not know (server tools,
//! citations, ...) are skipped; they stay in `Response::raw`.

use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::message::{
    AssistantMessage, Content, ContentBlock, RedactedThinkingBlock, ThinkingBlock, ToolCall,
};
use crate::response::{counter, invalid, json_body, Answer, FinishReason, Response, Usage};
use crate::schema::{canonical_string, describe_violations};
use crate::validate::Prepared;

use super::request::SYNTHETIC_TOOL_NAME;
use super::StructuredOutputPath;

/// The §8.2.2 `stop_reason` table.
fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        Some("end_turn" | "stop_sequence" | "pause_turn") => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Error,
    }
}

/// Where the answer's id and model stand.
const IDS: (&str, &str) = ("id", "model");

/// Maps a 2xx body to a [`Response`] (or `structured_output_invalid`).
///
/// # Errors
/// `provider_invalid_response` for a body outside the §6 shape, or for a non-error
/// response whose tool calls do not match the declared tools;
/// `structured_output_invalid` for output that fails `response_schema`.
pub(crate) fn parse(
    body: &[u8],
    prepared: &Prepared,
    response_schema: Option<&Value>,
    path: Option<StructuredOutputPath>,
) -> Result<Response, LlmError> {
    let raw = json_body(body)?;
    parse_value(raw, prepared, response_schema, path)
}

/// [`parse`] of an already decoded body (a streamed response's assembled message).
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_value(
    raw: Value,
    prepared: &Prepared,
    response_schema: Option<&Value>,
    path: Option<StructuredOutputPath>,
) -> Result<Response, LlmError> {
    let root = raw
        .as_object()
        .ok_or_else(|| invalid("response body is not a JSON object"))?;
    if root.get("type").and_then(Value::as_str) == Some("error") {
        let detail = root
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(invalid(format!("a 2xx answer carried an error: {detail}")));
    }
    match root.get("role") {
        None | Some(Value::Null) => {}
        Some(Value::String(r)) if r == "assistant" => {}
        Some(other) => {
            return Err(invalid(format!(
                "`role` must be \"assistant\", got {other}"
            )))
        }
    }
    let mut finish = finish_reason(root.get("stop_reason").and_then(Value::as_str));
    let lenient = finish == FinishReason::Error;
    let entries = root
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("`content` must be a list"))?;
    let (blocks, uses) = read_content(entries, lenient)?;
    let usage = usage(root.get("usage"));
    let soi = |output_content: String, error_message: String, finish, schema: &Value| {
        Answer::new(&raw, IDS, finish, usage).output_invalid(schema, output_content, error_message)
    };

    let coerced = path == Some(StructuredOutputPath::ToolCoercion);
    if let (true, Some(validator), Some(schema)) =
        (coerced, prepared.response_schema.as_ref(), response_schema)
    {
        // §8.2.5.1: the synthetic tool's input is the answer. It is the only declared
        // tool, so a tool_use under another name is still its call.
        let chosen = uses
            .iter()
            .find(|(_, name, _)| name == SYNTHETIC_TOOL_NAME)
            .or_else(|| uses.first());
        let text = content_text(&blocks);
        let Some((_, _, input)) = chosen else {
            let message = "the model did not call the structured-output tool".to_owned();
            return Err(soi(text.unwrap_or_default(), message, finish, schema));
        };
        let Some(input) = input else {
            let message = "the structured-output tool input is not a JSON object".to_owned();
            return Err(soi(text.unwrap_or_default(), message, finish, schema));
        };
        let value = Value::Object(input.clone());
        let output = canonical_string(&value);
        if let Some(violations) = describe_violations(validator, &value) {
            let message = format!("content does not match response_schema: {violations}");
            return Err(soi(output, message, finish, schema));
        }
        if finish == FinishReason::ToolCalls {
            finish = FinishReason::Stop; // the forced call is the answer, not a request
        }
        let message = AssistantMessage {
            content: Some(Content::Text(output)),
            tool_calls: Vec::new(),
        };
        return Ok(Response::new(
            message,
            finish,
            usage,
            raw.clone(),
            Some(value),
        ));
    }

    let tool_calls = uses
        .into_iter()
        .enumerate()
        .map(|(i, (id, name, input))| tool_call(i, id, name, input, prepared, lenient))
        .collect::<Result<Vec<_>, _>>()?;
    let message = AssistantMessage {
        content: content(blocks),
        tool_calls,
    };
    let parsed =
        Answer::new(&raw, IDS, finish, usage).structured(prepared, response_schema, &message)?;
    Ok(Response::new(message, finish, usage, raw.clone(), parsed))
}

/// A `tool_use` entry: id, name, and the input when it is an object.
type ToolUse = (String, String, Option<Map<String, Value>>);

/// Splits the content array into §3.1 blocks (in order) and `tool_use` entries.
fn read_content(
    entries: &[Value],
    lenient: bool,
) -> Result<(Vec<ContentBlock>, Vec<ToolUse>), LlmError> {
    let mut blocks = Vec::with_capacity(entries.len());
    let mut uses = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = |what: &str| invalid(format!("`content[{i}]`: {what}"));
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
        match entry.get("type").and_then(Value::as_str) {
            Some("text") => match text("text") {
                Some(t) if t.is_empty() => {}
                Some(t) => blocks.push(ContentBlock::text(t)),
                None => return Err(at("a text entry needs a string `text`")),
            },
            Some("thinking") => match text("thinking") {
                Some(t) => blocks.push(ContentBlock::Thinking(ThinkingBlock {
                    text: t,
                    signature: text("signature"),
                })),
                None => return Err(at("a thinking entry needs a string `thinking`")),
            },
            Some("redacted_thinking") => match text("data") {
                Some(data) => blocks.push(ContentBlock::RedactedThinking(RedactedThinkingBlock {
                    data,
                })),
                None => return Err(at("a redacted_thinking entry needs a string `data`")),
            },
            Some("tool_use") => {
                let input = entry.get("input").and_then(Value::as_object).cloned();
                let (id, name) = (
                    text("id").unwrap_or_default(),
                    text("name").unwrap_or_default(),
                );
                if !lenient && (id.is_empty() || name.is_empty() || input.is_none()) {
                    return Err(at(
                        "a tool_use entry needs `id`, `name` and an object `input`",
                    ));
                }
                uses.push((id, name, input));
            }
            Some(_) => {}
            None if lenient => {}
            None => return Err(at("an entry needs a string `type`")),
        }
    }
    Ok((blocks, uses))
}

/// One text block is the string form; anything else keeps its blocks; none is `None`.
fn content(mut blocks: Vec<ContentBlock>) -> Option<Content> {
    match blocks.as_slice() {
        [] => None,
        [ContentBlock::Text(_)] => match blocks.pop() {
            Some(ContentBlock::Text(t)) => Some(Content::Text(t.text)),
            _ => None,
        },
        _ => Some(Content::Blocks(blocks)),
    }
}

fn content_text(blocks: &[ContentBlock]) -> Option<String> {
    let texts = crate::message::text_parts(blocks);
    (!texts.is_empty()).then(|| texts.concat())
}

/// One tool call. Under `finish_reason: "error"` everything readable is surfaced;
/// otherwise the call must name a declared tool and match its parameters schema.
fn tool_call(
    i: usize,
    id: String,
    name: String,
    input: Option<Map<String, Value>>,
    prepared: &Prepared,
    lenient: bool,
) -> Result<ToolCall, LlmError> {
    if !lenient {
        let at = |what: &str| invalid(format!("`tool_use` {i}: {what}"));
        let validator = prepared
            .tool(&name)
            .ok_or_else(|| at(&format!("`{name}` is not one of the declared tools")))?;
        let args = Value::Object(input.clone().unwrap_or_default());
        if let Some(violations) = describe_violations(validator, &args) {
            return Err(at(&format!(
                "input does not match the parameters of `{name}`: {violations}"
            )));
        }
    }
    Ok(ToolCall {
        id,
        name,
        arguments: input,
        signature: None,
    })
}

/// §8.2.2 usage: `input_tokens` / `output_tokens`, and their sum as the total (not
/// reported when either addend is not); the implicit-cache fields stay absent.
fn usage(v: Option<&Value>) -> Usage {
    let Some(Value::Object(u)) = v else {
        return Usage::default();
    };
    let prompt = counter(u.get("input_tokens"));
    let completion = counter(u.get("output_tokens"));
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt.zip(completion).and_then(|(p, c)| p.checked_add(c)),
        cached_tokens: None,
        cache_creation_tokens: None,
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
