//! Spec: llm-provider §8.1.6 (OpenAI-compatible streaming) and §6 *Streaming assembly*.
//!
//! Each `data:` event is a `chat.completion.chunk`; `data: [DONE]` ends the stream.
//! Per chunk, `choices[0].delta` may carry `content` (a content delta, reported to the
//! sink), `reasoning_content` or `reasoning` (the reasoning extension of DeepSeek /
//! vLLM: a reasoning delta), and `tool_calls` fragments keyed by `index` (reassembled,
//! not reported). `finish_reason` comes from the last content-bearing chunk, `usage`
//! from the terminal empty-`choices` chunk (kept verbatim). A chunk carrying `error`
//! is a mid-stream failure, categorized like an HTTP error of its `code` (else 500).
//!
//! The assembled form is the equivalent `chat.completion` body (the first chunk's
//! top-level fields, one choice with the assembled message, the usage block), parsed
//! by the atomic response mapping — so streamed and atomic responses are structurally
//! identical, tool calls and structured output validated alike. Streamed reasoning
//! becomes a leading thinking block of a content-block `message.content`.

use serde_json::{Map, Value};

use super::errors;
use super::response::parse_value;
use crate::error::LlmError;
use crate::message::{Content, ContentBlock, ThinkingBlock};
use crate::response::Response;
use crate::sse::{Assemble, SseEvent, DONE};
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate::Prepared;

fn invalid(message: impl Into<String>) -> LlmError {
    LlmError::invalid_response(message)
}

/// One tool call being reassembled.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Accumulates the chunks of one streamed response.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    head: Map<String, Value>,
    content: Option<String>,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
    done: bool,
}

fn text_field<'v>(delta: &'v Map<String, Value>, key: &str) -> Result<Option<&'v str>, LlmError> {
    match delta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(format!(
            "stream chunk `delta.{key}` must be a string, got {other}"
        ))),
    }
}

impl Assemble for Assembler {
    /// Whether `[DONE]` was seen.
    fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the stream reached a terminal state (`[DONE]`, a finish reason, usage).
    fn completed(&self) -> bool {
        self.done || self.finish_reason.is_some() || self.usage.is_some()
    }

