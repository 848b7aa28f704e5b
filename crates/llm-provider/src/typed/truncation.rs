//! Spec: llm-provider §7 `structured_output_invalid` and §7.1 reask — the truncation
//! diagnosis (a project addition).
//!
//! An answer cut off at the output bound (`finish_reason = length`) is usually
//! invalid JSON, but asking again with the same bound and a longer transcript only
//! burns tokens. Such a failure is diagnosed as truncated
//! ([`StructuredOutputInvalid::is_truncated`], and its `Display` says so), and the
//! call-level loop re-asks (or otherwise retries) it only when the next attempt's
//! `max_tokens` differs (raised through `LlmRetryConfig::per_attempt_override`).

use crate::config::RuntimeConfig;
use crate::error::StructuredOutputInvalid;
use crate::response::FinishReason;
use crate::retry::LlmRetryConfig;

impl StructuredOutputInvalid {
    /// Whether the output was cut off at the token bound (`finish_reason = length`):
    /// the failure is the bound's, not the model's JSON.
    pub fn is_truncated(&self) -> bool {
        self.finish_reason == FinishReason::Length
    }

    /// The failure description: `error_message`, prefixed with the truncation
    /// diagnosis when [`is_truncated`](Self::is_truncated).
    pub fn describe(&self) -> String {
        if self.is_truncated() {
            format!(
                "output truncated at the token bound (finish_reason = length; raise max_tokens or bound the schema): {}",
                self.error_message
            )
        } else {
            self.error_message.clone()
        }
    }
}

/// Whether a reask after `failure` (attempt `index`) would repeat a truncation: the
/// failure is truncated and attempt `index + 1` has the same `max_tokens`.
pub(crate) fn same_bound_after_truncation(
    retry: &LlmRetryConfig,
    config: &RuntimeConfig,
    failure: &StructuredOutputInvalid,
    index: u32,
) -> bool {
    failure.is_truncated()
        && retry.config_for_attempt(config, index).max_tokens
            == retry
                .config_for_attempt(config, index.saturating_add(1))
                .max_tokens
}
