//! Spec: conformance-adapter §5.4 / §5.9 — graph-engine-style observers inside an
//! observability case (fixture 119): the `observers:` block and
//! `expected.observer_event_invariants` over the raw §6 node events, plus the OTel
//! invariants about per-attempt parallel-branches spans.
//!
//! Register O15: an `observers:` entry must be `behavior: record`; it is served by
//! the implicit recorder, which already keeps every event of the invocation in
//! delivery order (graph-attached and invocation-scoped observers receive the same
//! events). Any other behaviour is refused.
//!
//! The invariant families, each over the recorded node events:
//!
//! - `<node>_node_attempt_indices_seen: [..]` — the attempt indices of the events of
//!   the node `<node>` itself (a top-level node event: one namespace segment);
//! - `<branch>_callable_branch_attempt_indices_seen: [..]` — those of the synthetic
//!   events of the inline-callable branch `<branch>` (node name and innermost branch
//!   name both `<branch>`);
//! - `callable_branch_events_report_current_attempt_index` — every callable-branch
//!   event carries the attempt index of the enclosing node attempt it ran in (the
//!   latest `started` event of the dispatching node before it), and some carry one
//!   other than 0;
//! - `callable_branch_started_and_completed_carry_attempt_index_one_on_retry` — on
//!   attempt 1 of the dispatching node, every callable branch has both a `started`
//!   and a `completed` event with attempt index 1.

use std::collections::BTreeSet;

use openarmature_graph::{NodeEvent, Phase};
use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::invariants::truthy;
use super::spans::{attr, attr_str};
use super::Run;
use crate::failure::{ensure, Check, Failure};
use crate::table::{lookup, names, Table};
use crate::yaml::Y;
use crate::AdapterError;

/// Register O15: validates the case's `observers:` block.
pub(crate) fn check_observers(case: &Y<'_>) -> Result<(), AdapterError> {
    let Some(list) = case.get("observers") else {
        return Ok(());
    };
    for o in list.seq()? {
        o.check_keys(&["name", "attach", "target", "behavior"])?;
        let behavior = o.req("behavior")?.str()?;
        if behavior != "record" {
            return Err(o.invalid(format!(
                "observer behavior `{behavior}` (only `record` in observability cases)"
            )));
        }
    }
    Ok(())
}

fn node_events<'r>(run: &'r Run<'_>) -> Vec<&'r NodeEvent> {
    run.events.iter().filter_map(|e| e.as_node()).collect()
}

/// A synthetic inline-callable branch event: named after its own branch.
fn is_callable(e: &NodeEvent) -> bool {
    e.namespace.len() > 1 && e.branch_name.as_deref() == Some(&*e.node_name)
}

fn indices<'e>(events: impl Iterator<Item = &'e &'e NodeEvent>) -> BTreeSet<u64> {
    events.map(|e| u64::from(e.attempt_index)).collect()
}

fn want_set(v: &Value) -> Check<BTreeSet<u64>> {
    Ok(v.as_array()
        .and_then(|l| l.iter().map(Value::as_u64).collect())
        .ok_or_else(|| format!("expected a list of attempt indices, got {v}"))?)
}

/// Each callable-branch event with the attempt index of the dispatching node's
/// attempt it ran in (the latest `started` event of that node before it).
fn with_enclosing_attempt<'r>(events: &[&'r NodeEvent]) -> Vec<(&'r NodeEvent, Option<u32>)> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| is_callable(e))
        .map(|(i, e)| {
            let node = e.namespace.first().map(|n| &**n);
            let enclosing = events[..i]
                .iter()
                .rev()
                .find(|p| {
                    p.namespace.len() == 1
                        && Some(&*p.node_name) == node
                        && p.phase == Phase::Started
                })
                .map(|p| p.attempt_index);
            (*e, enclosing)
        })
        .collect()
}

