//! Spec: conformance-adapter §5.9 — the observer-event invariant predicates
//! (`observer_event_invariants`, `node_accumulator_snapshot_invariants`): the
//! canonical names plus the fixture-specific families, each a real check over the
//! recorded node events. An unrecognised name is an error.

use std::collections::BTreeSet;

use openarmature_graph::{NodeEvent, Phase};
use serde_json::{json, Value};

use crate::failure::Check;
use crate::table::{lookup, names, Table};

/// A set of JSON values, compared order-insensitively.
fn set_of(values: impl IntoIterator<Item = Value>) -> BTreeSet<String> {
    values.into_iter().map(|v| v.to_string()).collect()
}

fn expect_set(want: &Value, got: BTreeSet<String>) -> bool {
    match want {
        Value::Array(items) => set_of(items.iter().cloned()) == got,
        other => set_of([other.clone()]) == got,
    }
}

fn chain_fan(e: &NodeEvent) -> Value {
    json!(&*e.fan_out_index_chain)
}

fn chain_branch(e: &NodeEvent) -> Value {
    json!(&*e.branch_name_chain)
}

fn innermost(chain: &[Option<usize>]) -> Option<usize> {
    chain.iter().rev().find_map(|x| *x)
}

fn identity(e: &NodeEvent, by_chain: bool) -> String {
    let lineage = if by_chain {
        json!([chain_fan(e), chain_branch(e)])
    } else {
        json!([e.fan_out_index, e.branch_name])
    };
    json!([&*e.namespace, lineage, e.attempt_index, e.phase.as_str()]).to_string()
}

/// One predicate being evaluated: its name and value over the recorded events.
struct Pred<'a> {
    name: &'a str,
    want: &'a Value,
    /// The value as a flag (`true` unless it is `false`).
    flag: bool,
    events: &'a [NodeEvent],
    /// The events inside a subgraph, fan-out instance or branch (namespace deeper
    /// than the outermost graph's).
    inner: Vec<&'a NodeEvent>,
}

impl Pred<'_> {
    fn verdict(&self, ok: bool, detail: String) -> Check {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "observer invariant `{}` ({}) does not hold: {detail}",
                self.name, self.want
            )
            .into())
        }
    }

    /// The set of values seen is the expected one (a list, or one value).
    fn seen(&self, got: BTreeSet<String>) -> Check {
        self.verdict(expect_set(self.want, got.clone()), format!("{got:?}"))
    }

    /// Whether `selected` is non-empty and every event of it satisfies `ok` is the
    /// flag's value.
    fn all_are(&self, selected: &[&NodeEvent], ok: impl Fn(&NodeEvent) -> bool) -> Check {
        let all = !selected.is_empty() && selected.iter().all(|e| ok(e));
        self.verdict(all == self.flag, String::new())
    }
}

fn attempt_indices(events: &[&NodeEvent]) -> BTreeSet<String> {
    set_of(events.iter().map(|e| json!(e.attempt_index)))
}

fn fan_out_indices(events: &[&NodeEvent]) -> BTreeSet<String> {
    set_of(
        events
            .iter()
            .filter_map(|e| e.fan_out_index)
            .map(|i| json!(i)),
    )
}

fn branch_names(events: &[&NodeEvent]) -> BTreeSet<String> {
    set_of(
        events
            .iter()
            .filter_map(|e| e.branch_name.clone())
            .map(Value::String),
    )
}

fn inner_pair_count_per_instance(p: &Pred<'_>) -> Check {
    let mut per: std::collections::BTreeMap<Option<usize>, u64> = Default::default();
    for e in &p.inner {
        *per.entry(e.fan_out_index).or_default() += 1;
    }
    let ok = !per.is_empty() && per.values().all(|n| Some(*n) == p.want.as_u64());
    p.verdict(ok, format!("{per:?}"))
}

fn branch_started_order(p: &Pred<'_>) -> Check {
    let mut order: Vec<String> = Vec::new();
    for e in p.events.iter().filter(|e| e.phase == Phase::Started) {
        if let Some(b) = &e.branch_name {
            if !order.contains(b) {
                order.push(b.clone());
            }
        }
    }
    p.verdict(json!(order) == *p.want, format!("{order:?}"))
}

