//! Spec: llm-provider §7.1 — the call-level retry configuration.
//!
//! [`LlmRetryConfig`] is the pipeline-utilities §6.1 record ([`RetryConfig`]: the same
//! type `RetryMiddleware` takes) plus the two adaptive fields:
//!
//! - `per_attempt_override`: a schedule of [`RuntimeConfig`] partials. Attempt 0 uses
//!   the caller's config unchanged; retry *i* (attempt *i+1*) overlays entry *i*; the
//!   last entry carries forward. Applied to a per-attempt copy.
//! - `reask`: a caller-supplied [`ReaskBuilder`]. With it, `structured_output_invalid`
//!   is retryable for this call (within `max_attempts`): before the next attempt the
//!   model's output is appended as an `assistant` message and the builder's text as a
//!   `user` message to a working copy of the transcript; the pairs accumulate, a
//!   transient retry appends nothing, and the builder is never called when no attempt
//!   remains. The crate adds no prompt text of its own.
//!
//! # The two lanes
//!
//! Call-level retry re-sends one call; node-level `RetryMiddleware` re-runs the whole
//! node. Stacked, budgets multiply (3 node attempts × 3 call attempts = up to 9
//! requests per call). Providers never retry on their own: only this loop does.
//!
//! # Examples
//! ```
//! use std::time::Duration;
//! use openarmature_llm::{LlmRetryConfig, RuntimeConfig};
//! use openarmature_pipeline::retry::{Constant, RetryConfig};
//! let retry = LlmRetryConfig::from(RetryConfig::default().max_attempts(3).backoff(Constant(Duration::ZERO)))
//!     .per_attempt_override(vec![RuntimeConfig::default().temperature(0.3), RuntimeConfig::default().temperature(0.6)])
//!     .reask(|failure: &openarmature_llm::StructuredOutputInvalid| {
//!         format!("That was invalid ({}). Return only the corrected JSON.", failure.error_message)
//!     });
//! let base = RuntimeConfig::default().temperature(0.0);
//! assert_eq!(retry.config_for_attempt(&base, 0).temperature, Some(0.0));
//! assert_eq!(retry.config_for_attempt(&base, 5).temperature, Some(0.6));
//! ```

use std::sync::Arc;

use openarmature_pipeline::retry::RetryConfig;

use crate::config::RuntimeConfig;
use crate::error::StructuredOutputInvalid;

/// Builds the corrective `user` message of a reask retry from the failed attempt's
/// `structured_output_invalid` surface (`output_content`, `error_message`, ...).
pub trait ReaskBuilder: Send + Sync + 'static {
    /// The correction text, appended verbatim as a `user` message.
    fn correction(&self, failure: &StructuredOutputInvalid) -> String;
}

impl<F> ReaskBuilder for F
where
    F: Fn(&StructuredOutputInvalid) -> String + Send + Sync + 'static,
{
    fn correction(&self, failure: &StructuredOutputInvalid) -> String {
        self(failure)
    }
}

/// The llm-provider retry config (§7.1): the §6.1 record plus the adaptive fields.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct LlmRetryConfig {
    /// `max_attempts`, `classifier`, `backoff`, `on_retry`, `sleeper`.
    pub base: RetryConfig,
    /// The retry override schedule (entry *i* applies to attempt *i+1*).
    pub per_attempt_override: Vec<RuntimeConfig>,
    /// The reask builder; `None` leaves `structured_output_invalid` non-retryable.
    pub reask: Option<Arc<dyn ReaskBuilder>>,
}

impl std::fmt::Debug for LlmRetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmRetryConfig")
            .field("base", &self.base)
            .field("per_attempt_override", &self.per_attempt_override)
            .field("reask", &self.reask.is_some())
            .finish()
    }
}

impl From<RetryConfig> for LlmRetryConfig {
    fn from(base: RetryConfig) -> Self {
        LlmRetryConfig {
            base,
            per_attempt_override: Vec::new(),
            reask: None,
        }
    }
}

impl LlmRetryConfig {
    /// Sets the override schedule.
    pub fn per_attempt_override(mut self, schedule: Vec<RuntimeConfig>) -> Self {
        self.per_attempt_override = schedule;
        self
    }

    /// Sets the reask builder.
    pub fn reask(mut self, builder: impl ReaskBuilder) -> Self {
        self.reask = Some(Arc::new(builder));
        self
    }

    /// The total attempt budget (at least 1).
    pub fn max_attempts(&self) -> u32 {
        self.base.max_attempts.max(1)
    }

    /// The effective config of attempt `attempt_index`: `base` for attempt 0, then
    /// `base` overlaid with the schedule entry (the last one carrying forward).
    pub fn config_for_attempt(&self, base: &RuntimeConfig, attempt_index: u32) -> RuntimeConfig {
        if attempt_index == 0 || self.per_attempt_override.is_empty() {
            return base.clone();
        }
        let i = usize::try_from(attempt_index - 1).unwrap_or(usize::MAX);
        let entry = self
            .per_attempt_override
            .get(i)
            .or_else(|| self.per_attempt_override.last());
        entry.map_or_else(|| base.clone(), |partial| base.overlay(partial))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_carries_forward_and_attempt_zero_is_base() {
        let r = LlmRetryConfig::default().per_attempt_override(vec![
            RuntimeConfig::default().temperature(0.3),
            RuntimeConfig::default().seed(7),
        ]);
        let base = RuntimeConfig::default().temperature(0.0);
        assert_eq!(r.config_for_attempt(&base, 0), base);
        assert_eq!(r.config_for_attempt(&base, 1).temperature, Some(0.3));
        let two = r.config_for_attempt(&base, 2);
        assert_eq!((two.temperature, two.seed), (Some(0.0), Some(7)));
        assert_eq!(r.config_for_attempt(&base, 9).seed, Some(7));
    }
}