fn event_invariant(name: &str, v: &Value, run: &Run<'_>) -> Check {
    let events = node_events(run);
    if let Some(node) = name.strip_suffix("_node_attempt_indices_seen") {
        let got = indices(
            events
                .iter()
                .filter(|e| e.namespace.len() == 1 && &*e.node_name == node),
        );
        return ensure(got == want_set(v)?, || format!("`{node}` at {got:?}"));
    }
    if let Some(branch) = name.strip_suffix("_callable_branch_attempt_indices_seen") {
        let got = indices(
            events
                .iter()
                .filter(|e| is_callable(e) && &*e.node_name == branch),
        );
        ensure(!got.is_empty(), || format!("no `{branch}` branch events"))?;
        return ensure(got == want_set(v)?, || format!("`{branch}` at {got:?}"));
    }
    truthy(v)?;
    let paired = with_enclosing_attempt(&events);
    match lookup(EVENT_TABLE, name) {
        Some(verdict) => verdict(&paired),
        None => Err(Failure::unsupported(format!(
            "fixture_directive_unknown: observer event invariant `{name}` has no check"
        ))),
    }
}

/// Each callable-branch event with the attempt of the node attempt it ran in.
type Paired<'r> = [(&'r NodeEvent, Option<u32>)];

/// Every callable-branch event carries its enclosing node attempt's index, and some
/// carry one other than 0.
fn report_current_attempt(paired: &Paired<'_>) -> Check {
    ensure(paired.iter().any(|(e, _)| e.attempt_index != 0), || {
        "every callable-branch event reports attempt 0".into()
    })?;
    for (e, enclosing) in paired {
        ensure(Some(e.attempt_index) == *enclosing, || {
            format!(
                "`{}` {} reports attempt {} inside node attempt {enclosing:?}",
                e.node_name,
                e.phase.as_str(),
                e.attempt_index
            )
        })?;
    }
    Ok(())
}

/// On attempt 1, every callable branch has a `started` and a `completed` event with
/// attempt index 1.
fn attempt_one_on_retry(paired: &Paired<'_>) -> Check {
    let retry: Vec<&(&NodeEvent, Option<u32>)> =
        paired.iter().filter(|(_, at)| *at == Some(1)).collect();
    let branches: BTreeSet<&str> = retry.iter().map(|(e, _)| &*e.node_name).collect();
    ensure(!branches.is_empty(), || {
        "no callable-branch event in attempt 1".into()
    })?;
    for b in branches {
        for phase in [Phase::Started, Phase::Completed] {
            ensure(
                retry
                    .iter()
                    .any(|(e, _)| &*e.node_name == b && e.phase == phase && e.attempt_index == 1),
                || format!("no `{b}` {} event with attempt 1", phase.as_str()),
            )?;
        }
    }
    Ok(())
}

/// The fixed names of `expected.observer_event_invariants` (each value must be
/// `true`); the `<node>_node_attempt_indices_seen` and
/// `<branch>_callable_branch_attempt_indices_seen` families are matched by suffix.
const EVENT_TABLE: &Table<fn(&Paired<'_>) -> Check> = &[
    (
        "callable_branch_events_report_current_attempt_index",
        report_current_attempt,
    ),
    (
        "callable_branch_started_and_completed_carry_attempt_index_one_on_retry",
        attempt_one_on_retry,
    ),
];

/// The names [`EVENT_TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const EVENT_TABLE_NAMES: fn() -> Vec<&'static str> = || names(EVENT_TABLE);

/// `expected.observer_event_invariants`.
pub(crate) fn check_expected(expected: &Y<'_>, run: &Run<'_>) -> Check {
    let Some(block) = expected.get("observer_event_invariants") else {
        return Ok(());
    };
    for (name, v) in block.entries()? {
        let v = v.json()?;
        event_invariant(&name, &v, run)
            .map_err(|m| m.context(format!("observer_event_invariants.{name}: ")))?;
    }
    Ok(())
}

/// The parallel-branches node spans (they carry `branch_count`).
fn pb_nodes<'r>(run: &'r Run<'_>) -> Vec<&'r SpanData> {
    run.forest
        .spans
        .iter()
        .filter(|s| attr(s, a::PARALLEL_BRANCHES_BRANCH_COUNT).is_some())
        .collect()
}

