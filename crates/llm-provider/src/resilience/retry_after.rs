//! Extension 0002 (spec/extensions/0002-retry-after.md): a backoff that honours the
//! provider's `Retry-After`, capped, and fails fast above the cap.
//!
//! The wait is read from the failed attempt's [`LlmError`] (found through any cause
//! chain): `retry-after-ms`, else `Retry-After` as delta-seconds or an HTTP date,
//! parsed by the mapping ([`crate::openai::retry_after`]) on every transient answer
//! (429, and a 503 that sends one).

use std::error::Error as StdError;
use std::time::Duration;

use openarmature_pipeline::retry::{Backoff, BackoffDecision};

use crate::error::LlmError;

/// A backoff that honours a provider's `retry_after`: the larger of the inner
/// strategy's delay and the requested wait, as long as the wait is at most `cap`.
///
/// Above the cap the retry lanes (which call [`Backoff::decide`]) stop at once with
/// `retry_after_exceeded` instead of sleeping: a provider asking for an hour is not
/// helped by a retry in a minute. [`Backoff::delay_for`] alone (for callers that
/// cannot give up) clamps to the cap.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use openarmature_llm::{ErrorCategory, HonorRetryAfter, LlmError};
/// use openarmature_pipeline::retry::{Backoff, BackoffDecision, Constant};
/// let backoff = HonorRetryAfter::new(Constant(Duration::from_millis(100))).cap(Duration::from_secs(30));
/// let slow = LlmError::new(ErrorCategory::ProviderRateLimit, "slow down")
///     .with_retry_after(Some(Duration::from_secs(7)));
/// assert_eq!(backoff.decide(0, &slow), BackoffDecision::Wait(Duration::from_secs(7)));
/// let hour = slow.with_retry_after(Some(Duration::from_secs(3600)));
/// assert!(matches!(backoff.decide(0, &hour), BackoffDecision::GiveUp(_)));
/// ```
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

    /// Sets the longest wait honoured.
    pub fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }
}

/// The wait the provider asked for, on any failure of `error`'s chain.
pub fn requested_wait(error: &(dyn StdError + 'static)) -> Option<Duration> {
    LlmError::find_in(error)
        .and_then(LlmError::failure)
        .and_then(|f| f.retry_after)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

impl<B: Backoff> Backoff for HonorRetryAfter<B> {
    fn delay(&self, attempt_index: u32) -> Duration {
        self.inner.delay(attempt_index)
    }

    fn delay_for(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> Duration {
        let base = self.inner.delay_for(attempt_index, error);
        match requested_wait(error) {
            Some(wait) => base.max(wait.min(self.cap)),
            None => base,
        }
    }

    fn decide(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> BackoffDecision {
        match requested_wait(error) {
            Some(wait) if wait > self.cap => BackoffDecision::GiveUp(format!(
                "the provider asked to retry after {}, above the {} cap",
                secs(wait),
                secs(self.cap)
            )),
            _ => BackoffDecision::Wait(self.delay_for(attempt_index, error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCategory;
    use openarmature_pipeline::retry::Constant;

    #[test]
    fn retry_after_is_honoured_up_to_the_cap_then_gives_up() {
        let b = HonorRetryAfter::new(Constant(Duration::from_millis(5)));
        let e = LlmError::new(ErrorCategory::ProviderRateLimit, "slow")
            .with_retry_after(Some(Duration::from_secs(2)))
            .into_categorized();
        assert_eq!(b.delay_for(0, &e), Duration::from_secs(2));
        assert_eq!(
            b.decide(0, &e),
            BackoffDecision::Wait(Duration::from_secs(2))
        );
        let long = LlmError::new(ErrorCategory::ProviderRateLimit, "slow")
            .with_retry_after(Some(Duration::from_secs(3600)));
        assert_eq!(b.delay_for(0, &long), Duration::from_secs(60));
        assert_eq!(
            b.decide(0, &long),
            BackoffDecision::GiveUp(
                "the provider asked to retry after 3600 s, above the 60 s cap".into()
            )
        );
        let other = LlmError::unavailable("down");
        assert_eq!(b.delay_for(0, &other), Duration::from_millis(5));
        let busy =
            LlmError::unavailable("busy").with_retry_after(Some(Duration::from_millis(1500)));
        assert_eq!(
            b.decide(0, &busy),
            BackoffDecision::Wait(Duration::from_millis(1500))
        );
    }
}
