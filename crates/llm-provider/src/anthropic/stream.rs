//! Spec: extension 0006 (spec/extensions/0006-anthropic-gemini-streaming.md) over
//! llm-provider §8.2 and §6 *Streaming assembly* — the Anthropic Messages event stream.
//!
//! Each event's `data` is an object whose `type` names it (the `event:` line repeats
//! it): `message_start` carries the message head (id, model, role, the input usage);
//! `content_block_start` / `content_block_delta` / `content_block_stop` build the
//! content blocks by `index` (`text_delta` and `thinking_delta` are reported to the
//! sink as content and reasoning deltas; `input_json_delta` fragments are joined into a
//! `tool_use` block's `input`, `signature_delta` into a thinking block's signature);
//! `message_delta` carries `stop_reason`, `stop_sequence` and the final usage;
//! `message_stop` ends the stream; `ping` and unknown types are skipped. An `error`
//! event is a mid-stream failure, categorized as an HTTP answer of its `error.type`
//! would be (`overloaded_error` as 529: transient).
//!
//! The assembled form is the equivalent atomic Messages body, parsed by the atomic
//! mapping, so streamed and atomic responses are structurally identical.

use serde_json::{Map, Value};

use super::errors;
use super::response::parse_value;
use super::StructuredOutputPath;
use crate::error::LlmError;
use crate::response::Response;
use crate::sse::{Assemble, SseEvent};
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate::Prepared;

fn invalid(message: impl Into<String>) -> LlmError {
    LlmError::invalid_response(message)
}

/// One content block being assembled.
#[derive(Debug)]
struct Block {
    index: u64,
    body: Map<String, Value>,
    /// A `tool_use` block's `input_json_delta` fragments.
    json: String,
}

/// Accumulates the events of one streamed message.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    head: Option<Map<String, Value>>,
    blocks: Vec<Block>,
    usage: Map<String, Value>,
    stop_reason: Option<Value>,
    stop_sequence: Option<Value>,
    done: bool,
}

/// The HTTP status an in-stream `error.type` stands for (§8.2.3's table read back).
fn status_of(kind: Option<&str>) -> u16 {
    match kind {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("billing_error") => 402,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("timeout_error") => 504,
        Some("overloaded_error") => 529,
        _ => 500,
    }
}

fn object<'v>(v: Option<&'v Value>, what: &str) -> Result<&'v Map<String, Value>, LlmError> {
    v.and_then(Value::as_object)
        .ok_or_else(|| invalid(format!("stream event `{what}` must be an object")))
}

fn index_of(event: &Map<String, Value>) -> Result<u64, LlmError> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid("stream event `index` must be a non-negative integer"))
}

fn append(body: &mut Map<String, Value>, key: &str, text: &str) {
    match body.get_mut(key) {
        Some(Value::String(s)) => s.push_str(text),
        _ => {
            body.insert(key.to_owned(), Value::from(text));
        }
    }
}

impl Assemble for Assembler {
    fn is_done(&self) -> bool {
        self.done
    }

    fn completed(&self) -> bool {
        self.done || (self.head.is_some() && self.stop_reason.is_some())
    }

    fn event(&mut self, event: &SseEvent, sink: &dyn DeltaSink) -> Result<(), LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| invalid(format!("stream event is not valid JSON: {e}")).with_source(e))?;
        let Value::Object(map) = value else {
            return Err(invalid("stream event is not a JSON object"));
        };
        let kind = map
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "message_start" => self.start(&map),
            "content_block_start" => self.block_start(&map, sink),
            "content_block_delta" => self.block_delta(&map, sink),
            "content_block_stop" => Ok(()),
            "message_delta" => self.message_delta(&map),
            "message_stop" => {
                self.done = true;
                Ok(())
            }
            "error" => Err(mid_stream_error(&map)),
            // `ping` and event types newer than this mapping.
            _ => Ok(()),
        }
    }
}

impl Assembler {
    fn start(&mut self, event: &Map<String, Value>) -> Result<(), LlmError> {
        let mut message = object(event.get("message"), "message")?.clone();
        if let Some(Value::Object(usage)) = message.remove("usage") {
            self.usage.extend(usage);
        }
        self.head = Some(message);
        Ok(())
    }

    fn block_start(
        &mut self,
        event: &Map<String, Value>,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        let index = index_of(event)?;
        let body = object(event.get("content_block"), "content_block")?.clone();
        if self.blocks.iter().any(|b| b.index == index) {
            return Err(invalid(format!("content block {index} started twice")));
        }
        // A block may start with text already in it (the API sends it empty, but
        // the stream does not promise that): it is reported like a delta, so the
        // deltas always add up to the assembled text.
        let initial = match body.get("type").and_then(Value::as_str) {
            Some("text") => body.get("text").map(|t| (DeltaKind::Content, t)),
            Some("thinking") => body.get("thinking").map(|t| (DeltaKind::Reasoning, t)),
            _ => None,
        };
        if let Some((kind, Value::String(t))) = initial {
            if !t.is_empty() {
                sink.on_delta(kind, t);
            }
        }
        self.blocks.push(Block {
            index,
            body,
            json: String::new(),
        });
        Ok(())
    }

