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

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use openarmature_pipeline::retry::{Backoff, RetryConfig};

use crate::config::RuntimeConfig;
use crate::error::{LlmError, StructuredOutputInvalid};

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

/// A backoff that honours a rate limit's `retry_after` (an opt-in extension): the
/// larger of the inner strategy's delay and the provider's requested wait, capped.
#[derive(Debug, Clone, Copy)]
pub struct HonorRetryAfter<B> {
    /// The strategy used when the provider asks for nothing (or for less).
    pub inner: B,
    /// The longest wait honoured.
    pub cap: Duration,
}

impl<B> HonorRetryAfter<B> {
    /// Wraps `inner`, honouring waits up to 60 s.
    pub fn new(inner: B) -> Self {
        HonorRetryAfter {
            inner,
            cap: Duration::from_secs(60),
        }
    }
}

impl<B: Backoff> Backoff for HonorRetryAfter<B> {
    fn delay(&self, attempt_index: u32) -> Duration {
        self.inner.delay(attempt_index)
    }

    fn delay_for(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> Duration {
        let base = self.inner.delay_for(attempt_index, error);
        match LlmError::find_in(error).and_then(LlmError::retry_after) {
            Some(wait) => base.max(wait.min(self.cap)),
            None => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCategory;
    use openarmature_pipeline::retry::Constant;

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

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let b = HonorRetryAfter::new(Constant(Duration::from_millis(5)));
        let e = LlmError::new(ErrorCategory::ProviderRateLimit, "slow")
            .with_retry_after(Some(Duration::from_secs(2)))
            .into_categorized();
        assert_eq!(b.delay_for(0, &e), Duration::from_secs(2));
        let long = LlmError::new(ErrorCategory::ProviderRateLimit, "slow")
            .with_retry_after(Some(Duration::from_secs(3600)));
        assert_eq!(b.delay_for(0, &long), Duration::from_secs(60));
        let other = LlmError::unavailable("down");
        assert_eq!(b.delay_for(0, &other), Duration::from_millis(5));
    }
}
