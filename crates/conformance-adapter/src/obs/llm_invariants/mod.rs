//! Spec: conformance-adapter §5.9 — the named invariants of the observability suite's
//! LLM fixtures (LLM spans, cache attributes, typed `LlmCompletionEvent` /
//! `LlmFailedEvent`), each checked concretely against the exported spans, the
//! implicit recorder's events (every event of the invocation, in delivery order), the
//! typed observers' storage and the calls the nodes made. An unknown name falls
//! through to the caller, which fails the case.
//!
//! The named checks live in [`span_checks`] (LLM-span attributes: caller metadata,
//! cache, attempt index, tool-call identity, error span), [`event_checks`] (typed
//! `LlmCompletionEvent` counts, fields, scoping and ordering) and [`call_checks`]
//! (the typed events' request side, call ids and failures); this module holds the
//! shared helpers and the dispatch.

mod call_checks;
mod event_checks;
mod span_checks;
mod stream_checks;

pub(crate) use call_checks::TABLE_NAMES as CALL_NAMES;
pub(crate) use event_checks::TABLE_NAMES as EVENT_NAMES;
pub(crate) use span_checks::TABLE_NAMES as SPAN_NAMES;
pub(crate) use stream_checks::TABLE_NAMES as STREAM_NAMES;

use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::typed;
use super::Run;

use super::invariants::truthy;
use crate::failure::{ensure, mismatch, Check};

/// The implicit recorder's spec events as fixture records, in delivery order.
fn records(run: &Run<'_>) -> Vec<Value> {
    run.events
        .iter()
        .filter_map(|e| typed::record(e, None))
        .collect()
}

fn of_type(records: &[Value], t: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some(t))
        .cloned()
        .collect()
}

fn completions(run: &Run<'_>) -> Vec<Value> {
    of_type(&records(run), "LlmCompletionEvent")
}

fn failures(run: &Run<'_>) -> Vec<Value> {
    of_type(&records(run), "LlmFailedEvent")
}

fn field<'v>(r: &'v Value, k: &str) -> &'v Value {
    r.get(k).unwrap_or(&Value::Null)
}

fn exactly(events: &[Value], n: usize, what: &str) -> Check {
    ensure(events.len() == n, || {
        format!("{} {what}, expected {n}", events.len())
    })
}

fn one_span<'r>(run: &'r Run<'_>) -> Check<&'r SpanData> {
    match run.llm_spans().as_slice() {
        [one] => Ok(one),
        other => mismatch(format!("{} LLM spans, expected one", other.len())),
    }
}

fn successful_calls(run: &Run<'_>) -> usize {
    run.calls.iter().filter(|c| c.result.is_ok()).count()
}

fn failed_calls(run: &Run<'_>) -> usize {
    run.calls.iter().filter(|c| c.result.is_err()).count()
}

/// The §7 category the first failed invocation raised through a node.
fn raised(run: &Run<'_>) -> Check<String> {
    match run.failures.first() {
        Some(Some(Some(c))) => Ok(c.clone()),
        Some(Some(None)) => {
            mismatch("the invocation failed without an LLM error in its cause chain")
        }
        _ => mismatch("the invocation did not fail"),
    }
}

fn call_ids(events: &[Value]) -> Check<Vec<String>> {
    events
        .iter()
        .map(|e| match field(e, "call_id") {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            other => mismatch(format!("call_id {other} is not a non-empty string")),
        })
        .collect()
}

/// Checks `name`, or `None` when it is not an LLM invariant.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let verdict = check_named(name, run)?;
    Some(truthy(v).and(verdict))
}

fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    span_checks::check_named(name, run)
        .or_else(|| event_checks::check_named(name, run))
        .or_else(|| call_checks::check_named(name, run))
        .or_else(|| stream_checks::check_named(name, run))
}
