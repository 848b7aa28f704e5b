//! Spec: conformance-adapter §5.9 with observability §3.4 — the named invariants of
//! the metadata fixtures 043–045 and 135, each checked against what the directives
//! recorded ([`Record`]), in execution order, and the final states (the §9 ones are in
//! `query_checks`, the expectation keys in `expect`).

use std::collections::BTreeMap;

use openarmature_graph::{InvocationMetadata, ObserverEvent, Phase};
use serde_json::{Map, Value};

use super::{Record, Site};
use crate::failure::{mismatch, Check};
use crate::obs::Run;
use crate::table::{lookup, names, Table};

pub(crate) fn truthy(v: &Value) -> Check {
    match v {
        Value::Bool(true) => Ok(()),
        other => mismatch(format!("only `true` is supported, got {other}")),
    }
}

fn same_node(a: &Site, b: &Site) -> bool {
    a.invocation_id == b.invocation_id
        && a.node == b.node
        && a.attempt == b.attempt
        && a.fan_out_index == b.fan_out_index
}

/// `map` holds every entry of `part`.
fn contains(map: &Map<String, Value>, part: &Map<String, Value>) -> bool {
    part.iter().all(|(k, v)| map.get(k) == Some(v))
}

pub(crate) type Capture<'r> = (usize, &'r Site, &'r InvocationMetadata);
type Augment<'r> = (usize, &'r Site, &'r Map<String, Value>);

pub(crate) fn captures(records: &[Record]) -> Vec<Capture<'_>> {
    records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Record::Capture { site, read, .. } => Some((i, site, read)),
            _ => None,
        })
        .collect()
}

/// Accepted writes.
fn augments(records: &[Record]) -> Vec<Augment<'_>> {
    records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Record::Augment {
                site,
                entries,
                rejected: None,
            } => Some((i, site, entries)),
            _ => None,
        })
        .collect()
}

fn nonempty<T>(items: Vec<T>, what: &str) -> Check<Vec<T>> {
    if items.is_empty() {
        mismatch(format!("no {what} was recorded"))
    } else {
        Ok(items)
    }
}

/// Same-node (augment, capture) pairs with whether the write came first.
fn pairs<'r>(records: &'r [Record]) -> Vec<(Augment<'r>, Capture<'r>)> {
    let caps = captures(records);
    let mut out = Vec::new();
    for a in augments(records) {
        for c in &caps {
            if same_node(a.1, c.1) {
                out.push((a, *c));
            }
        }
    }
    out
}

/// Every read holds the caller's baseline (`stable`: and some read is in a retried
/// attempt).
fn caller_baseline(records: &[Record], caller: &Map<String, Value>, stable: bool) -> Check {
    let caps = nonempty(captures(records), "read")?;
    if stable && !caps.iter().any(|c| c.1.attempt > 0) {
        return mismatch("no read in a retried attempt");
    }
    match caps.iter().find(|c| !contains(c.2, caller)) {
        Some(c) => mismatch(format!(
            "read {:?} in `{}` lacks the baseline",
            c.2, c.1.node
        )),
        None => Ok(()),
    }
}

/// A read after a write in the same node sees the write.
fn read_after_write(records: &[Record]) -> Check {
    let after: Vec<_> = pairs(records)
        .into_iter()
        .filter(|(a, c)| a.0 < c.0)
        .collect();
    match nonempty(after, "write-then-read in one node")?
        .iter()
        .find(|(a, c)| !contains(c.2, a.2))
    {
        Some((a, c)) => mismatch(format!("read {:?} misses the earlier write {:?}", c.2, a.2)),
        None => Ok(()),
    }
}

/// A read before a write in the same node does not see it.
fn read_before_write(records: &[Record], caller: &Map<String, Value>) -> Check {
    let before: Vec<_> = pairs(records)
        .into_iter()
        .filter(|(a, c)| c.0 < a.0)
        .collect();
    for (a, c) in nonempty(before, "read-then-write in one node")? {
        if let Some(k) = a.2.keys().find(|k| c.2.get(*k) != caller.get(*k)) {
            return mismatch(format!("the earlier read sees the later write of `{k}`"));
        }
    }
    Ok(())
}

