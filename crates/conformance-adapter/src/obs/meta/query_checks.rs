//! Spec: conformance-adapter §5.9 with observability §9 — the named invariants of the
//! queryable-observer fixtures 047–049, checked against the recorded reads and drops,
//! the observers' final state, the delivered events and the final states.

use std::collections::BTreeSet;

use openarmature_graph::Phase;
use serde_json::Value;

use super::checks::emitted_before;
use super::queryable::Kind;
use super::Record;
use crate::failure::{mismatch, Check};
use crate::obs::Run;
use crate::table::{lookup, names, Table};

fn truthy(v: &Value) -> Check {
    match v {
        Value::Bool(true) => Ok(()),
        other => mismatch(format!("only `true` is supported, got {other}")),
    }
}

/// What every §9 check reads: the run, its records, the recorded reads and the
/// invocations they were made in.
struct Reads<'a, 'r> {
    run: &'a Run<'r>,
    records: &'a [Record],
    reads: Vec<(&'a super::Site, &'a Value)>,
    invocations: BTreeSet<&'a str>,
}

impl<'a, 'r> Reads<'a, 'r> {
    fn of(run: &'a Run<'r>, records: &'a [Record]) -> Self {
        let reads: Vec<(&super::Site, &Value)> = records
            .iter()
            .filter_map(|r| match r {
                Record::Query { site, value, .. } => Some((site, value)),
                _ => None,
            })
            .collect();
        let invocations = reads
            .iter()
            .map(|(s, _)| s.invocation_id.as_str())
            .collect();
        Reads {
            run,
            records,
            reads,
            invocations,
        }
    }
}

/// One §9 check.
type QueryCheck = fn(&Reads<'_, '_>) -> Check;

/// The §9 invariants (each value must be `true`).
const TABLE: &Table<QueryCheck> = &[
    ("observer_attach_emit_consume_cycle_works", |q| {
        match q.run.meta.observers.iter().find(|o| o.total() == 0) {
            Some(o) => mismatch(format!("observer `{}` received no event", o.name)),
            None => Ok(()),
        }
    }),
    ("read_returns_non_negative_integer", |q| {
        match q.reads.iter().find(|(_, v)| !v.is_u64()) {
            Some((_, v)) => mismatch(format!("read returned {v}")),
            None => Ok(()),
        }
    }),
    ("read_is_consistent_no_torn_view", consistent_reads),
    ("observer_does_not_mutate_state_or_influence_routing", |q| {
        untouched(q.run, q.records)
    }),
    ("snapshot_total_equals_sum_of_breakdown", totals_are_sums),
    ("read_does_not_raise_on_concurrent_write", |q| {
        let finals = super::lock(&q.run.meta.finals).clone();
        if finals.iter().all(Option::is_some) {
            Ok(())
        } else {
            mismatch("an invocation did not complete")
        }
    }),
    ("no_auto_drop_on_completion_signal", no_auto_drop),
    ("explicit_drop_removes_bucket", explicit_drop),
    ("per_invocation_id_bucket_isolation", isolated_buckets),
    ("accumulator_exposes_drop_method", drop_method),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The §9 invariants; `None` for other names.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>, records: &[Record]) -> Option<Check> {
    let verdict = lookup(TABLE, name)?;
    let checked = || -> Check {
        truthy(v)?;
        let q = Reads::of(run, records);
        if q.reads.is_empty() {
            return mismatch("no queryable-observer read was recorded");
        }
        verdict(&q)
    };
    Some(checked())
}

/// A count never exceeds the node events emitted before the reading body ran.
fn consistent_reads(q: &Reads<'_, '_>) -> Check {
    for (site, value) in &q.reads {
        let bound = emitted_before(q.run, &site.invocation_id, &site.node)
            .ok_or_else(|| format!("no started event of `{}`", site.node))?;
        if value.as_u64().is_none_or(|n| n > bound as u64) {
            return mismatch(format!("read {value} exceeds the {bound} events emitted"));
        }
    }
    Ok(())
}

fn totals_are_sums(q: &Reads<'_, '_>) -> Check {
    for (_, snap) in &q.reads {
        let total = snap.get("total").and_then(Value::as_u64);
        let sum: u64 = snap
            .get("by_type")
            .and_then(Value::as_object)
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or_default();
        if total != Some(sum) || sum == 0 {
            return mismatch(format!(
                "snapshot {snap}: total is not the sum of the breakdown"
            ));
        }
    }
    Ok(())
}