    fn block_delta(
        &mut self,
        event: &Map<String, Value>,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        let index = index_of(event)?;
        let delta = object(event.get("delta"), "delta")?;
        let block = self
            .blocks
            .iter_mut()
            .find(|b| b.index == index)
            .ok_or_else(|| invalid(format!("a delta for content block {index}, never started")))?;
        let text = |key: &str| -> Result<&str, LlmError> {
            delta
                .get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(format!("stream delta `{key}` must be a string")))
        };
        let kind = delta.get("type").and_then(Value::as_str);
        let block_type = block.body.get("type").and_then(Value::as_str);
        let expected = match kind {
            Some("text_delta") => Some("text"),
            Some("thinking_delta" | "signature_delta") => Some("thinking"),
            _ => None,
        };
        if let Some(expected) = expected {
            // A delta for a block of another type would be reported to the caller
            // but dropped from the assembled response (or mis-assembled).
            if block_type != Some(expected) {
                return Err(invalid(format!(
                    "a {} for content block {index} of type {}",
                    kind.unwrap_or_default(),
                    block_type.unwrap_or("(none)")
                )));
            }
        }
        match kind {
            Some("text_delta") => {
                let t = text("text")?;
                append(&mut block.body, "text", t);
                if !t.is_empty() {
                    sink.on_delta(DeltaKind::Content, t);
                }
            }
            Some("thinking_delta") => {
                let t = text("thinking")?;
                append(&mut block.body, "thinking", t);
                if !t.is_empty() {
                    sink.on_delta(DeltaKind::Reasoning, t);
                }
            }
            Some("signature_delta") => append(&mut block.body, "signature", text("signature")?),
            Some("input_json_delta") => block.json.push_str(text("partial_json")?),
            // Citations and delta types newer than this mapping.
            _ => {}
        }
        Ok(())
    }

    fn message_delta(&mut self, event: &Map<String, Value>) -> Result<(), LlmError> {
        if let Some(delta) = event.get("delta").and_then(Value::as_object) {
            if let Some(reason) = delta.get("stop_reason").filter(|r| !r.is_null()) {
                self.stop_reason = Some(reason.clone());
            }
            if let Some(seq) = delta.get("stop_sequence") {
                self.stop_sequence = Some(seq.clone());
            }
        }
        if let Some(Value::Object(usage)) = event.get("usage") {
            // Cumulative counts: the latest value of each key wins.
            for (k, v) in usage {
                if !v.is_null() {
                    self.usage.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(())
    }

    /// The equivalent atomic Messages body.
    fn assembled(&self) -> Result<Value, LlmError> {
        let mut root = self
            .head
            .clone()
            .ok_or_else(|| invalid("the stream carried no `message_start`"))?;
        let mut blocks: Vec<&Block> = self.blocks.iter().collect();
        blocks.sort_by_key(|b| b.index);
        let mut content = Vec::with_capacity(blocks.len());
        for block in blocks {
            let mut body = block.body.clone();
            if body.get("type").and_then(Value::as_str) == Some("tool_use") {
                let input = if block.json.trim().is_empty() {
                    body.get("input")
                        .cloned()
                        .unwrap_or(Value::Object(Map::new()))
                } else {
                    serde_json::from_str(&block.json).map_err(|e| {
                        invalid(format!(
                            "the streamed input of tool_use block {} is not valid JSON: {e}",
                            block.index
                        ))
                        .with_source(e)
                    })?
                };
                body.insert("input".into(), input);
            }
            content.push(Value::Object(body));
        }
        root.insert("content".into(), Value::Array(content));
        root.insert(
            "stop_reason".into(),
            self.stop_reason.clone().unwrap_or(Value::Null),
        );
        if let Some(seq) = &self.stop_sequence {
            root.insert("stop_sequence".into(), seq.clone());
        }
        root.insert("usage".into(), Value::Object(self.usage.clone()));
        Ok(Value::Object(root))
    }

    /// The response assembled from the stream.
    ///
    /// # Errors
    /// As the atomic mapping, plus `provider_invalid_response` for a stream without
    /// `message_start` or with a tool input that is not JSON.
    pub(crate) fn response(
        &self,
        prepared: &Prepared,
        response_schema: Option<&Value>,
        path: Option<StructuredOutputPath>,
    ) -> Result<Response, LlmError> {
        parse_value(self.assembled()?, prepared, response_schema, path)
    }
}

/// An in-stream `error` event as the §8.2.3 error of the HTTP answer it stands for.
fn mid_stream_error(event: &Map<String, Value>) -> LlmError {
    let kind = event
        .get("error")
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str);
    let body = serde_json::to_vec(event).unwrap_or_default();
    errors::from_status(status_of(kind), &reqwest::header::HeaderMap::new(), &body)
}

#[cfg(test)]
#[path = "stream_tests.rs"]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests;