/// A check of these fixtures: the invariant's value, the run, its directive records.
type Named = fn(&Value, &Run<'_>, &[Record]) -> Check;

/// The named invariants of these fixtures (each value must be `true`).
const TABLE: &Table<Named> = &[
    ("read_returns_caller_baseline", |v, run, records| {
        truthy(v).and_then(|()| caller_baseline(records, &run.caller_metadata(), false))
    }),
    (
        "caller_baseline_stable_across_attempts",
        |v, run, records| {
            truthy(v).and_then(|()| caller_baseline(records, &run.caller_metadata(), true))
        },
    ),
    ("read_returns_in_node_write", |v, _, records| {
        truthy(v).and_then(|()| read_after_write(records))
    }),
    ("capture_after_augment_sees_write", |v, _, records| {
        truthy(v).and_then(|()| read_after_write(records))
    }),
    ("capture_before_augment_misses_write", |v, run, records| {
        truthy(v).and_then(|()| read_before_write(records, &run.caller_metadata()))
    }),
    ("read_returns_immutable_mapping", |v, run, records| {
        truthy(v).and_then(|()| immutable_reads(records, run))
    }),
    (
        "per_instance_reads_isolated_from_siblings",
        |v, _, records| truthy(v).and_then(|()| instance_isolation(records)),
    ),
    (
        "outermost_read_sees_pre_fan_out_baseline_only",
        |v, run, records| {
            truthy(v).and_then(|()| outermost_after_join(records, &run.caller_metadata()))
        },
    ),
    (
        "no_global_aggregator_layered_across_join",
        |v, run, records| {
            truthy(v).and_then(|()| outermost_after_join(records, &run.caller_metadata()))
        },
    ),
    (
        "prior_failed_attempt_writes_discarded",
        |v, run, records| {
            truthy(v).and_then(|()| failed_attempts_discarded(records, &run.caller_metadata()))
        },
    ),
    (
        "successful_attempt_writes_visible_downstream",
        |v, _, records| truthy(v).and_then(|()| visible_downstream(records)),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The named invariants of these fixtures; `None` for other names.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let records = run.meta.records();
    match lookup(TABLE, name) {
        Some(verdict) => Some(verdict(v, run, &records)),
        None => super::query_checks::check(name, v, run, &records),
    }
}

/// Every top-level read equals the value its field holds in the final state: the
/// snapshot is what was returned, later writes did not change it.
fn immutable_reads(records: &[Record], run: &Run<'_>) -> Check {
    let finals = super::lock(&run.meta.finals).clone();
    let mut checked = 0;
    for r in records {
        if let Record::Capture { site, field, read } = r {
            if site.fan_out_index.is_some() {
                continue;
            }
            for state in finals.iter().flatten() {
                if let Some(Value::Object(got)) = state.get(field) {
                    if got != &**read {
                        return mismatch(format!(
                            "`{field}` holds {got:?}, the read returned {read:?}"
                        ));
                    }
                    checked += 1;
                }
            }
        }
    }
    if checked == 0 {
        return mismatch("no top-level read to compare");
    }
    Ok(())
}

fn instance_isolation(records: &[Record]) -> Check {
    let writes = augments(records);
    let caps: Vec<_> = captures(records)
        .into_iter()
        .filter(|c| c.1.fan_out_index.is_some())
        .collect();
    let indices: std::collections::BTreeSet<_> = caps.iter().map(|c| c.1.fan_out_index).collect();
    if indices.len() < 2 {
        return mismatch(format!(
            "reads in {} instances, expected several",
            indices.len()
        ));
    }
    for (_, site, read) in &caps {
        for (_, w, entries) in &writes {
            if w.invocation_id != site.invocation_id || w.fan_out_index.is_none() {
                continue;
            }
            let own = w.fan_out_index == site.fan_out_index;
            if own && !contains(read, entries) {
                return mismatch(format!(
                    "instance {:?} misses its own write {entries:?}",
                    site.fan_out_index
                ));
            }
            if !own && contains(read, entries) {
                return mismatch(format!(
                    "instance {:?} sees a sibling's write {entries:?}",
                    site.fan_out_index
                ));
            }
        }
    }
    Ok(())
}

/// Top-level reads after instance writes hold exactly the caller's metadata plus the
/// top-level writes made before them.
fn outermost_after_join(records: &[Record], caller: &Map<String, Value>) -> Check {
    let writes = augments(records);
    let first_instance_write = writes
        .iter()
        .find(|w| w.1.fan_out_index.is_some())
        .map(|w| w.0);
    let Some(start) = first_instance_write else {
        return mismatch("no instance wrote metadata");
    };
    let after: Vec<_> = captures(records)
        .into_iter()
        .filter(|c| c.0 > start && c.1.fan_out_index.is_none())
        .collect();
    for (i, site, read) in nonempty(after, "top-level read after the instances")? {
        let mut want = caller.clone();
        for (j, w, entries) in &writes {
            if *j < i && w.fan_out_index.is_none() && w.invocation_id == site.invocation_id {
                want.extend(entries.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        if **read != want {
            return mismatch(format!(
                "the read after the join is {read:?}, expected {want:?}"
            ));
        }
    }
    Ok(())
}

fn failed_attempts_discarded(records: &[Record], caller: &Map<String, Value>) -> Check {
    let writes = augments(records);
    let retried: Vec<_> = captures(records)
        .into_iter()
        .filter(|c| c.1.attempt > 0)
        .collect();
    for (_, site, read) in nonempty(retried, "read in a retried attempt")? {
        for (_, w, entries) in &writes {
            let earlier = w.invocation_id == site.invocation_id
                && w.node == site.node
                && w.attempt < site.attempt;
            if let Some(k) = entries
                .keys()
                .find(|k| earlier && read.get(*k) != caller.get(*k))
            {
                return mismatch(format!(
                    "attempt {} sees `{k}` written by failed attempt {}",
                    site.attempt, w.attempt
                ));
            }
        }
    }
    Ok(())
}

type LastWrite<'r> = (usize, u32, &'r Map<String, Value>);

/// The last attempt's writes reach every later read in another top-level node.
fn visible_downstream(records: &[Record]) -> Check {
    let writes = augments(records);
    // Per (invocation, node): the last attempt's (log index, attempt, entries).
    let mut last: BTreeMap<(String, String), LastWrite<'_>> = BTreeMap::new();
    for (i, w, entries) in &writes {
        let key = (w.invocation_id.clone(), w.node.clone());
        if last.get(&key).is_none_or(|(_, a, _)| w.attempt >= *a) {
            last.insert(key, (*i, w.attempt, entries));
        }
    }
    let mut checked = 0;
    for (i, site, read) in captures(records) {
        for ((inv, node), (j, _, entries)) in &last {
            if *inv == site.invocation_id && *node != site.node && *j < i {
                if !contains(read, entries) {
                    return mismatch(format!("`{}` does not see {entries:?}", site.node));
                }
                checked += 1;
            }
        }
    }
    if checked == 0 {
        return mismatch("no downstream read");
    }
    Ok(())
}

/// Node events of `invocation_id` delivered up to and including `node`'s first
/// `started` event (what was emitted before its body ran).
pub(crate) fn emitted_before(run: &Run<'_>, invocation_id: &str, node: &str) -> Option<usize> {
    let mut n = 0;
    for e in &run.events {
        if let ObserverEvent::Node(ev) = &**e {
            if &*ev.invocation_id != invocation_id {
                continue;
            }
            n += 1;
            if &*ev.node_name == node && ev.phase == Phase::Started {
                return Some(n);
            }
        }
    }
    None
}
