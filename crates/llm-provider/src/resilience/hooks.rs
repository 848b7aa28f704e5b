//! The call-level lane's side of the extensions: the budget deposit after attempt 0 and
//! the stop error. The gate before each retry (the backoff giving up, the budget
//! refusing) is the shared loop's, `openarmature_pipeline::retry::drive`. With no budget
//! and a backoff that never gives up (the defaults), both are no-ops.

use std::sync::Arc;

use crate::error::{ErrorCategory, LlmError, ProviderFailure};
use crate::provider::CompletionRequest;
use crate::response::Response;

/// Extension 0003: a logical first attempt earns budget — call attempt 0, not
/// inside a node-level retry (that call is itself a retry, already paid for), and
/// not refused by an open circuit (nothing was sent).
pub(crate) async fn deposit(
    request: &CompletionRequest,
    node: Option<&openarmature_graph::NodeCtx>,
    attempt: u32,
    result: &Result<Response, LlmError>,
) {
    if attempt != 0 || matches!(result, Err(LlmError::CircuitOpen(_))) {
        return;
    }
    if node.is_some_and(|ctx| ctx.attempt_index() > 0) {
        return;
    }
    if let Some(budget) = request.retry.as_ref().and_then(|r| r.base.budget.as_ref()) {
        budget.deposit_async().await;
    }
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
