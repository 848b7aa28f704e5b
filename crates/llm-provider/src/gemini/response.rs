//! Spec: llm-provider §8.3.2 (response mapping, thought-signature capture), §8.3.5
//! (structured output) and §7 *Malformed usage counter*.
//!
//! Parsing never panics and never trusts the body: anything outside the §6 shape is
//! `provider_invalid_response`; a malformed usage counter is only "not reported".
//!
//! Content: `text` parts become text blocks (`thought: true` ones thinking blocks),
//! `functionCall` parts tool calls, in order; each `thoughtSignature` is kept on the
//! block or tool call it rode on. When no part needs a block (no thinking, no
//! signature) the text parts are concatenated into the string form. Other part
//! kinds (code execution, inline media) stay in `raw` only. A `functionCall`
//! without an `id` (Gemini omits it on some models) gets `call_<n>`, its position
//! among the response's calls, so a `tool` reply can reference it.

use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::message::{AssistantMessage, Content, ContentBlock, TextBlock, ThinkingBlock, ToolCall};
use crate::response::{counter, invalid, json_body, Answer, FinishReason, Response, Usage};
use crate::schema::describe_violations;
use crate::validate::Prepared;

/// Where the answer's id and model stand.
const IDS: (&str, &str) = ("responseId", "modelVersion");

/// Maps a 2xx `generateContent` body to a [`Response`] (or `structured_output_invalid`).
///
/// # Errors
/// `provider_invalid_response` for a body outside the §6 shape, or for a non-error
/// response whose tool calls do not match the declared tools;
/// `structured_output_invalid` for content that fails `response_schema`.
pub(crate) fn parse(
    body: &[u8],
    prepared: &Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, LlmError> {
    let raw = json_body(body)?;
    parse_value(raw, prepared, response_schema)
}

/// [`parse`] of an already decoded body (a streamed response's assembled chunks).
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_value(
    raw: Value,
    prepared: &Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, LlmError> {
    let root = raw
        .as_object()
        .ok_or_else(|| invalid("response body is not a JSON object"))?;
    let usage = usage(root.get("usageMetadata"));
    let candidate = match root.get("candidates") {
        Some(Value::Array(list)) if !list.is_empty() => list
            .first()
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("`candidates[0]` must be an object"))?,
        // A prompt the provider blocked has no candidates, only the block reason.
        None | Some(Value::Array(_))
            if root
                .get("promptFeedback")
                .and_then(|f| f.get("blockReason"))
                .is_some() =>
        {
            let message = AssistantMessage::default();
            return Ok(Response::new(
                message,
                FinishReason::ContentFilter,
                usage,
                raw,
                None,
            ));
        }
        _ => return Err(invalid("`candidates` must be a non-empty list")),
    };
    let mut finish_reason = finish_reason(candidate.get("finishReason"));
    let parts = match candidate.get("content") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Object(content)) => {
            match content.get("role") {
                None | Some(Value::Null) => {}
                Some(Value::String(r)) if r == "model" => {}
                Some(other) => {
                    return Err(invalid(format!(
                        "`candidates[0].content.role` must be \"model\", got {other}"
                    )))
                }
            }
            match content.get("parts") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(parts)) => parts.as_slice(),
                Some(other) => {
                    return Err(invalid(format!(
                        "`candidates[0].content.parts` must be a list, got {other}"
                    )))
                }
            }
        }
        Some(other) => {
            return Err(invalid(format!(
                "`candidates[0].content` must be an object, got {other}"
            )))
        }
    };
    if parts.iter().any(|p| p.get("functionCall").is_some()) {
        finish_reason = FinishReason::ToolCalls;
    }
    // Read leniently only when the reported finish reason is `error` (§3): a
    // `functionCall` part makes it `tool_calls`, whatever the raw `finishReason`
    // said, so its calls are checked against the declared tools.
    let lenient = finish_reason == FinishReason::Error;
    let message = message(parts, prepared, lenient)?;

    let parsed = Answer::new(&raw, IDS, finish_reason, usage).structured(
        prepared,
        response_schema,
        &message,
    )?;
    Ok(Response::new(message, finish_reason, usage, raw, parsed))
}