    /// Handles one event.
    ///
    /// # Errors
    /// `provider_invalid_response` for a malformed chunk; the chunk's category for a
    /// mid-stream `error` chunk.
    fn event(&mut self, event: &SseEvent, sink: &dyn DeltaSink) -> Result<(), LlmError> {
        let data = event.data.trim();
        if data == DONE {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() || self.done {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| invalid(format!("stream chunk is not valid JSON: {e}")).with_source(e))?;
        self.chunk(chunk, event.event.as_deref() == Some("error"), sink)
    }
}

impl Assembler {
    fn chunk(
        &mut self,
        chunk: Value,
        error_event: bool,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        let Value::Object(mut chunk) = chunk else {
            return Err(invalid("stream chunk is not a JSON object"));
        };
        if chunk.contains_key("error") || error_event {
            return Err(mid_stream_error(&chunk));
        }
        if let Some(usage) = chunk.remove("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage);
        }
        let choices = chunk.remove("choices");
        for (key, value) in chunk {
            self.head.entry(key).or_insert(value);
        }
        let choices = match choices {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(c)) => c,
            Some(other) => {
                return Err(invalid(format!(
                    "stream chunk `choices` must be a list, got {other}"
                )))
            }
        };
        for (position, choice) in choices.iter().enumerate() {
            let choice = choice
                .as_object()
                .ok_or_else(|| invalid("stream chunk choice is not an object"))?;
            let index = choice
                .get("index")
                .map_or(Some(position as u64), Value::as_u64);
            if index != Some(0) {
                continue; // only the first choice is surfaced (§6: one message)
            }
            if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
                self.finish_reason = Some(reason.clone());
            }
            match choice.get("delta") {
                None | Some(Value::Null) => {}
                Some(Value::Object(delta)) => self.delta(delta, sink)?,
                Some(other) => {
                    return Err(invalid(format!(
                        "stream chunk `delta` must be an object, got {other}"
                    )))
                }
            }
        }
        Ok(())
    }

    fn delta(&mut self, delta: &Map<String, Value>, sink: &dyn DeltaSink) -> Result<(), LlmError> {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = text_field(delta, key)? {
                self.reasoning.push_str(text);
                sink.on_delta(DeltaKind::Reasoning, text);
            }
        }
        if let Some(text) = text_field(delta, "content")? {
            self.content.get_or_insert_with(String::new).push_str(text);
            sink.on_delta(DeltaKind::Content, text);
        }
        match delta.get("tool_calls") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(fragments)) => fragments
                .iter()
                .enumerate()
                .try_for_each(|(i, f)| self.tool_fragment(i, f)),
            Some(other) => Err(invalid(format!(
                "stream chunk `delta.tool_calls` must be a list, got {other}"
            ))),
        }
    }

    fn tool_fragment(&mut self, position: usize, fragment: &Value) -> Result<(), LlmError> {
        let fragment = fragment
            .as_object()
            .ok_or_else(|| invalid("stream chunk tool-call fragment is not an object"))?;
        let index = match fragment.get("index") {
            None => position as u64,
            Some(i) => i.as_u64().ok_or_else(|| {
                invalid(format!("tool-call fragment `index` {i} is not an index"))
            })?,
        };
        fn text(v: Option<&Value>) -> Option<&str> {
            v.and_then(Value::as_str).filter(|s| !s.is_empty())
        }
        let function = fragment.get("function");
        let slot = match self.calls.iter().position(|c| c.index == index) {
            Some(p) => &mut self.calls[p],
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                let last = self.calls.len() - 1;
                &mut self.calls[last]
            }
        };
        if let (None, Some(id)) = (&slot.id, text(fragment.get("id"))) {
            slot.id = Some(id.to_owned());
        }
        if let (None, Some(kind)) = (&slot.kind, text(fragment.get("type"))) {
            slot.kind = Some(kind.to_owned());
        }
        if let (None, Some(name)) = (&slot.name, text(function.and_then(|f| f.get("name")))) {
            slot.name = Some(name.to_owned());
        }
        match function.and_then(|f| f.get("arguments")) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => slot.arguments.push_str(s),
            Some(other) => {
                return Err(invalid(format!(
                    "tool-call fragment `function.arguments` must be a string, got {other}"
                )))
            }
        }
        Ok(())
    }

    /// The assembled `chat.completion` body.
    pub(crate) fn assembled(&self) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), Value::from("assistant"));
        message.insert(
            "content".into(),
            self.content.clone().map_or(Value::Null, Value::from),
        );
        if !self.reasoning.is_empty() {
            message.insert(
                "reasoning_content".into(),
                Value::from(self.reasoning.clone()),
            );
        }
        if !self.calls.is_empty() {
            let mut calls: Vec<&PartialCall> = self.calls.iter().collect();
            calls.sort_by_key(|c| c.index);
            let calls = calls
                .into_iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id,
                        "type": c.kind.as_deref().unwrap_or("function"),
                        "function": {"name": c.name, "arguments": c.arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut root = self.head.clone();
        root.insert("object".into(), Value::from("chat.completion"));
        root.insert(
            "choices".into(),
            serde_json::json!([{
                "index": 0,
                "message": message,
                "finish_reason": self.finish_reason.clone().unwrap_or(Value::Null),
            }]),
        );
        if let Some(usage) = &self.usage {
            root.insert("usage".into(), usage.clone());
        }
        Value::Object(root)
    }

    /// The response assembled from the stream (§6 *Streaming assembly*).
    ///
    /// # Errors
    /// As the atomic mapping: `provider_invalid_response`, `structured_output_invalid`.
    pub(crate) fn response(
        &self,
        prepared: &Prepared,
        response_schema: Option<&Value>,
    ) -> Result<Response, LlmError> {
        let mut response = parse_value(self.assembled(), prepared, response_schema)?;
        if !self.reasoning.is_empty() {
            let mut blocks = vec![ContentBlock::Thinking(ThinkingBlock {
                text: self.reasoning.clone(),
                signature: None,
            })];
            if let Some(text) = &self.content {
                blocks.push(ContentBlock::text(text.clone()));
            }
            response.message.content = Some(Content::Blocks(blocks));
        }
        Ok(response)
    }
}

/// A mid-stream `error` chunk as a §7 error: `error.code` (or `error.status`) when it
/// is an HTTP status, else 500.
fn mid_stream_error(chunk: &Map<String, Value>) -> LlmError {
    let error = chunk.get("error");
    let status = ["code", "status"]
        .iter()
        .find_map(|k| error.and_then(|e| e.get(*k)).and_then(Value::as_u64))
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (400..600).contains(s))
        .unwrap_or(500);
    let body = serde_json::to_vec(chunk).unwrap_or_default();
    errors::from_status(status, &reqwest::header::HeaderMap::new(), &body)
}

#[cfg(test)]
#[path = "stream_tests.rs"]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests;
