//! Extension (spec/extensions/0002-retry-after.md, 0003-retry-budget.md): how a retry
//! lane stops early, and the error it stops with.
//!
//! A lane stops before its attempts run out when the backoff gives up
//! ([`BackoffDecision::GiveUp`], e.g. a provider asked to wait longer than the cap)
//! or the [`super::RetryBudget`] is empty. The last attempt's error then propagates
//! under a distinct, non-transient category ([`RETRY_AFTER_EXCEEDED`],
//! [`RETRY_BUDGET_EXHAUSTED`]) with that error as its cause, so failure isolation,
//! the outer lane and telemetry see *why* retrying stopped. Without the extensions
//! neither can happen: the spec's behaviour is unchanged.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use openarmature_graph::{CategorizedError, NodeError};

/// The category of an error a lane stopped with because the retry budget was empty.
pub const RETRY_BUDGET_EXHAUSTED: &str = "retry_budget_exhausted";

/// The category of an error a lane stopped with because the provider asked for a
/// longer wait than the backoff's cap.
pub const RETRY_AFTER_EXCEEDED: &str = "retry_after_exceeded";

/// What a backoff decided after a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackoffDecision {
    /// Sleep this long, then retry.
    Wait(Duration),
    /// Do not retry: the reason becomes the stop error's message prefix.
    GiveUp(String),
}

/// The last attempt's error under a stop error (its `Display` is the error's own).
#[derive(Debug)]
pub struct LastAttempt(pub NodeError);

impl fmt::Display for LastAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for LastAttempt {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// The error a lane stops with: `category` (non-transient), message
/// `"<reason>; last error: <last>"`, the last error as its cause.
pub fn stop_error(category: &str, reason: &str, last: NodeError) -> NodeError {
    let message = format!("{reason}; last error: {last}");
    CategorizedError::new(openarmature_graph::Category::from_name(category), message)
        .transient(false)
        .with_source(LastAttempt(last))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use openarmature_graph::category_of;

    #[test]
    fn stop_error_keeps_the_last_error_as_cause() {
        let last: NodeError =
            CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "down")
                .into();
        let e = stop_error(RETRY_BUDGET_EXHAUSTED, "retry budget exhausted", last);
        assert_eq!(
            category_of(&*e).map(|c| c.as_str()),
            Some(RETRY_BUDGET_EXHAUSTED)
        );
        assert_eq!(e.to_string(), "retry budget exhausted; last error: down");
        let cause = e.source().and_then(StdError::source);
        assert_eq!(
            cause.and_then(category_of).map(|c| c.as_str()),
            Some("provider_unavailable")
        );
        assert!(!crate::retry::is_transient(&*e));
    }
}