/// §8.3.2 `finishReason`; a `functionCall` part overrides it (in the caller).
fn finish_reason(v: Option<&Value>) -> FinishReason {
    match v.and_then(Value::as_str) {
        Some("STOP") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII") => {
            FinishReason::ContentFilter
        }
        _ => FinishReason::Error,
    }
}

/// The assistant message from the candidate's parts.
fn message(
    parts: &[Value],
    prepared: &Prepared,
    lenient: bool,
) -> Result<AssistantMessage, LlmError> {
    let mut blocks: Vec<ContentBlock> = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let Some(part) = part.as_object() else {
            return Err(invalid(format!("`parts[{i}]` must be an object")));
        };
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            let n = tool_calls.len();
            tool_calls.push(tool_call(i, n, call, signature, prepared, lenient)?);
        } else if let Some(text) = part.get("text") {
            let text = text
                .as_str()
                .ok_or_else(|| invalid(format!("`parts[{i}].text` must be a string")))?
                .to_owned();
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                blocks.push(ContentBlock::Thinking(ThinkingBlock { text, signature }));
            } else {
                blocks.push(ContentBlock::Text(TextBlock { text, signature }));
            }
        }
    }
    let plain = blocks.iter().all(|b| {
        matches!(
            b,
            ContentBlock::Text(TextBlock {
                signature: None,
                ..
            })
        )
    });
    let content = if blocks.is_empty() {
        None
    } else if plain {
        let text: String = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        Some(Content::Text(text))
    } else {
        Some(Content::Blocks(blocks))
    };
    Ok(AssistantMessage {
        content,
        tool_calls,
    })
}

/// One `functionCall` part (`n`: its position among the calls). Under
/// `finish_reason: "error"` whatever can be read is surfaced; otherwise it must name
/// a declared tool and match its parameters schema.
fn tool_call(
    i: usize,
    n: usize,
    call: &Value,
    signature: Option<String>,
    prepared: &Prepared,
    lenient: bool,
) -> Result<ToolCall, LlmError> {
    let at = |what: &str| invalid(format!("`parts[{i}].functionCall`: {what}"));
    let text = |k: &str| call.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = text("id")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("call_{n}"));
    let name = text("name");
    let arguments: Option<Map<String, Value>> = match call.get("args") {
        None | Some(Value::Null) => Some(Map::new()),
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => None,
    };
    if lenient {
        return Ok(ToolCall {
            id,
            name: name.unwrap_or_default(),
            arguments,
            signature,
        });
    }
    let name = name
        .filter(|s| !s.is_empty())
        .ok_or_else(|| at("missing `name`"))?;
    let arguments = arguments.ok_or_else(|| at("`args` is not a JSON object"))?;
    let validator = prepared
        .tool(&name)
        .ok_or_else(|| at(&format!("`{name}` is not one of the declared tools")))?;
    if let Some(violations) = describe_violations(validator, &Value::Object(arguments.clone())) {
        return Err(at(&format!(
            "arguments do not match the parameters of `{name}`: {violations}"
        )));
    }
    Ok(ToolCall {
        id,
        name,
        arguments: Some(arguments),
        signature,
    })
}

/// §8.3.2 usage from `usageMetadata`; `cachedContentTokenCount` is the cached count.
fn usage(v: Option<&Value>) -> Usage {
    let Some(Value::Object(u)) = v else {
        return Usage::default();
    };
    Usage {
        prompt_tokens: counter(u.get("promptTokenCount")),
        completion_tokens: counter(u.get("candidatesTokenCount")),
        total_tokens: counter(u.get("totalTokenCount")),
        cached_tokens: counter(u.get("cachedContentTokenCount")),
        cache_creation_tokens: None,
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
