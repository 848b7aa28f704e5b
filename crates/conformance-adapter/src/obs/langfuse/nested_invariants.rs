//! Spec: observability §3.4 *Mid-invocation augmentation* (the augmenter's
//! call-stack ancestor chain, the sibling and shared-parent boundaries) and
//! conformance-adapter §5.9 — the named invariants of fixture 039, checked against
//! the recorded Langfuse trace.
//!
//! The augmented keys are the keys of every `augment_metadata*` directive of the
//! case. A *dispatch* observation is a fan-out instance or a parallel branch; a
//! *serial wrapper* one carrying `subgraph_name` that is neither; a *shared parent*
//! a fan-out or parallel-branches node (an observation whose children are
//! dispatches) or the trace itself (every 039 augmenter sits below a dispatch).

use std::collections::BTreeSet;

use openarmature_observability::langfuse::{LangfuseTrace, Observation, ObservationType};
use serde_json::Value;

use crate::failure::Check;
use crate::obs::Run;
use crate::table::{flag, names, Table};
use crate::yaml::Y;

type Verdict = Check;

const DIRECTIVES: [&str; 3] = [
    "augment_metadata",
    "augment_metadata_from_field",
    "augment_metadata_from_outer_item",
];

/// The keys every augment directive of the case sets, anywhere in it.
fn augmented_keys(y: &Y<'_>, out: &mut BTreeSet<String>) {
    let Ok(entries) = y.entries() else {
        if let Ok(items) = y.seq() {
            for item in items {
                augmented_keys(&item, out);
            }
        }
        return;
    };
    for (key, value) in entries {
        if DIRECTIVES.contains(&key.as_str()) {
            if let Ok(pairs) = value.entries() {
                out.extend(pairs.into_iter().map(|(k, _)| k));
            }
        } else {
            augmented_keys(&value, out);
        }
    }
}

fn is_dispatch(o: &Observation) -> bool {
    o.metadata.contains_key("fan_out_parent_node_name")
        || o.metadata
            .contains_key("parallel_branches_parent_node_name")
}

fn is_serial_wrapper(o: &Observation) -> bool {
    o.metadata.contains_key("subgraph_name") && !is_dispatch(o)
}

fn is_shared_parent(o: &Observation) -> bool {
    !o.children.is_empty() && o.children.iter().all(is_dispatch)
}

/// Every generation below `o` (itself excluded).
fn generations(o: &Observation) -> Vec<&Observation> {
    let mut out = Vec::new();
    let mut stack: Vec<&Observation> = o.children.iter().collect();
    while let Some(x) = stack.pop() {
        if x.kind == ObservationType::Generation {
            out.push(x);
        }
        stack.extend(x.children.iter());
    }
    out
}

/// The distinct values of `key` the generations below `o` carry.
fn leaf_values<'o>(o: &'o Observation, key: &str) -> Vec<&'o Value> {
    let mut out: Vec<&Value> = Vec::new();
    for v in generations(o)
        .into_iter()
        .filter_map(|g| g.metadata.get(key))
    {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn all(traces: &[LangfuseTrace]) -> Vec<&Observation> {
    traces
        .iter()
        .flat_map(LangfuseTrace::all_observations)
        .collect()
}

/// A dispatch carries exactly the value the augmented generations below it carry
/// (its own subtree's augmenter), and nothing when none does: the ancestor chain is
/// updated, siblings are not.
fn dispatches_agree(traces: &[LangfuseTrace], keys: &BTreeSet<String>) -> Verdict {
    let mut carried = 0;
    for d in all(traces).into_iter().filter(|o| is_dispatch(o)) {
        for key in keys {
            let below = leaf_values(d, key);
            let own = d.metadata.get(key);
            let agrees = match own {
                None => below.is_empty(),
                Some(v) => below == [v],
            };
            if !agrees {
                return Err(format!(
                    "dispatch `{}` has {key}={own:?}, its generations {below:?}",
                    d.name
                )
                .into());
            }
            carried += usize::from(own.is_some());
        }
    }
    if carried == 0 {
        return Err("no dispatch observation carries an augmentation".into());
    }
    Ok(())
}

/// A serial wrapper above augmented generations carries one of their values.
fn serial_wrapper(traces: &[LangfuseTrace], keys: &BTreeSet<String>) -> Verdict {
    let wrappers: Vec<_> = all(traces)
        .into_iter()
        .filter(|o| is_serial_wrapper(o))
        .collect();
    if wrappers.is_empty() {
        return Err("no serial subgraph wrapper observation".into());
    }
    for w in wrappers {
        for key in keys {
            let below = leaf_values(w, key);
            let own = w.metadata.get(key);
            if !own.is_some_and(|v| below.contains(&v)) {
                return Err(format!(
                    "wrapper `{}` has {key}={own:?}, its leaves {below:?}",
                    w.name
                )
                .into());
            }
        }
    }
    Ok(())
}

/// No fan-out / parallel-branches node observation carries an augmented key.
fn shared_parents(traces: &[LangfuseTrace], keys: &BTreeSet<String>) -> Verdict {
    let parents: Vec<_> = all(traces)
        .into_iter()
        .filter(|o| is_shared_parent(o))
        .collect();
    if parents.is_empty() {
        return Err("no fan-out / parallel-branches node observation".into());
    }
    for p in parents {
        if let Some(key) = keys.iter().find(|k| p.metadata.contains_key(*k)) {
            return Err(format!("shared parent `{}` carries `{key}`", p.name).into());
        }
    }
    Ok(())
}

/// No trace (the invocation) carries an augmented key.
fn invocation(traces: &[LangfuseTrace], keys: &BTreeSet<String>) -> Verdict {
    for t in traces {
        if let Some(key) = keys.iter().find(|k| t.metadata.contains_key(*k)) {
            return Err(format!("trace `{}` carries `{key}`", t.id).into());
        }
    }
    Ok(())
}

/// A check over the traces and the case's augmented keys.
type Nested = fn(&[LangfuseTrace], &BTreeSet<String>) -> Verdict;

/// Fixture 039's invariants (each value must be `true`), checked against the traces
/// and the case's augmented keys.
const TABLE: &Table<Nested> = &[
    (
        "outer_dispatch_span_carries_inner_augmentation",
        dispatches_agree,
    ),
    (
        "outer_fan_out_instance_carries_branch_augmentation",
        dispatches_agree,
    ),
    (
        "serial_subgraph_wrapper_carries_inner_augmentation",
        serial_wrapper,
    ),
    ("outer_dispatch_spans_isolated", dispatches_agree),
    (
        "sibling_branch_isolated_from_probe_augmentation",
        dispatches_agree,
    ),
    ("sibling_outer_instances_isolated", dispatches_agree),
    ("sibling_fan_out_instances_isolated", dispatches_agree),
    ("shared_parent_spans_not_augmented", |traces, keys| {
        shared_parents(traces, keys)?;
        invocation(traces, keys)
    }),
    ("fan_out_node_shared_parent_not_augmented", shared_parents),
    ("invocation_span_not_augmented", invocation),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks fixture 039's invariant `name`, when it is one of them.
pub(super) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    let verdict = match flag(TABLE, name, v)? {
        Ok(verdict) => verdict,
        Err(failure) => return Some(Err(failure)),
    };
    let mut keys = BTreeSet::new();
    augmented_keys(run.case, &mut keys);
    if keys.is_empty() {
        return Some(Err("the case has no augment directive".into()));
    }
    Some(verdict(traces, &keys))
}