/// `None` when the value is not a node → branch mapping.
fn inner_branch_names_by_node(p: &Pred<'_>) -> Option<Check> {
    let map = p.want.as_object()?;
    let ok = map.iter().all(|(node, branch)| {
        let of_node: Vec<_> = p.events.iter().filter(|e| *e.node_name == **node).collect();
        !of_node.is_empty()
            && of_node
                .iter()
                .all(|e| e.branch_name.as_deref() == branch.as_str())
    });
    Some(p.verdict(ok, String::new()))
}

/// `None` when the value has no `nodes` list.
fn outermost_without_branch_name(p: &Pred<'_>) -> Option<Check> {
    let nodes = p.want.get("nodes")?.as_array()?;
    let ok = nodes.iter().filter_map(Value::as_str).all(|node| {
        let of_node: Vec<_> = p.events.iter().filter(|e| *e.node_name == *node).collect();
        !of_node.is_empty() && of_node.iter().all(|e| e.branch_name.is_none())
    });
    Some(p.verdict(ok, String::new()))
}

/// The whole-stream predicates; `None` from a check is a value it cannot read.
const STREAM: &Table<fn(&Pred<'_>) -> Option<Check>> = &[
    ("inner_event_count", |p| {
        Some(p.verdict(
            p.want.as_u64() == Some(p.inner.len() as u64),
            format!("{} inner events", p.inner.len()),
        ))
    }),
    ("inner_fan_out_indices_seen", |p| {
        Some(p.seen(fan_out_indices(&p.inner)))
    }),
    ("fan_out_indices_seen", |p| {
        Some(p.seen(fan_out_indices(&p.inner)))
    }),
    ("inner_branch_names_seen", |p| {
        Some(p.seen(branch_names(&p.inner)))
    }),
    ("inner_attempt_indices_seen", |p| {
        Some(p.seen(attempt_indices(&p.inner)))
    }),
    ("inner_events_attempt_indices_seen", |p| {
        Some(p.seen(attempt_indices(&p.inner)))
    }),
    ("inner_event_identities_unique", |p| {
        let ids: Vec<String> = p.inner.iter().map(|e| identity(e, false)).collect();
        let unique = ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
        Some(p.verdict(unique == p.flag, format!("{} ids", ids.len())))
    }),
    ("inner_events_have_fan_out_index", |p| {
        Some(p.all_are(&p.inner, |e| e.fan_out_index.is_some()))
    }),
    ("inner_event_pair_count_per_instance", |p| {
        Some(inner_pair_count_per_instance(p))
    }),
    ("branch_started_event_order", |p| {
        Some(branch_started_order(p))
    }),
    (
        "inner_events_carry_correct_branch_name",
        inner_branch_names_by_node,
    ),
    (
        "outermost_events_have_no_branch_name",
        outermost_without_branch_name,
    ),
];

/// `<scope>_inner_<rest>`: the checks by `rest`, over the events inside the scope
/// (`fan_out`: every fan-out instance; otherwise the parallel branch so named).
const SCOPED: &Table<fn(&Pred<'_>, &[&NodeEvent]) -> Check> = &[
    ("attempt_indices_seen", |p, selected| {
        p.seen(attempt_indices(selected))
    }),
    ("fan_out_indices_seen", |p, selected| {
        p.seen(fan_out_indices(selected))
    }),
    ("branch_name_seen", |p, selected| {
        p.seen(branch_names(selected))
    }),
    (
        "events_carry_both_branch_name_and_fan_out_index",
        |p, selected| {
            p.all_are(selected, |e| {
                e.branch_name.is_some() && e.fan_out_index.is_some()
            })
        },
    ),
    (
        "events_carry_branch_name_but_no_fan_out_index",
        |p, selected| {
            p.all_are(selected, |e| {
                e.branch_name.is_some() && e.fan_out_index.is_none()
            })
        },
    ),
];

