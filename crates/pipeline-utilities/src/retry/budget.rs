//! Extension (spec/extensions/0003-retry-budget.md): a retry budget shared by both
//! retry lanes.
//!
//! Retries may add at most `ratio` of the first attempts, plus a small `floor` per
//! window so a cold or quiet process can still retry a little. Every retry in either
//! lane (node-level [`super::RetryMiddleware`], call-level `complete()`) spends one
//! token; when none is left the lane stops and the last error propagates as
//! [`super::RETRY_BUDGET_EXHAUSTED`]. Share one budget (an `Arc`) per provider
//! endpoint, across invocations.
//!
//! Who deposits: the call-level lane, once per *logical* first attempt (call attempt
//! 0 outside a node-level retry, and not refused by a circuit breaker). The
//! node-level lane only spends, so stacked lanes never count one first attempt twice.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;

use crate::timing::{MonotonicClock, TokioClock};

/// A retry budget: earns on first attempts, spends one token per retry.
///
/// The retry lanes call the async forms ([`RetryBudget::deposit_async`],
/// [`RetryBudget::try_withdraw_async`]), so a budget kept in a network store (shared by
/// many processes) answers without blocking the runtime; their defaults run the
/// synchronous methods, which in-process budgets implement.
pub trait RetryBudget: Send + Sync + 'static {
    /// A first attempt was made (earns `ratio` of a retry).
    fn deposit(&self);
    /// Spends one retry; `false` when the budget is empty (do not retry).
    fn try_withdraw(&self) -> bool;

    /// [`RetryBudget::deposit`], awaited by the call-level lane.
    fn deposit_async(&self) -> BoxFuture<'_, ()> {
        self.deposit();
        Box::pin(std::future::ready(()))
    }

    /// [`RetryBudget::try_withdraw`], awaited by both lanes before a retry.
    fn try_withdraw_async(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(self.try_withdraw()))
    }
}

/// [`TokenBucket`] settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucketConfig {
    /// Tokens earned per first attempt (default 0.1: retries add at most 10 %).
    pub ratio: f64,
    /// Retries always allowed per `floor_window`, whatever the balance (default 3).
    pub floor: u32,
    /// The floor's window (default 1 s).
    pub floor_window: Duration,
    /// The most earned tokens the bucket holds (default 10), so a long healthy
    /// period cannot bank a retry storm.
    pub max_tokens: f64,
}

impl Default for TokenBucketConfig {
    fn default() -> Self {
        TokenBucketConfig {
            ratio: 0.1,
            floor: 3,
            floor_window: Duration::from_secs(1),
            max_tokens: 10.0,
        }
    }
}

/// Counters of a [`TokenBucket`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetSnapshot {
    /// Earned tokens left.
    pub tokens: f64,
    /// Deposits (first attempts) so far.
    pub first_attempts: u64,
    /// Retries granted so far.
    pub retries: u64,
    /// Retries refused so far.
    pub denied: u64,
}

#[derive(Debug, Default)]
struct Bucket {
    tokens: f64,
    window: u128,
    floor_used: u32,
    counters: BudgetSnapshot,
}

/// The default [`RetryBudget`]: a token bucket with a per-window floor. Over any
/// run, `retries ≤ ratio × first_attempts + floor × windows` (and never more than
/// `max_tokens` banked).
pub struct TokenBucket {
    config: TokenBucketConfig,
    clock: Arc<dyn MonotonicClock>,
    state: Mutex<Bucket>,
}

impl std::fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenBucket")
            .field("config", &self.config)
            .field("state", &self.snapshot())
            .finish()
    }
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::new(TokenBucketConfig::default())
    }
}

impl TokenBucket {
    /// An empty bucket on the runtime clock.
    pub fn new(config: TokenBucketConfig) -> Self {
        TokenBucket::with_clock(config, TokioClock::default())
    }

    /// An empty bucket on `clock` (for the floor's windows).
    pub fn with_clock(config: TokenBucketConfig, clock: impl MonotonicClock) -> Self {
        TokenBucket {
            config,
            clock: Arc::new(clock),
            state: Mutex::new(Bucket::default()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &TokenBucketConfig {
        &self.config
    }

    /// The counters.
    pub fn snapshot(&self) -> BudgetSnapshot {
        let s = self.lock();
        BudgetSnapshot {
            tokens: s.tokens,
            ..s.counters
        }
    }

    fn lock(&self) -> MutexGuard<'_, Bucket> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RetryBudget for TokenBucket {
    fn deposit(&self) {
        let mut s = self.lock();
        s.tokens = (s.tokens + self.config.ratio.max(0.0)).min(self.config.max_tokens.max(0.0));
        s.counters.first_attempts += 1;
    }

    fn try_withdraw(&self) -> bool {
        let window_nanos = self.config.floor_window.as_nanos().max(1);
        let window = self.clock.now().as_nanos() / window_nanos;
        let mut s = self.lock();
        if s.window != window {
            s.window = window;
            s.floor_used = 0;
        }
        // A small epsilon: ten deposits of 0.1 earn a whole retry.
        let granted = if s.tokens >= 1.0 - 1e-9 {
            s.tokens = (s.tokens - 1.0).max(0.0);
            true
        } else if s.floor_used < self.config.floor {
            s.floor_used += 1;
            true
        } else {
            false
        };
        if granted {
            s.counters.retries += 1;
        } else {
            s.counters.denied += 1;
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Clone, Default)]
    struct Manual(Arc<AtomicU64>);
    impl MonotonicClock for Manual {
        fn now(&self) -> Duration {
            Duration::from_millis(self.0.load(Ordering::SeqCst))
        }
    }

    #[test]
    fn floor_then_earned_tokens_then_empty() {
        let clock = Manual::default();
        let config = TokenBucketConfig {
            ratio: 0.5,
            floor: 1,
            floor_window: Duration::from_secs(1),
            max_tokens: 1.0,
        };
        let b = TokenBucket::with_clock(config, clock.clone());
        assert!(b.try_withdraw(), "the floor");
        assert!(!b.try_withdraw());
        for _ in 0..4 {
            b.deposit();
        }
        assert!(b.try_withdraw(), "one earned token (capped at max_tokens)");
        assert!(!b.try_withdraw());
        clock.0.store(1_000, Ordering::SeqCst);
        assert!(b.try_withdraw(), "the next window's floor");
        let s = b.snapshot();
        assert_eq!((s.first_attempts, s.retries, s.denied), (4, 3, 2));
    }

    #[test]
    fn ratio_bounds_retries() {
        let b = TokenBucket::with_clock(
            TokenBucketConfig {
                ratio: 0.1,
                floor: 0,
                ..TokenBucketConfig::default()
            },
            Manual::default(),
        );
        let mut retries = 0;
        for _ in 0..100 {
            b.deposit();
            while b.try_withdraw() {
                retries += 1;
            }
        }
        assert_eq!(retries, 10);
    }
}
