//! The typed LLM events (graph-engine §6) and the per-attempt signal (llm-provider
//! §7.1). `openarmature-llm` builds and dispatches them (through the engine's
//! `NodeCtx::dispatch_event`) when a `complete()` call runs inside a node. Payload
//! fields are plain JSON values so no crate that reads them needs the LLM types.
//!
//! Per call: zero or more [`LlmAttemptEvent`]s (one per wire attempt) interleaved, for a
//! streamed call, with its [`LlmTokenEvent`](super::LlmTokenEvent)s, then exactly one
//! terminal [`LlmCompletionEvent`] or [`LlmFailedEvent`], all on the node's serial
//! queue before the node's own `completed` event.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{EventMap, EventMessages, LlmUsage};
use crate::vocab::prompt::{PromptContext, PromptGroupIdentity, PromptIdentity, TokenBudget};
use crate::CallSite;

/// Why a call-level retry attempt was scheduled (llm-provider §7.1): the class of the
/// previous attempt's failure. Attempt 0 has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryReason {
    /// The previous attempt failed with an error the classifier retries.
    Transient,
    /// The previous attempt raised `structured_output_invalid` and a reask builder
    /// appended a correction.
    Reask,
}

impl RetryReason {
    /// `"transient"` / `"reask"` (the `openarmature.llm.retry_reason` value).
    pub fn as_str(self) -> &'static str {
        match self {
            RetryReason::Transient => "transient",
            RetryReason::Reask => "reask",
        }
    }
}

/// The request side of a call (or of one attempt).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmRequestSummary {
    /// The provider identifier (`gen_ai.system`, e.g. `openai`); shared with the
    /// provider that made the call (no copy per call).
    pub provider: Arc<str>,
    /// The bound model the request was made against (shared like `provider`).
    pub model: Arc<str>,
    /// Minted per `complete()` call; shared by every attempt of the call.
    pub call_id: Arc<str>,
    /// Extension 0001 (attempt accounting): the logical call this `complete()` call
    /// belongs to, stable across both retry lanes — a node-level retry that re-issues
    /// the call gets a new `call_id` but the same logical call id. `None` when the
    /// emitter did not derive one. Shared by every summary of the call.
    pub logical_call_id: Option<Arc<str>>,
    /// The message list sent, in llm-provider §3 shape, inline image bytes redacted
    /// (rendered on first read; see [`EventMessages`]). Shared: the attempt and
    /// terminal events of one call point at the same list.
    pub input_messages: EventMessages,
    /// The declared sampling parameters that were set (GenAI names, no prefix),
    /// built on first read (see [`EventMap`]).
    pub request_params: EventMap,
    /// The `RuntimeConfig` extras pass-through bag.
    pub request_extras: Map<String, Value>,
    /// The prompt-context binding active when the call was made (graph-engine §6
    /// `active_prompt` / `active_prompt_group` / `token_budget`).
    pub prompt_context: PromptContext,
}

impl LlmRequestSummary {
    /// A request summary with an empty prompt context: the emitter sets the one
    /// bound where the call is made with [`LlmRequestSummary::with_prompt_context`].
    pub fn new(
        provider: impl Into<Arc<str>>,
        model: impl Into<Arc<str>>,
        call_id: impl Into<Arc<str>>,
        input_messages: Vec<Value>,
        request_params: Map<String, Value>,
        request_extras: Map<String, Value>,
    ) -> Self {
        LlmRequestSummary::from_parts(
            provider,
            model,
            call_id,
            input_messages.into(),
            request_params.into(),
            request_extras,
        )
    }

