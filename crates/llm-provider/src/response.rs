//! Spec: llm-provider §6 — the `Response` record, `finish_reason` and `usage`.

use serde_json::Value;

use crate::error::{LlmError, StructuredOutputInvalid};
use crate::message::{AssistantMessage, Content};
use crate::raw::RawBody;
use crate::schema::parse_structured;
use crate::validate::Prepared;

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
    /// The provider's response body, verbatim (extensions included): dereferences to
    /// the parsed JSON value, which a mapping that read the body's text directly
    /// builds only when it is first read.
    pub raw: RawBody,
    /// The schema-validated value, when the call supplied a `response_schema` and the
    /// model returned content (never on a `tool_calls` response).
    pub parsed: Option<Value>,
}

impl Response {
    /// A response carrying `message`: finish reason `tool_calls` when it calls tools
    /// (else `stop`), no usage, an empty raw body (what a test double answers).
    pub fn of(message: AssistantMessage) -> Self {
        let finish = if message.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        Response::new(
            message,
            finish,
            Usage::default(),
            serde_json::json!({}),
            None,
        )
    }

    /// A response.
    pub fn new(
        message: AssistantMessage,
        finish_reason: FinishReason,
        usage: Usage,
        raw: impl Into<RawBody>,
        parsed: Option<Value>,
    ) -> Self {
        Response {
            message,
            finish_reason,
            usage,
            raw: raw.into(),
            parsed,
        }
    }

    /// The assistant's text content, when it is the string form.
    pub fn content(&self) -> Option<&str> {
        self.message.content.as_ref().and_then(Content::as_text)
    }

    /// The provider's response id (`raw.id`; Gemini: `raw.responseId`), if any.
    pub fn response_id(&self) -> Option<&str> {
        self.raw.ids().0
    }

    /// The model the provider reported (`raw.model`; Gemini: `raw.modelVersion`),
    /// if any.
    pub fn response_model(&self) -> Option<&str> {
        self.raw.ids().1
    }
}

/// A 2xx body decoded as JSON (`provider_invalid_response` when it is not).
pub(crate) fn json_body(body: &[u8]) -> Result<Value, LlmError> {
    serde_json::from_slice(body)
        .map_err(|e| invalid(format!("response body is not valid JSON: {e}")).with_source(e))
}

/// What an atomic answer's structured-output step reads: the answer verbatim, the
/// keys its id and model stand under, its finish reason and usage.
pub(crate) struct Answer<'a> {
    /// The answer verbatim.
    pub(crate) raw: &'a Value,
    /// The id and model keys (`id` / `model`; Gemini: `responseId` / `modelVersion`).
    pub(crate) ids: (&'static str, &'static str),
    /// The mapped finish reason.
    pub(crate) finish: FinishReason,
    /// The mapped usage.
    pub(crate) usage: Usage,
}

impl<'a> Answer<'a> {
    /// The answer `raw` (id and model under `ids`), mapped to `finish` and `usage`.
    pub(crate) fn new(
        raw: &'a Value,
        ids: (&'static str, &'static str),
        finish: FinishReason,
        usage: Usage,
    ) -> Self {
        Answer {
            raw,
            ids,
            finish,
            usage,
        }
    }

    /// `structured_output_invalid`: `output_content` fails `schema` with `error_message`.
    pub(crate) fn output_invalid(
        &self,
        schema: &Value,
        output_content: String,
        error_message: String,
    ) -> LlmError {
        let field = |k: &str| self.raw.get(k).and_then(Value::as_str).map(str::to_owned);
        LlmError::StructuredOutputInvalid(Box::new(StructuredOutputInvalid {
            response_schema: schema.clone(),
            output_content,
            error_message,
            finish_reason: self.finish,
            usage: self.usage,
            response_id: field(self.ids.0),
            response_model: field(self.ids.1),
            raw: self.raw.clone(),
        }))
    }

    /// The §6 structured-output step: with a `response_schema` and a finish other
    /// than tool calls, `message`'s text parsed and validated (the value, or
    /// `structured_output_invalid`); otherwise `None`.
    ///
    /// # Errors
    /// `structured_output_invalid` for text that is not JSON or fails the schema.
    pub(crate) fn structured(
        &self,
        prepared: &Prepared,
        response_schema: Option<&Value>,
        message: &AssistantMessage,
    ) -> Result<Option<Value>, LlmError> {
        match structured_output(prepared, response_schema, self.finish, message) {
            None => Ok(None),
            Some((_, Ok(value))) => Ok(Some(value)),
            Some((schema, Err((text, error_message)))) => {
                Err(self.output_invalid(schema, text, error_message))
            }
        }
    }
}

/// A structured-output step's outcome: the validated value, or the text and what is
/// wrong with it.
pub(crate) type Structured = Result<Value, (String, String)>;

/// The §6 structured-output step of an answer finishing with `finish`: `None` without
/// a `response_schema` or for tool calls; otherwise the schema and `message`'s text
/// parsed and validated.
pub(crate) fn structured_output<'s>(
    prepared: &Prepared,
    response_schema: Option<&'s Value>,
    finish: FinishReason,
    message: &AssistantMessage,
) -> Option<(&'s Value, Structured)> {
    match (prepared.response_schema.as_ref(), response_schema) {
        (Some(validator), Some(schema)) if finish != FinishReason::ToolCalls => {
            let text = message.text().unwrap_or_default();
            Some((
                schema,
                parse_structured(validator, &text).map_err(|error| (text, error)),
            ))
        }
        _ => None,
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
