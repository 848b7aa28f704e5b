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

/// Checks fixture 039's invariant `name`, when it is one of them.
pub(super) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    let kind = match name {
        "outer_dispatch_span_carries_inner_augmentation"
        | "outer_fan_out_instance_carries_branch_augmentation" => Kind::AncestorChain,
        "serial_subgraph_wrapper_carries_inner_augmentation" => Kind::SerialWrapper,
        "outer_dispatch_spans_isolated"
        | "sibling_branch_isolated_from_probe_augmentation"
        | "sibling_outer_instances_isolated"
        | "sibling_fan_out_instances_isolated" => Kind::Siblings,
        "shared_parent_spans_not_augmented" => Kind::SharedParents { trace: true },
        "fan_out_node_shared_parent_not_augmented" => Kind::SharedParents { trace: false },
        "invocation_span_not_augmented" => Kind::Invocation,
        _ => return None,
    };
    if v != &Value::Bool(true) {
        return Some(Err(format!("expected `true`, got {v}").into()));
    }
    let mut keys = BTreeSet::new();
    augmented_keys(run.case, &mut keys);
    if keys.is_empty() {
        return Some(Err("the case has no augment directive".into()));
    }
    Some(kind.check(traces, &keys))
}

enum Kind {
    AncestorChain,
    SerialWrapper,
    Siblings,
    SharedParents { trace: bool },
    Invocation,
}

impl Kind {
    fn check(&self, traces: &[LangfuseTrace], keys: &BTreeSet<String>) -> Verdict {
        let observations = all(traces);
        match self {
            // A dispatch carries exactly the value the augmented generations below
            // it carry (its own subtree's augmenter), and nothing when none does:
            // the ancestor chain is updated, siblings are not.
            Kind::AncestorChain | Kind::Siblings => {
                let mut carried = 0;
                for d in observations.iter().filter(|o| is_dispatch(o)) {
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
            // A serial wrapper above augmented generations carries one of their values.
            Kind::SerialWrapper => {
                let wrappers: Vec<_> = observations
                    .iter()
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
            Kind::SharedParents { trace } => {
                let parents: Vec<_> = observations
                    .iter()
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
                if *trace {
                    Kind::Invocation.check(traces, keys)
                } else {
                    Ok(())
                }
            }
            Kind::Invocation => {
                for t in traces {
                    if let Some(key) = keys.iter().find(|k| t.metadata.contains_key(*k)) {
                        return Err(format!("trace `{}` carries `{key}`", t.id).into());
                    }
                }
                Ok(())
            }
        }
    }
}