/// `<node>_<suffix>`: the checks by suffix, over the node's events, tried in this
/// order (a node name may itself end in `_node`, so the `_node_…` forms come first
/// and take the `_node` off the node name).
const PER_NODE: &Table<fn(&Pred<'_>, &[&NodeEvent]) -> Check> = &[
    ("_node_events_count", events_count),
    ("_node_fan_out_index_absent", |p, of_node| {
        p.all_are(of_node, |e| e.fan_out_index.is_none())
    }),
    ("_node_fan_out_index_chain_empty", |p, of_node| {
        p.all_are(of_node, |e| e.fan_out_index_chain.is_empty())
    }),
    ("_node_scalar_branch_name_absent", scalar_branch_name_absent),
    (
        "_node_scalar_fan_out_index_equals_innermost_chain_element",
        scalar_is_innermost,
    ),
    ("_node_fan_out_index_chains_seen", fan_out_index_chains),
    ("_node_branch_name_chains_seen", branch_name_chains),
    ("_events_count", events_count),
    ("_fan_out_index_chains_seen", fan_out_index_chains),
    ("_branch_name_chains_seen", branch_name_chains),
    ("_scalar_branch_name_absent", scalar_branch_name_absent),
    (
        "_scalar_fan_out_index_equals_innermost_chain_element",
        scalar_is_innermost,
    ),
    ("_event_identities_unique_by_chain", |p, of_node| {
        let ids: Vec<String> = of_node.iter().map(|e| identity(e, true)).collect();
        let unique = !ids.is_empty() && ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
        p.verdict(unique == p.flag, String::new())
    }),
    (
        "_scalar_fan_out_index_not_unique_across_outer_instances",
        |p, of_node| {
            let scalar: Vec<String> = of_node.iter().map(|e| identity(e, false)).collect();
            let collide = scalar.iter().collect::<BTreeSet<_>>().len() < scalar.len();
            p.verdict(collide == p.flag, String::new())
        },
    ),
    ("_started_present", |p, of_node| {
        p.verdict(
            of_node.iter().any(|e| e.phase == Phase::Started) == p.flag,
            String::new(),
        )
    }),
    ("_completed_present", |p, of_node| {
        p.verdict(
            of_node.iter().any(|e| e.phase == Phase::Completed) == p.flag,
            String::new(),
        )
    }),
];

fn events_count(p: &Pred<'_>, of_node: &[&NodeEvent]) -> Check {
    p.verdict(
        p.want.as_u64() == Some(of_node.len() as u64),
        format!("{} events", of_node.len()),
    )
}

fn scalar_branch_name_absent(p: &Pred<'_>, of_node: &[&NodeEvent]) -> Check {
    p.all_are(of_node, |e| e.branch_name.is_none())
}

fn scalar_is_innermost(p: &Pred<'_>, of_node: &[&NodeEvent]) -> Check {
    p.all_are(of_node, |e| {
        e.fan_out_index == innermost(&e.fan_out_index_chain)
    })
}

fn fan_out_index_chains(p: &Pred<'_>, of_node: &[&NodeEvent]) -> Check {
    p.seen(set_of(of_node.iter().map(|e| chain_fan(e))))
}

fn branch_name_chains(p: &Pred<'_>, of_node: &[&NodeEvent]) -> Check {
    p.seen(set_of(of_node.iter().map(|e| chain_branch(e))))
}

/// The names of the whole-stream predicates (for [`crate::table::registry`]); the
/// `<scope>_inner_…` and `<node>_…` families are matched by their endings.
pub(crate) const STREAM_NAMES: fn() -> Vec<&'static str> = || names(STREAM);

/// Evaluates one predicate. `None` when the name is not recognised.
pub(crate) fn check(name: &str, want: &Value, events: &[NodeEvent]) -> Option<Check> {
    let p = Pred {
        name,
        want,
        flag: want.as_bool().unwrap_or(true),
        events,
        inner: events.iter().filter(|e| e.namespace.len() > 1).collect(),
    };
    if let Some(stream) = lookup(STREAM, name) {
        return stream(&p);
    }
    if let Some((scope, rest)) = name.split_once("_inner_") {
        let selected: Vec<&NodeEvent> = if scope == "fan_out" {
            events
                .iter()
                .filter(|e| e.fan_out_index.is_some())
                .collect()
        } else {
            events
                .iter()
                .filter(|e| e.branch_name.as_deref() == Some(scope))
                .collect()
        };
        return lookup(SCOPED, rest).map(|scoped| scoped(&p, &selected));
    }
    let (node, per_node) = PER_NODE.iter().find_map(|(suffix, f)| {
        let node = name.strip_suffix(suffix)?;
        Some((node, *f))
    })?;
    let of_node: Vec<&NodeEvent> = events.iter().filter(|e| *e.node_name == *node).collect();
    Some(per_node(&p, &of_node))
}
