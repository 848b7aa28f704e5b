//! Spec: extension 0006 (spec/extensions/0006-anthropic-gemini-streaming.md) over
//! llm-provider §8.3 and §6 *Streaming assembly* — the Gemini
//! `streamGenerateContent?alt=sse` stream.
//!
//! Each event's `data` is a whole `GenerateContentResponse` carrying the next parts of
//! `candidates[0].content`: text parts are reported to the sink (a part with
//! `thought: true` as a reasoning delta, else as content) and joined with the adjacent
//! text part of the same kind; `functionCall` parts arrive whole and are kept in order.
//! `finishReason` and `usageMetadata` come from the last chunk that carries them; the
//! other top-level fields (`modelVersion`, `responseId`, `promptFeedback`) from the
//! first. The stream has no end marker: it ends with the body, and is complete once a
//! finish reason (or a prompt block reason) arrived. A chunk carrying `error` is a
//! mid-stream failure, categorized like an HTTP answer of its `error.code` (else 500).
//!
//! The assembled form is the equivalent atomic `generateContent` body, parsed by the
//! atomic mapping.

use serde_json::{Map, Value};

use super::errors;
use super::response::parse_value;
use crate::error::LlmError;
use crate::response::Response;
use crate::sse::{Assemble, SseEvent};
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate::Prepared;

fn invalid(message: impl Into<String>) -> LlmError {
    LlmError::invalid_response(message)
}

/// Accumulates the chunks of one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    head: Map<String, Value>,
    parts: Vec<Map<String, Value>>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
    saw_candidate: bool,
}

/// Whether a part is plain text (`text`, optionally `thought`) that a following text
/// part of the same kind may join.
fn joinable(part: &Map<String, Value>) -> Option<bool> {
    let text = part.get("text")?.is_string();
    let only_text = part.keys().all(|k| k == "text" || k == "thought");
    (text && only_text).then(|| part.get("thought") == Some(&Value::Bool(true)))
}

impl Assemble for Assembler {
    fn is_done(&self) -> bool {
        false
    }

    fn completed(&self) -> bool {
        self.finish_reason.is_some()
            || self
                .head
                .get("promptFeedback")
                .and_then(|f| f.get("blockReason"))
                .is_some()
    }

    fn event(&mut self, event: &SseEvent, sink: &dyn DeltaSink) -> Result<(), LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| invalid(format!("stream chunk is not valid JSON: {e}")).with_source(e))?;
        let Value::Object(mut chunk) = chunk else {
            return Err(invalid("stream chunk is not a JSON object"));
        };
        if let Some(error) = chunk.get("error") {
            let status = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500);
            let body = serde_json::to_vec(&chunk).unwrap_or_default();
            return Err(errors::from_status(
                status,
                &reqwest::header::HeaderMap::new(),
                &body,
            ));
        }
        if let Some(usage) = chunk.remove("usageMetadata").filter(|u| !u.is_null()) {
            self.usage = Some(usage);
        }
        let candidates = chunk.remove("candidates");
        for (key, value) in chunk {
            self.head.entry(key).or_insert(value);
        }
        let first = match candidates {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(list)) => match list.into_iter().next() {
                Some(Value::Object(c)) => c,
                Some(_) => return Err(invalid("stream chunk `candidates[0]` is not an object")),
                None => return Ok(()),
            },
            Some(other) => {
                return Err(invalid(format!(
                    "stream chunk `candidates` must be a list, got {other}"
                )))
            }
        };
        self.candidate(first, sink)
    }
}

impl Assembler {
    fn candidate(
        &mut self,
        mut candidate: Map<String, Value>,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        self.saw_candidate = true;
        if let Some(reason) = candidate.remove("finishReason").filter(|r| !r.is_null()) {
            self.finish_reason = Some(reason);
        }
        let parts = match candidate.get("content").and_then(|c| c.get("parts")) {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(parts)) => parts,
            Some(other) => {
                return Err(invalid(format!(
                    "stream chunk `content.parts` must be a list, got {other}"
                )))
            }
        };
        for part in parts {
            let Value::Object(part) = part else {
                return Err(invalid("stream chunk part is not an object"));
            };
            self.part(part.clone(), sink);
        }
        Ok(())
    }

    fn part(&mut self, part: Map<String, Value>, sink: &dyn DeltaSink) {
        let Some(thought) = joinable(&part) else {
            self.parts.push(part);
            return;
        };
        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
        if !text.is_empty() {
            let kind = if thought {
                DeltaKind::Reasoning
            } else {
                DeltaKind::Content
            };
            sink.on_delta(kind, text);
        }
        if let Some(last) = self
            .parts
            .last_mut()
            .filter(|last| joinable(last) == Some(thought))
        {
            if let Some(Value::String(s)) = last.get_mut("text") {
                s.push_str(text);
                return;
            }
        }
        self.parts.push(part);
    }

    /// The equivalent atomic `generateContent` body.
    fn assembled(&self) -> Value {
        let mut root = self.head.clone();
        if self.saw_candidate {
            let parts: Vec<Value> = self.parts.iter().cloned().map(Value::Object).collect();
            let mut candidate = Map::new();
            candidate.insert("index".into(), Value::from(0));
            candidate.insert(
                "content".into(),
                serde_json::json!({"role": "model", "parts": parts}),
            );
            if let Some(reason) = &self.finish_reason {
                candidate.insert("finishReason".into(), reason.clone());
            }
            root.insert(
                "candidates".into(),
                Value::Array(vec![Value::Object(candidate)]),
            );
        }
        if let Some(usage) = &self.usage {
            root.insert("usageMetadata".into(), usage.clone());
        }
        Value::Object(root)
    }

    /// The response assembled from the stream.
    ///
    /// # Errors
    /// As the atomic mapping.
    pub(crate) fn response(
        &self,
        prepared: &Prepared,
        response_schema: Option<&Value>,
    ) -> Result<Response, LlmError> {
        parse_value(self.assembled(), prepared, response_schema)
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests;
