//! The typed LLM token event (graph-engine §6 `LlmTokenEvent`, proposal 0062).
//!
//! A `complete()` call made with `stream` set dispatches one [`LlmTokenEvent`] per
//! streamed content or reasoning delta, in `chunk_index` order, all before the call's
//! terminal [`LlmCompletionEvent`](super::LlmCompletionEvent) /
//! [`LlmFailedEvent`](super::LlmFailedEvent). The event is a
//! within-call sub-event: it is unpaired (a failed stream emits its partial token
//! events, then the terminal failure event) and carries no `phase`.
//!
//! The engine only routes the event; `openarmature-llm` builds and dispatches it. The
//! bundled OTel / Langfuse observers do not render it: it is for custom forwarding
//! observers (a UI streaming answer text, say).

use crate::CallSite;

/// What a streamed delta carries (graph-engine §6 `delta_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LlmDeltaKind {
    /// Assistant answer text.
    Content,
    /// Chain-of-thought / thinking text, when the provider streams it.
    Reasoning,
}

impl LlmDeltaKind {
    /// `"content"` / `"reasoning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmDeltaKind::Content => "content",
            LlmDeltaKind::Reasoning => "reasoning",
        }
    }
}

impl std::fmt::Display for LlmDeltaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Typed LLM token event (graph-engine §6): one streamed delta of an in-progress
/// `complete()` call.
///
/// `site.lineage.attempt_index` is the **node-level** attempt index: it does not
/// advance across llm-provider §7.1 call-level wire attempts, which share one
/// `call_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlmTokenEvent {
    /// The calling node.
    pub site: CallSite,
    /// The provider identifier (e.g. `openai`).
    pub provider: String,
    /// The bound model the request was made against.
    pub model: String,
    /// The call's id: the same as on the call's terminal completion / failure event.
    pub call_id: String,
    /// Monotonic per call, from 0.
    pub chunk_index: u32,
    /// What the delta carries.
    pub delta_kind: LlmDeltaKind,
    /// The text delta.
    pub delta: String,
}

impl LlmTokenEvent {
    /// A token event.
    pub fn new(
        site: CallSite,
        provider: impl Into<String>,
        model: impl Into<String>,
        call_id: impl Into<String>,
        chunk_index: u32,
        delta_kind: LlmDeltaKind,
        delta: impl Into<String>,
    ) -> Self {
        LlmTokenEvent {
            site,
            provider: provider.into(),
            model: model.into(),
            call_id: call_id.into(),
            chunk_index,
            delta_kind,
            delta: delta.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_kinds_use_the_spec_names() {
        assert_eq!(LlmDeltaKind::Content.as_str(), "content");
        assert_eq!(LlmDeltaKind::Reasoning.to_string(), "reasoning");
    }
}
