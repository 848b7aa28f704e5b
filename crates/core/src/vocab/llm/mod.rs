//! Spec: graph-engine §6 *Typed LLM completion event* / *Typed LLM failure event* /
//! *Typed LLM token event*, llm-provider §6 `Response.usage` and §7.1 *Per-attempt
//! span emission*: what `openarmature-llm` reports about its calls (and re-exports).

mod events;
mod token;

pub use super::deferred::{EventMap, EventMessages};
pub use events::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent, LlmFailedEvent, LlmFailure,
    LlmRequestSummary, LlmResponseSummary, RetryReason,
};
pub use token::{LlmDeltaKind, LlmTokenEvent};

/// A token-usage record (llm-provider §6 `Response.usage`). Every counter is a
/// non-negative integer or `None` ("not reported"); a malformed wire counter is `None`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct LlmUsage {
    /// Input tokens.
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    pub completion_tokens: Option<u64>,
    /// Total tokens.
    pub total_tokens: Option<u64>,
    /// Input tokens served from a prefix cache (`Some(0)` is a reported miss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Input tokens written to a prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
}
