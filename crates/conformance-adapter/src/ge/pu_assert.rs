//! Spec: conformance-adapter §5.8 / §5.9 for the pipeline-utilities suite:
//! trace and timing records, failure-isolation events, per-attempt events, and the
//! suite's named invariants.

use openarmature_graph::{CaughtException, FailureIsolationEvent, NodeEvent, ObserverEvent, Phase};
use serde_json::{json, Value};

use super::assert::Ctx;
use super::harness::lock;
use crate::failure::Check;
use crate::matchers::{check, Bindings};
use crate::table::{lookup, names, Table};
use crate::yaml::Y;

fn j(y: &Y<'_>) -> Check<Value> {
    Ok(y.json()?)
}

/// The node events of the invocation under test (the harness recorder sees all).
pub(crate) fn node_events(ctx: &Ctx<'_>) -> Vec<NodeEvent> {
    ctx.implicit
        .events_for(&ctx.outcome.invocation_id)
        .iter()
        .filter_map(|e| e.as_node().cloned())
        .collect()
}

/// The failure-isolation events of the invocation under test.
pub(crate) fn isolation_events(ctx: &Ctx<'_>) -> Vec<FailureIsolationEvent> {
    ctx.implicit
        .events_for(&ctx.outcome.invocation_id)
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::FailureIsolation(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

fn subset(expected: &Y<'_>, actual: &Value, b: &mut Bindings, path: &str) -> Check {
    for (key, v) in expected.entries()? {
        let got = actual.get(&key).cloned().unwrap_or(Value::Null);
        check(&j(&v)?, &got, b, &format!("{path}.{key}"))?;
    }
    Ok(())
}

/// `trace_records: {recorder: [{state_in, partial_update_returned, pre_seen, post_seen}]}`.
pub(crate) fn trace_records(y: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    let mut b = Bindings::default();
    for (name, list) in y.entries()? {
        let records: Vec<Value> = lock(&ctx.harness.trace_records)
            .iter()
            .filter(|r| r.recorder == name)
            .map(|r| {
                json!({
                    "state_in": r.state_in,
                    "pre_seen": r.pre_seen,
                    "post_seen": r.post_seen,
                    "partial_update_returned": r.partial_update_returned,
                })
            })
            .collect();
        let items = list.seq()?;
        if items.len() != records.len() {
            return Err(format!(
                "trace_records.{name}: expected {} records, got {records:?}",
                items.len()
            )
            .into());
        }
        for (i, (want, got)) in items.iter().zip(&records).enumerate() {
            want.check_keys(&[
                "state_in",
                "partial_update_returned",
                "pre_seen",
                "post_seen",
            ])?;
            subset(want, got, &mut b, &format!("trace_records.{name}[{i}]"))?;
        }
    }
    Ok(())
}

/// `timing_records: [{node_name, duration_ms, outcome, exception_category}]`
/// (durations within 0.01 ms).
pub(crate) fn timing_records(y: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    let records = lock(&ctx.harness.timing_records).clone();
    let items = y.seq()?;
    if items.len() != records.len() {
        return Err(format!(
            "timing_records: expected {} records, got {records:?}",
            items.len()
        )
        .into());
    }
    let mut b = Bindings::default();
    for (i, (want, got)) in items.iter().zip(&records).enumerate() {
        want.check_keys(&["node_name", "duration_ms", "outcome", "exception_category"])?;
        if let Some(d) = want.get("duration_ms") {
            let expected = d.f64()?;
            if (expected - got.duration_ms).abs() > 0.01 {
                return Err(format!(
                    "timing_records[{i}].duration_ms: expected {expected}, got {}",
                    got.duration_ms
                )
                .into());
            }
        }
        let actual = json!({
            "node_name": got.node_name,
            "outcome": got.outcome.as_str(),
            "exception_category": got.exception_category,
        });
        for key in ["node_name", "outcome", "exception_category"] {
            if let Some(v) = want.get(key) {
                check(
                    &j(&v)?,
                    &actual[key],
                    &mut b,
                    &format!("timing_records[{i}].{key}"),
                )?;
            }
        }
    }
    Ok(())
}

fn lineage_json(e: &FailureIsolationEvent) -> Value {
    json!({
        "namespace": &*e.lineage.namespace,
        "attempt_index": e.lineage.attempt_index,
        "fan_out_index": e.lineage.fan_out_index,
        "branch_name": e.lineage.branch_name,
        "fan_out_index_chain": &*e.lineage.fan_out_index_chain,
        "branch_name_chain": &*e.lineage.branch_name_chain,
    })
}

/// `expected_failure_isolation_event`: exactly one event, written keys compared;
/// `caught_exception.chain` has an exact length and subset-matched links.
pub(crate) fn failure_isolation_event(y: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    let events = isolation_events(ctx);
    let [event] = events.as_slice() else {
        return Err(format!(
            "expected exactly one failure-isolation event, got {}",
            events.len()
        )
        .into());
    };
    y.check_keys(&[
        "event_name",
        "wrapped_node_lineage",
        "pre_state",
        "post_state",
        "caught_exception",
    ])?;
    let mut b = Bindings::default();
    let p = "expected_failure_isolation_event";
    if let Some(v) = y.get("event_name") {
        check(
            &j(&v)?,
            &json!(event.event_name),
            &mut b,
            &format!("{p}.event_name"),
        )?;
    }
    if let Some(v) = y.get("wrapped_node_lineage") {
        subset(
            &v,
            &lineage_json(event),
            &mut b,
            &format!("{p}.wrapped_node_lineage"),
        )?;
    }
    if let Some(v) = y.get("pre_state") {
        check(
            &j(&v)?,
            &event.pre_state.to_json(),
            &mut b,
            &format!("{p}.pre_state"),
        )?;
    }
    if let Some(v) = y.get("post_state") {
        check(
            &j(&v)?,
            &event.post_state,
            &mut b,
            &format!("{p}.post_state"),
        )?;
    }
    if let Some(ce) = y.get("caught_exception") {
        ce.check_keys(&["category", "message", "chain"])?;
        let caught = &event.caught_exception;
        if let Some(v) = ce.get("category") {
            check(
                &j(&v)?,
                &json!(caught.category),
                &mut b,
                &format!("{p}.caught_exception.category"),
            )?;
        }
        if let Some(v) = ce.get("message") {
            check(
                &j(&v)?,
                &json!(caught.message),
                &mut b,
                &format!("{p}.caught_exception.message"),
            )?;
        }
        if let Some(chain) = ce.get("chain") {
            let links = chain.seq()?;
            if links.len() != caught.chain.len() {
                return Err(format!(
                    "{p}.caught_exception.chain: expected {} links, got {:?}",
                    links.len(),
                    caught.chain
                )
                .into());
            }
            for (i, (want, got)) in links.iter().zip(&caught.chain).enumerate() {
                want.check_keys(&["category", "message", "carrier"])?;
                let actual = json!({"category": got.category, "message": got.message, "carrier": got.carrier});
                subset(
                    want,
                    &actual,
                    &mut b,
                    &format!("{p}.caught_exception.chain[{i}]"),
                )?;
            }
        }
    }
    Ok(())
}

fn node_event_json(e: &NodeEvent) -> Value {
    json!({
        "attempt_index": e.attempt_index,
        "phase": e.phase.as_str(),
        "node_name": &*e.node_name,
        "step": e.step,
        "namespace": &*e.namespace,
        "error_category": e.error.as_ref().and_then(|er| er.derived_category()),
        "error": e.error.as_ref().map(|er| er.category.clone()),
        "post_state": e.post_state.as_ref().map(|p| p.to_json()),
    })
}

/// `expected_attempt_events`: the node events, in order, with `error_category`
/// meaning the §6.4 derived category of the carried error.
pub(crate) fn attempt_events(y: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    let events: Vec<Value> = node_events(ctx).iter().map(node_event_json).collect();
    let items = y.seq()?;
    if items.len() != events.len() {
        return Err(format!(
            "expected_attempt_events: expected {} events, got {events:?}",
            items.len()
        )
        .into());
    }
    let mut b = Bindings::default();
    for (i, (want, got)) in items.iter().zip(&events).enumerate() {
        want.check_keys(&[
            "attempt_index",
            "phase",
            "node_name",
            "error_category",
            "step",
            "namespace",
        ])?;
        subset(want, got, &mut b, &format!("expected_attempt_events[{i}]"))?;
    }
    Ok(())
}

/// `expected_observer_event: {node_name, post_state, error_absent}`: some
/// `completed` event matches.
pub(crate) fn observer_event(y: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    y.check_keys(&["node_name", "post_state", "error_absent"])?;
    let node = y
        .req("node_name")
        .and_then(|n| n.str().map(str::to_owned))?;
    let post = y.get("post_state").map(|p| j(&p)).transpose()?;
    let error_absent = y
        .get("error_absent")
        .map(|e| e.bool())
        .transpose()?
        .unwrap_or(false);
    let events = node_events(ctx);
    let hit = events.iter().any(|e| {
        e.phase == Phase::Completed
            && *e.node_name == node
            && (!error_absent || e.error.is_none())
            && post.as_ref().is_none_or(|p| {
                e.post_state.as_ref().is_some_and(|actual| {
                    check(p, &actual.to_json(), &mut Bindings::default(), "$").is_ok()
                })
            })
    });
    if hit {
        Ok(())
    } else {
        let seen: Vec<Value> = events.iter().map(node_event_json).collect();
        Err(format!(
            "expected_observer_event: no completed event for `{node}` matches; events: {seen:?}"
        )
        .into())
    }
}

/// What the pipeline-utilities invariants read of one recorded run.
struct Facts<'a, 'c> {
    ctx: &'a Ctx<'c>,
    fi: Vec<FailureIsolationEvent>,
    succeeded: bool,
    side: serde_json::Map<String, Value>,
    events: Vec<NodeEvent>,
}

impl Facts<'_, '_> {
    /// The caught exception of the run's one failure-isolation event (`None` unless
    /// there is exactly one).
    fn caught(&self) -> Option<&CaughtException> {
        match self.fi.as_slice() {
            [one] => Some(&one.caught_exception),
            _ => None,
        }
    }
}

/// The pipeline-utilities named invariants (conformance-adapter §5.9): whether each
/// holds of the recorded run. Aliases map to the same check.
const TABLE: &Table<fn(&Facts<'_, '_>) -> bool> = &[
    (
        "engine_does_not_see_exception",
        engine_does_not_see_exception,
    ),
    ("engine_sees_degraded_return", engine_does_not_see_exception),
    (
        "degraded_return_reaches_engine_with_on_caught",
        engine_does_not_see_exception,
    ),
    (
        "event_is_distinct_from_node_event",
        event_is_distinct_from_node_event,
    ),
    (
        "event_name_is_caller_supplied",
        event_name_is_caller_supplied,
    ),
    (
        "callable_receives_pre_merge_state",
        callable_receives_pre_merge_state,
    ),
    (
        "callable_return_merges_via_reducer",
        callable_return_merges_via_reducer,
    ),
    ("matching_exception_caught", matching_exception_caught),
    (
        "framework_event_still_emits_with_on_caught",
        matching_exception_caught,
    ),
    (
        "default_predicate_catches_bare_exception",
        matching_exception_caught,
    ),
    (
        "non_matching_exception_propagates",
        non_matching_exception_propagates,
    ),
    (
        "catch_non_matching_propagates",
        non_matching_exception_propagates,
    ),
    (
        "no_event_when_predicate_does_not_match",
        no_event_when_predicate_does_not_match,
    ),
    (
        "no_event_when_catch_does_not_match",
        no_event_when_predicate_does_not_match,
    ),
    (
        "retry_exhausts_before_isolation_catches",
        retry_exhausts_before_isolation_catches,
    ),
    (
        "outer_to_inner_ordering_load_bearing",
        outer_to_inner_ordering_load_bearing,
    ),
    ("on_caught_fires_exactly_once", on_caught_fires_exactly_once),
    (
        "on_caught_receives_original_exception",
        on_caught_receives_original_exception,
    ),
    (
        "caught_exception_category_null_for_non_categorized",
        caught_exception_category_null_for_non_categorized,
    ),
    (
        "uncategorized_cause_yields_null_derived_category",
        caught_exception_category_null_for_non_categorized,
    ),
    (
        "caught_exception_message_captures_str_exc",
        caught_exception_message_captures_str_exc,
    ),
    (
        "node_level_chain_is_single_non_carrier_link",
        node_level_chain_is_single_non_carrier_link,
    ),
    (
        "derived_category_is_outermost_non_carrier_with_category",
        derived_category_is_outermost_non_carrier_with_category,
    ),
    (
        "category_not_masked_as_node_exception",
        category_not_masked_as_node_exception,
    ),
    (
        "category_resolves_through_node_exception_wrapper",
        category_resolves_through_node_exception_wrapper,
    ),
    (
        "catch_matches_through_node_exception_carrier",
        category_resolves_through_node_exception_wrapper,
    ),
    (
        "chain_includes_carrier_and_originating",
        chain_includes_carrier_and_originating,
    ),
    (
        "chain_has_two_non_carrier_links",
        chain_has_two_non_carrier_links,
    ),
    (
        "contribution_is_the_degraded_update",
        contribution_is_the_degraded_update,
    ),
    (
        "extra_outputs_read_by_subgraph_field_name",
        contribution_is_the_degraded_update,
    ),
    ("degrade_path_does_not_raise", degrade_path_does_not_raise),
    ("fan_in_does_not_raise", degrade_path_does_not_raise),
    (
        "callable_branch_failure_isolated_and_degraded",
        degrade_path_does_not_raise,
    ),
    (
        "omitted_collect_field_yields_null_slot",
        omitted_collect_field_yields_null_slot,
    ),
    (
        "absent_collect_field_yields_null_slot",
        omitted_collect_field_yields_null_slot,
    ),
    (
        "extra_outputs_omission_is_null_slot",
        omitted_collect_field_yields_null_slot,
    ),
    ("parent_keeps_prior_value", parent_keeps_prior_value),
    (
        "uncovered_projected_field_skipped",
        parent_keeps_prior_value,
    ),
    (
        "degrade_does_not_suppress_reducer_error",
        degrade_does_not_suppress_reducer_error,
    ),
    (
        "strict_reducer_null_slot_raises",
        degrade_does_not_suppress_reducer_error,
    ),
    (
        "callable_branches_run_without_subgraph",
        callable_branches_run_without_subgraph,
    ),
    (
        "contributions_merge_via_parent_reducer",
        contributions_merge_via_parent_reducer,
    ),
    ("when_false_branch_skipped", when_false_branch_skipped),
    ("skipped_branch_emits_no_event", when_false_branch_skipped),
    ("skipped_branch_no_contribution", when_false_branch_skipped),
    ("when_true_branch_dispatches", when_true_branch_dispatches),
    ("sibling_branch_completed", sibling_branch_completed),
    (
        "drain_covered_all_fan_out_instances_via_shared_invocation_id",
        drain_covered_all_fan_out_instances_via_shared_invocation_id,
    ),
    (
        "drain_covered_all_parallel_branches_via_shared_invocation_id",
        drain_covered_all_parallel_branches_via_shared_invocation_id,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Whether the pipeline-utilities invariant `name` holds of the recorded run, or
/// `None` when `name` is not one (unknown names fail at the caller).
pub(crate) fn invariant(name: &str, ctx: &Ctx<'_>) -> Option<bool> {
    let check = lookup(TABLE, name)?;
    let facts = Facts {
        ctx,
        fi: isolation_events(ctx),
        succeeded: ctx.outcome.result.is_ok(),
        side: lock(&ctx.harness.side_channel).clone(),
        events: node_events(ctx),
    };
    Some(check(&facts))
}

fn engine_does_not_see_exception(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded && !facts.fi.is_empty()
}

fn event_is_distinct_from_node_event(facts: &Facts<'_, '_>) -> bool {
    !facts.fi.is_empty()
        && facts
            .events
            .iter()
            .all(|e| e.node_name.as_ref() != facts.fi[0].event_name.as_str())
}

fn event_name_is_caller_supplied(facts: &Facts<'_, '_>) -> bool {
    facts.fi.len() == 1 && !facts.fi[0].event_name.is_empty()
}

fn callable_receives_pre_merge_state(facts: &Facts<'_, '_>) -> bool {
    facts.fi.len() == 1
        && facts
            .events
            .first()
            .is_some_and(|e| e.pre_state.to_json() == facts.fi[0].pre_state.to_json())
}

fn callable_return_merges_via_reducer(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded && facts.fi.len() == 1
}

fn matching_exception_caught(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded && facts.fi.len() == 1
}

fn non_matching_exception_propagates(facts: &Facts<'_, '_>) -> bool {
    !facts.succeeded
}

fn no_event_when_predicate_does_not_match(facts: &Facts<'_, '_>) -> bool {
    facts.fi.is_empty()
}

fn retry_exhausts_before_isolation_catches(facts: &Facts<'_, '_>) -> bool {
    let started = facts
        .events
        .iter()
        .filter(|e| e.phase == Phase::Started)
        .count();
    let last = facts.events.iter().map(|e| e.attempt_index).max();
    facts.fi.len() == 1 && started > 1 && last == Some(facts.fi[0].lineage.attempt_index)
}

fn outer_to_inner_ordering_load_bearing(facts: &Facts<'_, '_>) -> bool {
    // The isolation event follows every attempt's completed event: retry ran
    // inside, isolation outside.
    let all = facts
        .ctx
        .implicit
        .events_for(&facts.ctx.outcome.invocation_id);
    let fi_at = all
        .iter()
        .position(|e| matches!(&**e, ObserverEvent::FailureIsolation(_)));
    let last_completed_error = all.iter().rposition(|e| {
        e.as_node()
            .is_some_and(|n| n.phase == Phase::Completed && n.error.is_some())
    });
    matches!((fi_at, last_completed_error), (Some(f), Some(c)) if f > c)
}

fn on_caught_fires_exactly_once(facts: &Facts<'_, '_>) -> bool {
    facts.side.values().any(|v| v.as_i64() == Some(1)) && facts.fi.len() == 1
}

fn on_caught_receives_original_exception(facts: &Facts<'_, '_>) -> bool {
    facts.caught().is_some_and(|c| {
        facts
            .side
            .values()
            .any(|v| v.as_str() == Some(c.message.as_str()))
    })
}

fn caught_exception_category_null_for_non_categorized(facts: &Facts<'_, '_>) -> bool {
    facts.caught().is_some_and(|c| c.category.is_none())
}

fn caught_exception_message_captures_str_exc(facts: &Facts<'_, '_>) -> bool {
    facts
        .caught()
        .is_some_and(|c| c.chain.first().is_some_and(|l| l.message == c.message))
}

fn node_level_chain_is_single_non_carrier_link(facts: &Facts<'_, '_>) -> bool {
    facts
        .caught()
        .is_some_and(|c| matches!(c.chain.as_slice(), [only] if !only.carrier))
}

fn derived_category_is_outermost_non_carrier_with_category(facts: &Facts<'_, '_>) -> bool {
    facts.caught().is_some_and(|c| {
        let outermost = c.chain.iter().find(|l| !l.carrier && l.category.is_some());
        c.category == outermost.and_then(|l| l.category.clone())
    })
}

fn category_not_masked_as_node_exception(facts: &Facts<'_, '_>) -> bool {
    facts
        .caught()
        .is_some_and(|c| c.category.as_deref().is_some_and(|k| k != "node_exception"))
}

fn category_resolves_through_node_exception_wrapper(facts: &Facts<'_, '_>) -> bool {
    category_not_masked_as_node_exception(facts)
        && facts
            .caught()
            .is_some_and(|c| c.chain.first().is_some_and(|l| l.carrier))
}

fn chain_includes_carrier_and_originating(facts: &Facts<'_, '_>) -> bool {
    facts.caught().is_some_and(|c| {
        c.chain.first().is_some_and(|l| l.carrier) && c.chain.last().is_some_and(|l| !l.carrier)
    })
}

fn chain_has_two_non_carrier_links(facts: &Facts<'_, '_>) -> bool {
    facts
        .caught()
        .is_some_and(|c| c.chain.iter().filter(|l| !l.carrier).count() == 2)
}

fn contribution_is_the_degraded_update(facts: &Facts<'_, '_>) -> bool {
    // Every value of the degraded update reached the parent state.
    let state = facts.ctx.outcome.result.as_ref().ok();
    !facts.fi.is_empty()
        && state.is_some_and(|s| {
            facts.fi.iter().all(|f| {
                f.post_state
                    .as_object()
                    .is_some_and(|m| m.values().all(|v| contains_value(s, v)))
            })
        })
}

fn degrade_path_does_not_raise(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded && !facts.fi.is_empty()
}

fn omitted_collect_field_yields_null_slot(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded
        && facts
            .ctx
            .outcome
            .result
            .as_ref()
            .is_ok_and(|s| contains_value(s, &Value::Null))
}

fn parent_keeps_prior_value(facts: &Facts<'_, '_>) -> bool {
    // The degraded branch did not cover a projected field: it keeps its default.
    let defaults = openarmature_graph::State::to_json(facts.ctx.graph.defaults());
    facts.succeeded
        && !facts.fi.is_empty()
        && facts.ctx.outcome.result.as_ref().is_ok_and(|s| {
            s.as_object()
                .is_some_and(|m| m.iter().any(|(k, v)| defaults.get(k) == Some(v)))
        })
}

fn degrade_does_not_suppress_reducer_error(facts: &Facts<'_, '_>) -> bool {
    !facts.fi.is_empty()
        && facts
            .ctx
            .outcome
            .result
            .as_ref()
            .err()
            .is_some_and(|f| f.category == "reducer_error")
}

fn callable_branches_run_without_subgraph(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded
        && facts
            .events
            .iter()
            .any(|e| e.branch_name.as_deref() == Some(&*e.node_name))
}

fn contributions_merge_via_parent_reducer(facts: &Facts<'_, '_>) -> bool {
    facts.succeeded
}

fn when_false_branch_skipped(facts: &Facts<'_, '_>) -> bool {
    branches(&facts.events).is_some_and(|(declared, dispatched, seen)| {
        dispatched < declared.len()
            && declared.iter().filter(|b| !seen.contains(*b)).count() == declared.len() - dispatched
    })
}

fn when_true_branch_dispatches(facts: &Facts<'_, '_>) -> bool {
    branches(&facts.events).is_some_and(|(declared, dispatched, seen)| {
        dispatched == declared.len() && declared.iter().all(|b| seen.contains(b))
    })
}

fn sibling_branch_completed(facts: &Facts<'_, '_>) -> bool {
    let done: std::collections::BTreeSet<_> = facts
        .events
        .iter()
        .filter(|e| e.phase == Phase::Completed && e.error.is_none())
        .filter_map(|e| e.branch_name.clone())
        .collect();
    facts.succeeded && !done.is_empty()
}

fn drain_covered_all_fan_out_instances_via_shared_invocation_id(facts: &Facts<'_, '_>) -> bool {
    let count = facts
        .events
        .iter()
        .find_map(|e| e.fan_out_config.as_ref().map(|c| c.item_count));
    drain_snapshots(facts.ctx).iter().any(|snapshot| {
        let seen: std::collections::BTreeSet<_> =
            snapshot.iter().filter_map(|e| e.fan_out_index).collect();
        count.is_some_and(|n| n > 0 && seen.len() == n)
            && snapshot
                .iter()
                .all(|e| *e.invocation_id == facts.ctx.outcome.invocation_id)
    })
}

fn drain_covered_all_parallel_branches_via_shared_invocation_id(facts: &Facts<'_, '_>) -> bool {
    let names = facts.events.iter().find_map(|e| {
        e.parallel_branches_config
            .as_ref()
            .map(|c| c.branch_names.clone())
    });
    drain_snapshots(facts.ctx).iter().any(|snapshot| {
        names.as_ref().is_some_and(|names| {
            !names.is_empty()
                && names
                    .iter()
                    .all(|n| snapshot.iter().any(|e| e.branch_name.as_deref() == Some(n)))
        }) && snapshot
            .iter()
            .all(|e| *e.invocation_id == facts.ctx.outcome.invocation_id)
    })
}

/// Whether `value` occurs anywhere in `json` (as a list element or field value).
fn contains_value(json: &Value, value: &Value) -> bool {
    if json == value {
        return true;
    }
    match json {
        Value::Array(items) => items.iter().any(|i| contains_value(i, value)),
        Value::Object(map) => map.values().any(|v| contains_value(v, value)),
        _ => false,
    }
}

/// `(declared branches, dispatched count, branches seen in events)` of the
/// invocation's parallel-branches node.
fn branches(
    events: &[NodeEvent],
) -> Option<(Vec<String>, usize, std::collections::BTreeSet<String>)> {
    let config = events
        .iter()
        .find_map(|e| e.parallel_branches_config.clone())?;
    let seen = events
        .iter()
        .filter_map(|e| e.branch_name.clone())
        .collect();
    Some((config.branch_names, config.branch_count, seen))
}

/// The node events of every per-node drain snapshot in the invocation.
fn drain_snapshots(ctx: &Ctx<'_>) -> Vec<Vec<NodeEvent>> {
    lock(&ctx.harness.node_drains)
        .iter()
        .filter(|d| d.invocation_id == ctx.outcome.invocation_id)
        .map(|d| {
            d.snapshot
                .iter()
                .filter_map(|e| e.as_node().cloned())
                .collect()
        })
        .collect()
}

/// `expected_error.flaky_call_count`: how often the failing node's body ran.
pub(crate) fn flaky_call_count(y: &Y<'_>, ctx: &Ctx<'_>, node: &str) -> Check {
    let want = y.i64()?;
    let got = lock(&ctx.harness.flaky_calls)
        .get(node)
        .copied()
        .unwrap_or(0);
    if i64::try_from(got).ok() == Some(want) {
        Ok(())
    } else {
        Err(format!("flaky_call_count: expected {want}, got {got}").into())
    }
}

/// The most fan-out instances active at once, read off the serial event stream: an
/// instance is active from its first `started` to its last `completed`.
pub(crate) fn max_instances_in_flight(events: &[NodeEvent]) -> usize {
    use std::collections::BTreeMap;
    let mut span: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (position, e) in events.iter().enumerate() {
        if let Some(i) = e.fan_out_index {
            let entry = span.entry(i).or_insert((position, position));
            entry.1 = position;
        }
    }
    (0..events.len())
        .map(|p| {
            span.values()
                .filter(|(first, last)| *first <= p && p <= *last)
                .count()
        })
        .max()
        .unwrap_or(0)
}