fn no_auto_drop(q: &Reads<'_, '_>) -> Check {
    let acc = accumulator(q.run)?;
    for (site, bucket) in &q.reads {
        if bucket.is_null() {
            return mismatch(format!(
                "the bucket of `{}` was gone at its last node",
                site.invocation_id
            ));
        }
        // Events delivered after the explicit drop (the reading node's `completed`)
        // re-created the bucket, and completion removed nothing.
        if !acc.has_bucket(&site.invocation_id) {
            return mismatch(format!(
                "the bucket of `{}` was dropped at completion",
                site.invocation_id
            ));
        }
    }
    Ok(())
}

fn explicit_drop(q: &Reads<'_, '_>) -> Check {
    let absent: Vec<(&str, bool)> = q
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Absent { site, absent } => Some((site.invocation_id.as_str(), *absent)),
            _ => None,
        })
        .collect();
    let checked: BTreeSet<&str> = absent.iter().map(|(i, _)| *i).collect();
    if checked == q.invocations && absent.iter().all(|(_, a)| *a) {
        Ok(())
    } else {
        mismatch(format!("after-drop checks: {absent:?}"))
    }
}

fn isolated_buckets(q: &Reads<'_, '_>) -> Check {
    for (site, bucket) in &q.reads {
        let events = bucket
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let prefix = format!("{}#", site.invocation_id);
        if events.is_empty()
            || events
                .iter()
                .any(|e| !e.as_str().is_some_and(|s| s.starts_with(&prefix)))
        {
            return mismatch(format!("bucket of `{}`: {events:?}", site.invocation_id));
        }
    }
    Ok(())
}

fn drop_method(q: &Reads<'_, '_>) -> Check {
    accumulator(q.run)?;
    let dropped: BTreeSet<&str> = q
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Drop { site, .. } => Some(site.invocation_id.as_str()),
            _ => None,
        })
        .collect();
    if dropped == q.invocations {
        Ok(())
    } else {
        mismatch(format!("dropped {dropped:?}, read {:?}", q.invocations))
    }
}

fn accumulator<'r>(run: &'r Run<'_>) -> Check<&'r super::queryable::Queryable> {
    Ok(run
        .meta
        .observers
        .iter()
        .find(|o| o.kind == Kind::PerInvocationAccumulator)
        .map(|o| &**o)
        .ok_or_else(|| "no per_invocation_accumulator observer".to_owned())?)
}

/// The top-level nodes ran along the case's static edges from `entry`, and every
/// declared field not written by a read directive kept its default.
fn untouched(run: &Run<'_>, records: &[Record]) -> Check {
    let case = run.case;
    let mut path = Vec::new();
    let mut at = case
        .get("entry")
        .and_then(|e| e.str().ok())
        .map(str::to_owned);
    let edges: Vec<(String, String)> = case
        .get("edges")
        .and_then(|e| e.seq().ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| {
            Some((
                e.get("from")?.str().ok()?.to_owned(),
                e.get("to")?.str().ok()?.to_owned(),
            ))
        })
        .collect();
    while let Some(node) = at.filter(|n| n != "END" && path.len() <= edges.len()) {
        at = edges
            .iter()
            .find(|(f, _)| *f == node)
            .map(|(_, t)| t.clone());
        path.push(node);
    }
    let ran: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| e.as_node())
        .filter(|n| n.phase == Phase::Started && n.namespace.len() == 1 && n.attempt_index == 0)
        .map(|n| n.node_name.to_string())
        .collect();
    if ran != path {
        return mismatch(format!("ran {ran:?}, the edges route {path:?}"));
    }
    let read_fields: Vec<String> = case
        .get("nodes")
        .and_then(|n| n.entries().ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|(_, spec)| spec.get("capture_queryable_observer_read_into"))
        .filter_map(|q| {
            q.get("state_field")
                .and_then(|f| f.str().ok().map(str::to_owned))
        })
        .collect();
    if read_fields.is_empty() || !records.iter().any(|r| matches!(r, Record::Query { .. })) {
        return mismatch("no read directive ran");
    }
    let finals = super::lock(&run.meta.finals).clone();
    let fields = case.get("state").and_then(|s| s.get("fields"));
    for (field, spec) in fields.and_then(|f| f.entries().ok()).unwrap_or_default() {
        if read_fields.contains(&field) {
            continue;
        }
        let default = spec
            .get("default")
            .and_then(|d| d.json().ok())
            .unwrap_or(Value::Null);
        for state in finals.iter().flatten() {
            if state.get(&field) != Some(&default) {
                return mismatch(format!(
                    "field `{field}` changed to {:?}",
                    state.get(&field)
                ));
            }
        }
    }
    Ok(())
}
