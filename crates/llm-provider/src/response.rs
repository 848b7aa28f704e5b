//! Spec: llm-provider §6 — the `Response` record, `finish_reason` and `usage`.

use serde_json::Value;

use crate::error::LlmError;
use crate::message::{AssistantMessage, Content};

/// Token usage (§6): a record that is always present; each counter is `None` when
/// the provider did not report it, or reported something malformed (§7 *Malformed
/// usage counter*: a non-integer, a negative or a boolean is "not reported", never
/// repaired).
pub use openarmature_core::vocab::llm::LlmUsage as Usage;

/// Why generation stopped (§6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// The model finished naturally.
    Stop,
    /// The model hit `max_tokens`.
    Length,
    /// The model returned tool calls.
    ToolCalls,
    /// A content filter blocked or truncated the response.
    ContentFilter,
    /// The provider reported an error mid-response (a degraded but parseable response;
    /// transient per §7). Also the mapping for any unknown provider value.
    Error,
}

impl FinishReason {
    /// `stop` / `length` / `tool_calls` / `content_filter` / `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Error => "error",
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of a `complete()` call (§6).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// The assistant message (text and/or tool calls).
    pub message: AssistantMessage,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
    /// Token usage.
    pub usage: Usage,
    /// The provider's parsed response body, verbatim (extensions included).
    pub raw: Value,
    /// The schema-validated value, when the call supplied a `response_schema` and the
    /// model returned content (never on a `tool_calls` response).
    pub parsed: Option<Value>,
}

impl Response {
    /// A response.
    pub fn new(
        message: AssistantMessage,
        finish_reason: FinishReason,
        usage: Usage,
        raw: Value,
        parsed: Option<Value>,
    ) -> Self {
        Response {
            message,
            finish_reason,
            usage,
            raw,
            parsed,
        }
    }

    /// The assistant's text content, when it is the string form.
    pub fn content(&self) -> Option<&str> {
        self.message.content.as_ref().and_then(Content::as_text)
    }

    /// The provider's response id (`raw.id`; Gemini: `raw.responseId`), if any.
    pub fn response_id(&self) -> Option<&str> {
        ["id", "responseId"]
            .iter()
            .find_map(|k| self.raw.get(k).and_then(Value::as_str))
    }

    /// The model the provider reported (`raw.model`; Gemini: `raw.modelVersion`),
    /// if any.
    pub fn response_model(&self) -> Option<&str> {
        ["model", "modelVersion"]
            .iter()
            .find_map(|k| self.raw.get(k).and_then(Value::as_str))
    }
}

/// A body outside the §6 shape: `provider_invalid_response` with `message`.
pub(crate) fn invalid(message: impl Into<String>) -> LlmError {
    LlmError::invalid_response(message)
}

/// A usage counter (§7 *Malformed usage counter*): a JSON non-negative integer;
/// anything else is "not reported".
pub(crate) fn counter(v: Option<&Value>) -> Option<u64> {
    match v {
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    }
}
