//! Opt-in [`tracing`](https://docs.rs/tracing) events (feature `tracing-spans`): a
//! degraded node (pipeline-utilities §6.3 failure isolation) is an
//! `openarmature.failure_isolation` event at WARN level, emitted inline where the
//! failure is caught, so it sits in the span of whatever encloses the caught chain
//! (the invocation, or the fan-out / branch node attempt whose instance degraded).
//! The field names are the OpenTelemetry observer's attribute keys. Without the
//! feature nothing is compiled in.

use std::error::Error as StdError;

use openarmature_graph::{CaughtException, NodeCtx};

/// Reports that the chain of node `ctx` failed and was degraded. `caught` is the
/// classified error when the middleware already built it; otherwise it is built only
/// when a subscriber wants the event.
pub(crate) fn degraded(
    ctx: &NodeCtx,
    event_name: &str,
    error: &(dyn StdError + 'static),
    caught: Option<&CaughtException>,
) {
    tracing::event!(
        name: "openarmature.failure_isolation",
        tracing::Level::WARN,
        {
            "openarmature.failure_isolation.event_name" = event_name,
            "openarmature.invocation_id" = ctx.invocation_id(),
            "openarmature.node.name" = ctx.node_name(),
            "openarmature.node.attempt_index" = ctx.attempt_index(),
            "openarmature.node.fan_out_index" = ctx.fan_out_index(),
            "openarmature.node.branch_name" = ctx.branch_name(),
            "openarmature.error.category" = category(caught, error).as_deref(),
            "exception.message" = %error,
        },
        "degraded: the failure was caught and the degraded update applied"
    );
}

fn category(caught: Option<&CaughtException>, error: &(dyn StdError + 'static)) -> Option<String> {
    match caught {
        Some(caught) => caught.category.clone(),
        None => CaughtException::capture(error).category,
    }
}