    /// [`LlmRequestSummary::new`] with the messages and parameters given as
    /// [`Deferred`](crate::vocab::Deferred) parts (built when an observer first reads them).
    pub fn from_parts(
        provider: impl Into<Arc<str>>,
        model: impl Into<Arc<str>>,
        call_id: impl Into<Arc<str>>,
        input_messages: EventMessages,
        request_params: EventMap,
        request_extras: Map<String, Value>,
    ) -> Self {
        LlmRequestSummary {
            provider: provider.into(),
            model: model.into(),
            call_id: call_id.into(),
            logical_call_id: None,
            input_messages,
            request_params,
            request_extras,
            prompt_context: PromptContext::default(),
        }
    }

    /// Sets the prompt context bound where the call was made.
    pub fn with_prompt_context(mut self, prompt_context: PromptContext) -> Self {
        self.prompt_context = prompt_context;
        self
    }

    /// The active prompt's identity at call time (`active_prompt`).
    pub fn active_prompt(&self) -> Option<&PromptIdentity> {
        self.prompt_context.prompt()
    }

    /// The active prompt group's identity at call time (`active_prompt_group`).
    pub fn active_prompt_group(&self) -> Option<&PromptGroupIdentity> {
        self.prompt_context.group()
    }

    /// The active prompt's declared token budget at call time (`token_budget`).
    pub fn token_budget(&self) -> Option<TokenBudget> {
        self.prompt_context.token_budget()
    }

    /// Sets the logical call id (extension 0001).
    pub fn with_logical_call_id(mut self, logical_call_id: impl Into<Arc<str>>) -> Self {
        self.logical_call_id = Some(logical_call_id.into());
        self
    }
}

/// The response side: what the provider returned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmResponseSummary {
    /// The model the provider reported, if any.
    pub response_model: Option<String>,
    /// The provider's response id, if any.
    pub response_id: Option<String>,
    /// Token usage (always a record; counters may be `None`).
    pub usage: LlmUsage,
    /// The normalized finish reason (`stop`, `length`, ...): a static name for the
    /// normalized reasons (no allocation per call).
    pub finish_reason: Option<Cow<'static, str>>,
    /// The assistant's text content, verbatim (`None` for a tool-call-only reply).
    pub output_content: Option<String>,
    /// The assistant's tool calls as `{id, name, arguments}` records (`None` when none).
    pub output_tool_calls: Option<Vec<Value>>,
}

impl LlmResponseSummary {
    /// A response summary.
    pub fn new(
        response_model: Option<String>,
        response_id: Option<String>,
        usage: LlmUsage,
        finish_reason: Option<Cow<'static, str>>,
        output_content: Option<String>,
        output_tool_calls: Option<Vec<Value>>,
    ) -> Self {
        LlmResponseSummary {
            response_model,
            response_id,
            usage,
            finish_reason,
            output_content,
            output_tool_calls,
        }
    }
}

/// A failed call's (or attempt's) error surface.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlmFailure {
    /// The llm-provider §7 category, e.g. `provider_unavailable`.
    pub error_category: String,
    /// A vendor error type or code (e.g. the body's `error.type`), if any.
    pub error_type: Option<String>,
    /// The error's message (empty when it had none).
    pub error_message: String,
    /// How long the provider asked the caller to wait (`Retry-After` on a rate-limit
    /// answer), when it did. A project addition to the spec's event surface: it lets an
    /// observer tell a `Retry-After` wait from a plain backoff.
    pub retry_after: Option<std::time::Duration>,
}

impl LlmFailure {
    /// A failure record.
    pub fn new(
        error_category: impl Into<String>,
        error_type: Option<String>,
        error_message: impl Into<String>,
    ) -> Self {
        LlmFailure {
            error_category: error_category.into(),
            error_type,
            error_message: error_message.into(),
            retry_after: None,
        }
    }

    /// Sets the wait the provider asked for ([`LlmFailure::retry_after`]).
    pub fn with_retry_after(mut self, retry_after: Option<std::time::Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }
}

