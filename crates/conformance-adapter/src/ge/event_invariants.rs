//! Spec: conformance-adapter §5.9 — the observer-event invariant predicates
//! (`observer_event_invariants`, `node_accumulator_snapshot_invariants`): the
//! canonical names plus the fixture-specific families, each a real check over the
//! recorded node events. An unrecognised name is an error.

use std::collections::BTreeSet;

use openarmature_graph::{NodeEvent, Phase};
use serde_json::{json, Value};

use crate::failure::Check;

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

/// Evaluates one predicate. `None` when the name is not recognised.
pub(crate) fn check(name: &str, want: &Value, events: &[NodeEvent]) -> Option<Check> {
    let flag = want.as_bool().unwrap_or(true);
    let inner: Vec<&NodeEvent> = events.iter().filter(|e| e.namespace.len() > 1).collect();
    let verdict = |ok: bool, detail: String| -> Check {
        if ok {
            Ok(())
        } else {
            Err(format!("observer invariant `{name}` ({want}) does not hold: {detail}").into())
        }
    };

    // Whole-stream families.
    match name {
        "inner_event_count" => {
            return Some(verdict(
                want.as_u64() == Some(inner.len() as u64),
                format!("{} inner events", inner.len()),
            ))
        }
        "inner_fan_out_indices_seen" | "fan_out_indices_seen" => {
            let got = set_of(
                inner
                    .iter()
                    .filter_map(|e| e.fan_out_index)
                    .map(|i| json!(i)),
            );
            return Some(verdict(expect_set(want, got.clone()), format!("{got:?}")));
        }
        "inner_branch_names_seen" => {
            let got = set_of(
                inner
                    .iter()
                    .filter_map(|e| e.branch_name.clone())
                    .map(Value::String),
            );
            return Some(verdict(expect_set(want, got.clone()), format!("{got:?}")));
        }
        "inner_attempt_indices_seen" | "inner_events_attempt_indices_seen" => {
            let got = set_of(inner.iter().map(|e| json!(e.attempt_index)));
            return Some(verdict(expect_set(want, got.clone()), format!("{got:?}")));
        }
        "inner_event_identities_unique" => {
            let ids: Vec<String> = inner.iter().map(|e| identity(e, false)).collect();
            let unique = ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
            return Some(verdict(unique == flag, format!("{} ids", ids.len())));
        }
        "inner_events_have_fan_out_index" => {
            let ok = !inner.is_empty() && inner.iter().all(|e| e.fan_out_index.is_some());
            return Some(verdict(ok == flag, String::new()));
        }
        "inner_event_pair_count_per_instance" => {
            let mut per: std::collections::BTreeMap<Option<usize>, u64> = Default::default();
            for e in &inner {
                *per.entry(e.fan_out_index).or_default() += 1;
            }
            let ok = !per.is_empty() && per.values().all(|n| Some(*n) == want.as_u64());
            return Some(verdict(ok, format!("{per:?}")));
        }
        "branch_started_event_order" => {
            let mut order: Vec<String> = Vec::new();
            for e in events.iter().filter(|e| e.phase == Phase::Started) {
                if let Some(b) = &e.branch_name {
                    if !order.contains(b) {
                        order.push(b.clone());
                    }
                }
            }
            return Some(verdict(json!(order) == *want, format!("{order:?}")));
        }
        "inner_events_carry_correct_branch_name" => {
            let map = want.as_object()?;
            let ok = map.iter().all(|(node, branch)| {
                let of_node: Vec<_> = events.iter().filter(|e| *e.node_name == **node).collect();
                !of_node.is_empty()
                    && of_node
                        .iter()
                        .all(|e| e.branch_name.as_deref() == branch.as_str())
            });
            return Some(verdict(ok, String::new()));
        }
        "outermost_events_have_no_branch_name" => {
            let nodes = want.get("nodes")?.as_array()?;
            let ok = nodes.iter().filter_map(Value::as_str).all(|node| {
                let of_node: Vec<_> = events.iter().filter(|e| *e.node_name == *node).collect();
                !of_node.is_empty() && of_node.iter().all(|e| e.branch_name.is_none())
            });
            return Some(verdict(ok, String::new()));
        }
        _ => {}
    }

    // `fan_out_inner_*`: events inside a fan-out instance; `<branch>_inner_*`:
    // events inside that parallel branch.
    if let Some((prefix, rest)) = name.split_once("_inner_") {
        let selected: Vec<&NodeEvent> = if prefix == "fan_out" {
            events
                .iter()
                .filter(|e| e.fan_out_index.is_some())
                .collect()
        } else {
            events
                .iter()
                .filter(|e| e.branch_name.as_deref() == Some(prefix))
                .collect()
        };
        let result = match rest {
            "attempt_indices_seen" => {
                let got = set_of(selected.iter().map(|e| json!(e.attempt_index)));
                verdict(expect_set(want, got.clone()), format!("{got:?}"))
            }
            "fan_out_indices_seen" => {
                let got = set_of(
                    selected
                        .iter()
                        .filter_map(|e| e.fan_out_index)
                        .map(|i| json!(i)),
                );
                verdict(expect_set(want, got.clone()), format!("{got:?}"))
            }
            "branch_name_seen" => {
                let got = set_of(
                    selected
                        .iter()
                        .filter_map(|e| e.branch_name.clone())
                        .map(Value::String),
                );
                verdict(expect_set(want, got.clone()), format!("{got:?}"))
            }
            "events_carry_both_branch_name_and_fan_out_index" => {
                let ok = !selected.is_empty()
                    && selected
                        .iter()
                        .all(|e| e.branch_name.is_some() && e.fan_out_index.is_some());
                verdict(ok == flag, String::new())
            }
            "events_carry_branch_name_but_no_fan_out_index" => {
                let ok = !selected.is_empty()
                    && selected
                        .iter()
                        .all(|e| e.branch_name.is_some() && e.fan_out_index.is_none());
                verdict(ok == flag, String::new())
            }
            _ => return None,
        };
        return Some(result);
    }

    // `<node>_…` families (a node name may itself end in `_node`).
    const SUFFIXES: &[&str] = &[
        "_node_events_count",
        "_node_fan_out_index_absent",
        "_node_fan_out_index_chain_empty",
        "_node_scalar_branch_name_absent",
        "_node_scalar_fan_out_index_equals_innermost_chain_element",
        "_node_fan_out_index_chains_seen",
        "_node_branch_name_chains_seen",
        "_events_count",
        "_fan_out_index_chains_seen",
        "_branch_name_chains_seen",
        "_scalar_branch_name_absent",
        "_scalar_fan_out_index_equals_innermost_chain_element",
        "_event_identities_unique_by_chain",
        "_scalar_fan_out_index_not_unique_across_outer_instances",
        "_started_present",
        "_completed_present",
    ];
    let (node, suffix) = SUFFIXES.iter().find_map(|s| {
        name.strip_suffix(s)
            .map(|node| (node, s.trim_start_matches("_node")))
    })?;
    let of_node: Vec<&NodeEvent> = events.iter().filter(|e| *e.node_name == *node).collect();
    let result = match suffix {
        "_events_count" => verdict(
            want.as_u64() == Some(of_node.len() as u64),
            format!("{} events", of_node.len()),
        ),
        "_fan_out_index_absent" => verdict(
            (!of_node.is_empty() && of_node.iter().all(|e| e.fan_out_index.is_none())) == flag,
            String::new(),
        ),
        "_fan_out_index_chain_empty" => verdict(
            (!of_node.is_empty() && of_node.iter().all(|e| e.fan_out_index_chain.is_empty()))
                == flag,
            String::new(),
        ),
        "_scalar_branch_name_absent" => verdict(
            (!of_node.is_empty() && of_node.iter().all(|e| e.branch_name.is_none())) == flag,
            String::new(),
        ),
        "_scalar_fan_out_index_equals_innermost_chain_element" => {
            let ok = !of_node.is_empty()
                && of_node
                    .iter()
                    .all(|e| e.fan_out_index == innermost(&e.fan_out_index_chain));
            verdict(ok == flag, String::new())
        }
        "_fan_out_index_chains_seen" => {
            let got = set_of(of_node.iter().map(|e| chain_fan(e)));
            verdict(expect_set(want, got.clone()), format!("{got:?}"))
        }
        "_branch_name_chains_seen" => {
            let got = set_of(of_node.iter().map(|e| chain_branch(e)));
            verdict(expect_set(want, got.clone()), format!("{got:?}"))
        }
        "_event_identities_unique_by_chain" => {
            let ids: Vec<String> = of_node.iter().map(|e| identity(e, true)).collect();
            let unique = !ids.is_empty() && ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
            verdict(unique == flag, String::new())
        }
        "_scalar_fan_out_index_not_unique_across_outer_instances" => {
            let scalar: Vec<String> = of_node.iter().map(|e| identity(e, false)).collect();
            let collide = scalar.iter().collect::<BTreeSet<_>>().len() < scalar.len();
            verdict(collide == flag, String::new())
        }
        "_started_present" => verdict(
            of_node.iter().any(|e| e.phase == Phase::Started) == flag,
            String::new(),
        ),
        "_completed_present" => verdict(
            of_node.iter().any(|e| e.phase == Phase::Completed) == flag,
            String::new(),
        ),
        _ => return None,
    };
    Some(result)
}
