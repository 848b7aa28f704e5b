//! Where the call-level loop (`crate::call`) consults the extensions: the budget
//! deposit after attempt 0 and the gate before each retry. With no budget and a
//! backoff that never gives up (the defaults), both are no-ops.

use std::sync::Arc;
use std::time::Duration;

use openarmature_core::vocab::llm::RetryReason;
use openarmature_graph::CategorizedError;
use openarmature_pipeline::retry::BackoffDecision;

use crate::error::{ErrorCategory, LlmError, ProviderFailure};
use crate::provider::CompletionRequest;
use crate::response::Response;
use crate::retry::LlmRetryConfig;

/// Extension 0003: a logical first attempt earns budget — call attempt 0, not
/// inside a node-level retry (that call is itself a retry, already paid for), and
/// not refused by an open circuit (nothing was sent).
pub(crate) fn deposit(
    request: &CompletionRequest,
    attempt: u32,
    result: &Result<Response, LlmError>,
) {
    if attempt != 0 || matches!(result, Err(LlmError::CircuitOpen(_))) {
        return;
    }
    if request
        .node
        .as_ref()
        .is_some_and(|ctx| ctx.attempt_index() > 0)
    {
        return;
    }
    if let Some(budget) = request.retry.as_ref().and_then(|r| r.base.budget.as_ref()) {
        budget.deposit();
    }
}

/// The retry the loop is about to make, with its delay.
pub(crate) type Admitted = (RetryReason, CategorizedError, Duration);

/// Extensions 0002/0003: decides the delay through [`openarmature_pipeline::retry::Backoff::decide`]
/// (which may give up: `retry_after_exceeded`) and spends a budget token for a
/// transient retry (none left: `retry_budget_exhausted`). Reasks are not budgeted:
/// they follow an answered request. A refusal replaces the error with the stop
/// error, the last error as its source.
pub(crate) fn gate(
    retry: Option<&LlmRetryConfig>,
    attempt: u32,
    next: Option<(RetryReason, CategorizedError)>,
    error: LlmError,
) -> (Option<Admitted>, LlmError) {
    let (Some(r), Some((reason, view))) = (retry, next) else {
        return (None, error);
    };
    let delay = match r.base.backoff.decide(attempt, &view) {
        BackoffDecision::Wait(delay) => delay,
        BackoffDecision::GiveUp(why) => {
            return (
                None,
                stopped(ErrorCategory::RetryAfterExceeded, &why, error),
            )
        }
    };
    if reason == RetryReason::Transient && r.base.budget.as_ref().is_some_and(|b| !b.try_withdraw())
    {
        let why = "retry budget exhausted";
        return (
            None,
            stopped(ErrorCategory::RetryBudgetExhausted, why, error),
        );
    }
    (Some((reason, view, delay)), error)
}

/// The stop error: `category`, message `"<reason>; last error: <last>"` (as the
/// node-level lane's `stop_error`), the last error's status, vendor type and
/// requested wait, and the last error as source.
pub(crate) fn stopped(category: ErrorCategory, reason: &str, last: LlmError) -> LlmError {
    let mut failure = ProviderFailure::new(format!("{reason}; last error: {last}"));
    failure.status = last.status();
    failure.error_type = last.error_type().map(str::to_owned);
    failure.retry_after = last.failure().and_then(|f| f.retry_after);
    failure.source = Some(Arc::new(last));
    LlmError::from_failure(category, failure)
}
