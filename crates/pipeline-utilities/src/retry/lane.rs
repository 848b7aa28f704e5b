//! Spec: pipeline-utilities §6.1 (retry) and llm-provider §7.1 (call-level retry) — the one
//! decision loop both retry lanes run.
//!
//! [`RetryConfig::drive`] owns the decide / budget / stop sequence: after a failed attempt
//! it stops when attempts run out or the lane declines ([`RetryLane::retry`]), asks the
//! backoff for the delay (which may give up: `retry_after_exceeded`), spends a budget
//! token for a budgeted retry (none left: `retry_budget_exhausted`), fires `on_retry`,
//! and sleeps — skipping the timer for a zero delay. What differs between lanes is
//! pluggable: how an attempt runs, how a failure is classified (the LLM lane adds reask),
//! and how the stop error is built and reported.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use openarmature_graph::Category;

use super::{BackoffDecision, RetryConfig};

/// A retry the lane wants to make after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Whether the retry spends from the [`super::RetryBudget`] (a transient retry does;
    /// the LLM lane's reask, which follows an answered request, does not).
    pub budgeted: bool,
}

/// One retry lane around [`RetryConfig::drive`]: node-level [`super::RetryMiddleware`] and
/// the LLM call-level `complete()` are the two implementations.
pub trait RetryLane {
    /// What a successful attempt returns.
    type Output;
    /// What a failed attempt returns.
    type Error;

    /// Runs attempt `index` (0-based).
    fn attempt(
        &mut self,
        index: u32,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// Whether failed attempt `index` may be retried, and how. Only asked while
    /// attempts remain, so a lane may prepare the next attempt here (the reask transcript).
    fn retry(&mut self, error: &Self::Error, index: u32) -> Option<Retry>;

    /// The error as the backoff sees it.
    fn view<'s>(&'s self, error: &'s Self::Error) -> &'s (dyn StdError + 'static);

    /// The error as `on_retry` receives it (only called when an `on_retry` is set; the
    /// error is not needed afterwards).
    fn shared(&mut self, error: Self::Error) -> Arc<dyn StdError + Send + Sync>;

    /// The stop error: `category`, message `"<reason>; last error: <last>"`, `last` as cause.
    fn stop(&mut self, category: Category, reason: &str, last: Self::Error) -> Self::Error;

    /// Called once with the final error before `drive` returns it.
    fn failed(&mut self, error: Self::Error) -> Self::Error {
        error
    }

    /// Called after the backoff sleep, just before attempt `next_index` starts.
    fn retrying(&mut self, next_index: u32) {
        let _ = next_index;
    }
}

/// Runs `lane` until an attempt succeeds, the lane declines a retry, attempts run out,
/// the backoff gives up or the budget is empty; `None` runs a single attempt. Returns the
/// last error then (through [`RetryLane::failed`]).
///
/// # Cancel safety
/// Dropping the returned future stops retrying at once (during an attempt or a backoff
/// sleep).
pub async fn drive<L: RetryLane>(
    config: Option<&RetryConfig>,
    lane: &mut L,
) -> Result<L::Output, L::Error> {
    let max = config.map_or(1, |c| c.max_attempts.max(1));
    let mut index = 0u32;
    loop {
        let error = match lane.attempt(index).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(config) = config.filter(|_| index + 1 < max) else {
            return Err(lane.failed(error));
        };
        let Some(retry) = lane.retry(&error, index) else {
            return Err(lane.failed(error));
        };
        let delay = match config.backoff.decide(index, lane.view(&error)) {
            BackoffDecision::Wait(delay) => delay,
            BackoffDecision::GiveUp(why) => {
                let stopped = lane.stop(Category::RETRY_AFTER_EXCEEDED, &why, error);
                return Err(lane.failed(stopped));
            }
        };
        let refused = match (&config.budget, retry.budgeted) {
            (Some(budget), true) => !budget.try_withdraw_async().await,
            _ => false,
        };
        if refused {
            let stopped = lane.stop(
                Category::RETRY_BUDGET_EXHAUSTED,
                "retry budget exhausted",
                error,
            );
            return Err(lane.failed(stopped));
        }
        if let Some(on_retry) = &config.on_retry {
            on_retry.on_retry(lane.shared(error), index).await;
        }
        // A zero backoff retries at once (no timer round trip).
        if !delay.is_zero() {
            config.sleeper.sleep(delay).await;
        }
        index += 1;
        lane.retrying(index);
    }
}
