//! Spec: pipeline-utilities §6.1 *Backoff with full jitter* — delay strategies.

use std::error::Error as StdError;
use std::time::Duration;

use rand::Rng;

use super::BackoffDecision;

/// How long to wait before the next attempt. `attempt_index` is 0-based: the
/// index of the attempt that just failed.
pub trait Backoff: Send + Sync + 'static {
    /// The delay after attempt `attempt_index` failed.
    fn delay(&self, attempt_index: u32) -> Duration;

    /// The delay after attempt `attempt_index` failed with `error`. Strategies that
    /// read the error (e.g. a provider's `Retry-After`) override this; the default
    /// ignores the error.
    fn delay_for(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> Duration {
        let _ = error;
        self.delay(attempt_index)
    }

    /// Whether to retry after attempt `attempt_index` failed with `error`, and after
    /// how long. The default always waits [`Backoff::delay_for`]; a strategy may give
    /// up instead (extension 0002: a `Retry-After` above its cap), which stops the
    /// lane with [`super::RETRY_AFTER_EXCEEDED`].
    fn decide(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> BackoffDecision {
        BackoffDecision::Wait(self.delay_for(attempt_index, error))
    }
}

impl<F> Backoff for F
where
    F: Fn(u32) -> Duration + Send + Sync + 'static,
{
    fn delay(&self, attempt_index: u32) -> Duration {
        self(attempt_index)
    }
}

fn exponential(base: Duration, cap: Duration, attempt_index: u32) -> Duration {
    let factor = 2f64.powi(i32::try_from(attempt_index.min(1024)).unwrap_or(1024));
    let secs = (base.as_secs_f64() * factor).min(cap.as_secs_f64());
    Duration::try_from_secs_f64(secs).unwrap_or(cap)
}

/// The default: exponential with full jitter, `uniform(0, min(cap, base·2^n))`
/// (base 1 s, cap 30 s). The jitter keeps many callers from retrying in lockstep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FullJitter {
    /// The first attempt's upper bound.
    pub base: Duration,
    /// The largest upper bound.
    pub cap: Duration,
}

impl Default for FullJitter {
    fn default() -> Self {
        FullJitter {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(30),
        }
    }
}

impl FullJitter {
    /// The upper bound for `attempt_index`: `min(cap, base·2^n)`.
    pub fn bound(&self, attempt_index: u32) -> Duration {
        exponential(self.base, self.cap, attempt_index)
    }
}

impl Backoff for FullJitter {
    fn delay(&self, attempt_index: u32) -> Duration {
        let bound = self.bound(attempt_index).as_secs_f64();
        if bound <= 0.0 {
            return Duration::ZERO;
        }
        let secs = rand::rng().random_range(0.0..=bound);
        Duration::from_secs_f64(secs)
    }
}

/// The same delay every time (`Constant(Duration::ZERO)` retries immediately).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constant(pub Duration);

impl Backoff for Constant {
    fn delay(&self, _attempt_index: u32) -> Duration {
        self.0
    }
}

/// `min(cap, initial + step·n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linear {
    /// The first delay.
    pub initial: Duration,
    /// Added per attempt.
    pub step: Duration,
    /// The largest delay.
    pub cap: Duration,
}

impl Backoff for Linear {
    fn delay(&self, attempt_index: u32) -> Duration {
        self.step
            .checked_mul(attempt_index)
            .and_then(|d| d.checked_add(self.initial))
            .map_or(self.cap, |d| d.min(self.cap))
    }
}

/// `min(cap, base·2^n)` without jitter (deterministic; prefer [`FullJitter`] when
/// many callers share a provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exponential {
    /// The first delay.
    pub base: Duration,
    /// The largest delay.
    pub cap: Duration,
}

impl Backoff for Exponential {
    fn delay(&self, attempt_index: u32) -> Duration {
        exponential(self.base, self.cap, attempt_index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn full_jitter_stays_within_bound(attempt in 0u32..200, base_ms in 0u64..5_000, cap_ms in 0u64..120_000) {
            let b = FullJitter { base: Duration::from_millis(base_ms), cap: Duration::from_millis(cap_ms) };
            let d = b.delay(attempt);
            let bound = (base_ms as f64 / 1000.0 * 2f64.powi(attempt.min(1024) as i32)).min(cap_ms as f64 / 1000.0);
            prop_assert!(d.as_secs_f64() <= bound + 1e-9, "{d:?} > {bound}");
        }

        #[test]
        fn default_full_jitter_within_cap(attempt in 0u32..64) {
            let d = FullJitter::default().delay(attempt);
            prop_assert!(d <= Duration::from_secs(30));
            prop_assert!(d.as_secs_f64() <= 2f64.powi(attempt as i32));
        }
    }

    #[test]
    fn named_strategies() {
        assert_eq!(
            Constant(Duration::from_millis(5)).delay(9),
            Duration::from_millis(5)
        );
        let lin = Linear {
            initial: Duration::from_secs(1),
            step: Duration::from_secs(2),
            cap: Duration::from_secs(4),
        };
        assert_eq!(lin.delay(0), Duration::from_secs(1));
        assert_eq!(lin.delay(1), Duration::from_secs(3));
        assert_eq!(lin.delay(5), Duration::from_secs(4));
        let exp = Exponential {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(10),
        };
        assert_eq!(exp.delay(3), Duration::from_secs(8));
        assert_eq!(exp.delay(60), Duration::from_secs(10));
        let f = |n: u32| Duration::from_millis(u64::from(n));
        assert_eq!(f.delay(7), Duration::from_millis(7));
    }
}