fn attempt(s: &SpanData) -> Option<u64> {
    attr(s, a::NODE_ATTEMPT_INDEX).and_then(|v| v.as_u64())
}

/// The dispatch spans under each parallel-branches node span of attempt 1 carry
/// attempt index 1.
fn retry_dispatch_attempt_is_one(run: &Run<'_>) -> Check {
    let nodes = pb_nodes(run);
    ensure(nodes.iter().any(|n| attempt(n) == Some(1)), || {
        "no parallel-branches node span of attempt 1".into()
    })?;
    for n in nodes.into_iter().filter(|n| attempt(n) == Some(1)) {
        let dispatch = run.forest.children(n);
        ensure(!dispatch.is_empty(), || {
            format!("`{}` has no dispatch span", n.name)
        })?;
        for d in dispatch {
            ensure(
                attr_str(d, a::PARALLEL_BRANCHES_PARENT_NODE_NAME).as_deref() == Some(&*n.name),
                || format!("`{}` under `{}` is no dispatch span", d.name, n.name),
            )?;
            ensure(attempt(d) == attempt(n), || {
                format!(
                    "dispatch `{}` has attempt {:?} under node attempt {:?}",
                    d.name,
                    attempt(d),
                    attempt(n)
                )
            })?;
        }
    }
    Ok(())
}

/// The callable-branch dispatch spans are exactly the (branch, attempt index) pairs
/// of the synthetic callable-branch `started` events, and one attempt is not 0.
fn dispatch_attempts_follow_events(run: &Run<'_>) -> Check {
    let from_events: BTreeSet<(String, u64)> = node_events(run)
        .into_iter()
        .filter(|e| is_callable(e) && e.phase == Phase::Started)
        .map(|e| (e.node_name.to_string(), u64::from(e.attempt_index)))
        .collect();
    let branches: BTreeSet<&String> = from_events.iter().map(|(b, _)| b).collect();
    let from_spans: BTreeSet<(String, u64)> = run
        .forest
        .spans
        .iter()
        .filter(|s| attr(s, a::PARALLEL_BRANCHES_PARENT_NODE_NAME).is_some())
        .filter(|s| branches.contains(&s.name.to_string()))
        .map(|s| (s.name.to_string(), attempt(s).unwrap_or(u64::MAX)))
        .collect();
    ensure(from_events.iter().any(|(_, i)| *i != 0), || {
        "every callable-branch event reports attempt 0".into()
    })?;
    ensure(from_spans == from_events, || {
        format!("dispatch spans {from_spans:?}, callable-branch events {from_events:?}")
    })
}

/// `v` parallel-branches node spans, siblings, one per attempt.
fn sibling_node_spans_per_attempt(v: &Value, run: &Run<'_>) -> Check {
    let nodes = pb_nodes(run);
    let parents: BTreeSet<String> = nodes.iter().map(|n| n.parent_span_id.to_string()).collect();
    let attempts: BTreeSet<Option<u64>> = nodes.iter().map(|n| attempt(n)).collect();
    ensure(
        v.as_u64() == u64::try_from(nodes.len()).ok()
            && parents.len() == 1
            && attempts.len() == nodes.len(),
        || {
            format!(
                "{} parallel-branches node spans (attempts {attempts:?}, {} parents), expected {v} siblings",
                nodes.len(),
                parents.len()
            )
        },
    )
}

/// The attempt invariants of the OTel `invariants:` block, each with its value.
const TABLE: &Table<fn(&Value, &Run<'_>) -> Check> = &[
    (
        "sibling_parallel_branches_node_spans_per_attempt",
        sibling_node_spans_per_attempt,
    ),
    (
        "retry_callable_branch_dispatch_span_attempt_index_is_one",
        |v, run| truthy(v).and_then(|()| retry_dispatch_attempt_is_one(run)),
    ),
    (
        "callable_branch_attempt_index_sourced_from_node_event_not_zero",
        |v, run| truthy(v).and_then(|()| dispatch_attempts_follow_events(run)),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The attempt invariant `name`, or `None` when it is not one of these.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(v, run))
}
