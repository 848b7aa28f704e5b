//! Opt-in [`tracing`](https://docs.rs/tracing) spans (feature `tracing-spans`).
//!
//! The engine opens its spans inline, around the work itself, so they carry true
//! timing and nest like the run: an `openarmature.invocation` span around the
//! outermost graph's step loop, and an `openarmature.node` span around each node
//! attempt (one per attempt: a retried node shows one span per attempt, each with
//! its `openarmature.node.attempt_index`). A subgraph's, fan-out instance's or
//! parallel branch's nodes run inside the composite node's attempt, so their spans
//! are its children; an LLM call or tool call made in a node body (crate
//! `openarmature-llm`, same feature name) is a child of that node's span.
//!
//! Field names are the attribute keys the OpenTelemetry observer writes
//! (`openarmature.node.name`, `openarmature.error.category`, ...), and `otel.name` /
//! `otel.status_code` carry the span name and status the way
//! `tracing-opentelemetry` reads them, so its users get the observer's span names.
//! Use either this feature with `tracing-opentelemetry` or
//! `openarmature-observability`'s `OtelObserver` for the same spans, not both: each
//! would export its own copy of every span.
//!
//! Without the feature these functions hand the future back unchanged (no cost);
//! with it and no subscriber interested, a span is one disabled-callsite check.

use crate::node::NodeCtx;

#[cfg(feature = "tracing-spans")]
use {
    crate::NodeError,
    std::future::Future,
    tracing::{field::Empty, Instrument},
};

/// Runs one node attempt inside its `openarmature.node` span.
#[cfg(feature = "tracing-spans")]
pub(crate) async fn node_attempt<T, F>(ctx: &NodeCtx, attempt: F) -> Result<T, NodeError>
where
    F: Future<Output = Result<T, NodeError>>,
{
    let span = tracing::info_span!(
        "openarmature.node",
        "otel.name" = %ctx.node_name(),
        "otel.status_code" = Empty,
        "openarmature.invocation_id" = %ctx.invocation_id(),
        "openarmature.node.name" = %ctx.node_name(),
        "openarmature.node.namespace" = %ctx.namespace().join("/"),
        "openarmature.node.step" = ctx.step(),
        "openarmature.node.attempt_index" = ctx.attempt_index(),
        "openarmature.node.fan_out_index" = Empty,
        "openarmature.node.branch_name" = Empty,
        "openarmature.error.category" = Empty,
        "exception.message" = Empty,
    );
    if span.is_disabled() {
        return attempt.await;
    }
    if let Some(index) = ctx.fan_out_index() {
        span.record("openarmature.node.fan_out_index", index);
    }
    if let Some(branch) = ctx.branch_name() {
        span.record("openarmature.node.branch_name", branch);
    }
    let result = attempt.instrument(span.clone()).await;
    match &result {
        Ok(_) => {
            span.record("otel.status_code", "OK");
        }
        Err(error) => {
            let category = crate::compiled::node_failure_category(error);
            span.record("otel.status_code", "ERROR");
            span.record("openarmature.error.category", category.as_str());
            span.record("exception.message", tracing::field::display(error));
        }
    }
    result
}

/// Without the feature: the attempt itself.
#[cfg(not(feature = "tracing-spans"))]
#[inline(always)]
pub(crate) fn node_attempt<F>(_ctx: &NodeCtx, attempt: F) -> F {
    attempt
}

/// Runs the outermost graph of invocation `id` inside its `openarmature.invocation`
/// span; `category` names a failed run's category.
#[cfg(feature = "tracing-spans")]
pub(crate) async fn invocation<T, E, F>(
    id: &str,
    entry: &str,
    correlation_id: &str,
    category: fn(&E) -> &str,
    run: F,
) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let span = tracing::info_span!(
        "openarmature.invocation",
        "otel.status_code" = Empty,
        "openarmature.invocation_id" = id,
        "openarmature.graph.entry_node" = entry,
        "openarmature.correlation_id" = correlation_id,
        "openarmature.error.category" = Empty,
    );
    if span.is_disabled() {
        return run.await;
    }
    let result = run.instrument(span.clone()).await;
    match &result {
        Ok(_) => {
            span.record("otel.status_code", "OK");
        }
        Err(error) => {
            span.record("otel.status_code", "ERROR");
            span.record("openarmature.error.category", category(error));
        }
    }
    result
}

/// Without the feature: the run itself.
#[cfg(not(feature = "tracing-spans"))]
#[inline(always)]
pub(crate) fn invocation<E, F>(
    _id: &str,
    _entry: &str,
    _correlation_id: &str,
    _category: fn(&E) -> &str,
    run: F,
) -> F {
    run
}