/// Typed LLM completion event (graph-engine §6): one per successful `complete()` call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmCompletionEvent {
    /// The calling node.
    pub site: CallSite,
    /// The request (the caller's messages and config), shared with the call's
    /// attempt events when it is the same.
    pub request: Arc<LlmRequestSummary>,
    /// The response, shared with the final attempt's event.
    pub response: Arc<LlmResponseSummary>,
    /// Wall-clock latency of the whole call, in milliseconds.
    pub latency_ms: Option<f64>,
}

impl LlmCompletionEvent {
    /// A completion event.
    pub fn new(
        site: CallSite,
        request: impl Into<Arc<LlmRequestSummary>>,
        response: impl Into<Arc<LlmResponseSummary>>,
        latency_ms: Option<f64>,
    ) -> Self {
        LlmCompletionEvent {
            site,
            request: request.into(),
            response: response.into(),
            latency_ms,
        }
    }
}

/// Typed LLM failure event (graph-engine §6): one per `complete()` call that raised.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmFailedEvent {
    /// The calling node.
    pub site: CallSite,
    /// The request (the caller's messages and config), shared with the call's
    /// attempt events when it is the same.
    pub request: Arc<LlmRequestSummary>,
    /// The raised error.
    pub failure: LlmFailure,
    /// The response that failed validation (`structured_output_invalid` only).
    pub response: Option<LlmResponseSummary>,
    /// Latency of the final attempt, in milliseconds.
    pub latency_ms: Option<f64>,
}

impl LlmFailedEvent {
    /// A failure event.
    pub fn new(
        site: CallSite,
        request: impl Into<Arc<LlmRequestSummary>>,
        failure: LlmFailure,
        response: Option<LlmResponseSummary>,
        latency_ms: Option<f64>,
    ) -> Self {
        LlmFailedEvent {
            site,
            request: request.into(),
            failure,
            response,
            latency_ms,
        }
    }
}

/// How one wire attempt ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// The success variant shares its summary with the completion event; the failure's
// record is built on the failure path only, inside a heap-allocated event.
#[allow(clippy::large_enum_variant)]
pub enum LlmAttemptOutcome {
    /// The attempt returned a response (shared with the call's completion event).
    Completed(Arc<LlmResponseSummary>),
    /// The attempt raised; `response` is set for `structured_output_invalid`.
    Failed {
        /// The error surface.
        failure: LlmFailure,
        /// The response that failed validation, if one was received.
        response: Option<LlmResponseSummary>,
    },
}

/// The per-wire-attempt signal (llm-provider §7.1): one per attempt of a `complete()`
/// call, including a call that was not retried, dispatched before the call's terminal
/// event. Span builders (observability §5.5: one `openarmature.llm.complete` span per
/// attempt) consume it; other observers can ignore it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmAttemptEvent {
    /// The calling node.
    pub site: CallSite,
    /// This attempt's request (its working transcript and effective config).
    pub request: Arc<LlmRequestSummary>,
    /// 0-based call-level attempt index.
    pub attempt_index: u32,
    /// Why this attempt was scheduled (`None` on attempt 0).
    pub retry_reason: Option<RetryReason>,
    /// How the attempt ended.
    pub outcome: LlmAttemptOutcome,
    /// The attempt's latency, in milliseconds.
    pub latency_ms: Option<f64>,
    /// When the attempt ended (the event is built as it ends): span builders stamp the
    /// attempt's span from this, not from delivery time.
    pub at: std::time::SystemTime,
}

impl LlmAttemptEvent {
    /// An attempt event.
    pub fn new(
        site: CallSite,
        request: impl Into<Arc<LlmRequestSummary>>,
        attempt_index: u32,
        retry_reason: Option<RetryReason>,
        outcome: LlmAttemptOutcome,
        latency_ms: Option<f64>,
    ) -> Self {
        LlmAttemptEvent {
            site,
            request: request.into(),
            attempt_index,
            retry_reason,
            outcome,
            latency_ms,
            at: std::time::SystemTime::now(),
        }
    }
}
