//! Spec: pipeline-utilities §10.7 / §10.11 — the per-instance fan-out resume
//! assertions of fixtures 048-056, 067, 069 and 076 (register R13):
//!
//! - `saved_record_assertions.fan_out_progress: {node: {instance_count, instances}}`
//!   matches the record's entry for that fan-out node (the top-level one: empty
//!   lineage); an instance expectation may carry `state`, `state_one_of`, `result`,
//!   `result_is_error`, `result_present` (a non-null `result`) and
//!   `completed_inner_positions` (each expected position's keys are matched).
//! - Instances executed during a resume are the top-level fan-out instance indices of
//!   its `started` events; skipped ones are the other indices below the loaded record's
//!   instance count.
//! - `final_state.<field>_list_length: n` (a key the state lacks) asserts a list
//!   field's length; the remaining keys of that `final_state` are matched as a subset.

use std::collections::BTreeSet;

use openarmature_graph::checkpoint::{CheckpointRecord, FanOutProgress, InstanceState};
use serde_json::{json, Map, Value};

use super::assert::{entries, eq, j, started, unknown, Ctx};
use super::Run;
use crate::failure::{Check, Failure};
use crate::yaml::Y;

/// `saved_record_assertions.fan_out_progress`.
pub(crate) fn progress(y: &Y<'_>, record: &CheckpointRecord) -> Check {
    for (node, want) in entries(y)? {
        let entry = record
            .fan_out_progress
            .iter()
            .find(|e| e.fan_out_node_name == node && e.enclosing_fan_out_lineage.is_empty())
            .ok_or_else(|| format!("fan_out_progress: no entry for `{node}`"))?;
        for (key, v) in entries(&want)? {
            let path = format!("fan_out_progress.{node}.{key}");
            match key.as_str() {
                "instance_count" => eq(&j(&v)?, &json!(entry.instance_count), &path)?,
                "instances" => instances(&v, entry, &path)?,
                _ => return Err(unknown(&v, &key)),
            }
        }
    }
    Ok(())
}

fn instances(y: &Y<'_>, entry: &FanOutProgress, path: &str) -> Check {
    let list = y.seq()?;
    if list.len() != entry.instances.len() {
        return Err(format!(
            "{path}: expected {} instances, got {}",
            list.len(),
            entry.instances.len()
        )
        .into());
    }
    for (i, (want, got)) in list.iter().zip(&entry.instances).enumerate() {
        let actual = serde_json::to_value(got).map_err(Failure::mismatch)?;
        for (key, v) in entries(want)? {
            let path = format!("{path}[{i}].{key}");
            let w = j(&v)?;
            match key.as_str() {
                "state" | "result" | "result_is_error" => eq(&w, &actual[key.as_str()], &path)?,
                "state_one_of" => {
                    let ok = w.as_array().is_some_and(|a| a.contains(&actual["state"]));
                    if !ok {
                        return Err(format!("{path}: {} is not one of {w}", actual["state"]).into());
                    }
                }
                "result_present" => eq(&w, &json!(!got.result.is_null()), &path)?,
                "completed_inner_positions" => {
                    let wants = w.as_array().cloned().unwrap_or_default();
                    let gots = &actual["completed_inner_positions"];
                    let gots = gots.as_array().cloned().unwrap_or_default();
                    if wants.len() != gots.len() {
                        return Err(format!("{path}: expected {w}, got {gots:?}").into());
                    }
                    for (wp, gp) in wants.iter().zip(&gots) {
                        for (k, wv) in wp.as_object().into_iter().flatten() {
                            eq(wv, &gp[k.as_str()], &format!("{path}.{k}"))?;
                        }
                    }
                }
                _ => return Err(unknown(&v, &key)),
            }
        }
    }
    Ok(())
}

/// The top-level fan-out instance indices `run` started nodes in.
pub(crate) fn executed(ctx: &Ctx<'_>, run: &Run) -> Vec<usize> {
    let set: BTreeSet<usize> = started(ctx, run)
        .iter()
        .filter_map(|e| e.fan_out_index_chain.first().copied().flatten())
        .collect();
    set.into_iter().collect()
}

/// The loaded record's top-level instances `run` did not execute.
pub(crate) fn skipped(ctx: &Ctx<'_>, run: &Run) -> Vec<usize> {
    let count = ctx
        .loaded
        .and_then(|r| {
            r.fan_out_progress
                .iter()
                .find(|e| e.enclosing_fan_out_lineage.is_empty() && e.namespace.is_empty())
        })
        .map_or(0, |e| e.instance_count);
    let ran = executed(ctx, run);
    (0..count).filter(|i| !ran.contains(i)).collect()
}

/// `final_state` with `<field>_list_length` keys.
pub(crate) fn final_state(want: &Value, state: &Value, path: &str) -> Check {
    let (Value::Object(w), Value::Object(s)) = (want, state) else {
        return eq(want, state, path);
    };
    let lengths: Vec<(&String, &str)> = w
        .keys()
        .filter(|k| !s.contains_key(*k))
        .filter_map(|k| Some((k, k.strip_suffix("_list_length")?)))
        .collect();
    if lengths.is_empty() {
        return eq(want, state, path);
    }
    let mut rest = Map::new();
    for (k, v) in w {
        match lengths.iter().find(|(key, _)| *key == k) {
            Some((_, field)) => {
                let len = s.get(*field).and_then(Value::as_array).map(Vec::len);
                eq(v, &json!(len), &format!("{path}.{k}"))?;
            }
            None => {
                rest.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in &rest {
        eq(v, s.get(k).unwrap_or(&Value::Null), &format!("{path}.{k}"))?;
    }
    Ok(())
}

/// Whether every outer instance of a nested fan-out re-ran exactly the inner instances
/// its own lineage-matched entry in the loaded record did not mark completed (all of
/// them when no entry matches).
fn lineage_exact(ctx: &Ctx<'_>, run: &Run) -> Check<bool> {
    let loaded = ctx.loaded.ok_or("no loaded record")?;
    let Some(outer) = loaded
        .fan_out_progress
        .iter()
        .find(|e| e.enclosing_fan_out_lineage.is_empty() && e.namespace.is_empty())
    else {
        return Err("the loaded record has no top-level fan-out entry".into());
    };
    let events = started(ctx, run);
    for o in 0..outer.instance_count {
        let ran: BTreeSet<usize> = events
            .iter()
            .filter(|e| e.fan_out_index_chain.first().copied().flatten() == Some(o))
            .filter_map(|e| e.fan_out_index_chain.get(1).copied().flatten())
            .collect();
        let own = loaded.fan_out_progress.iter().find(|e| {
            matches!(e.enclosing_fan_out_lineage.as_slice(), [l] if l.fan_out_index == o
                && l.fan_out_node_name == outer.fan_out_node_name)
        });
        let count = own
            .map(|e| e.instance_count)
            .or_else(|| {
                loaded
                    .fan_out_progress
                    .iter()
                    .find(|e| !e.namespace.is_empty())
                    .map(|e| e.instance_count)
            })
            .unwrap_or(0);
        let expect: BTreeSet<usize> = (0..count)
            .filter(|i| {
                own.and_then(|e| e.instances.get(*i))
                    .is_none_or(|p| p.state != InstanceState::Completed)
            })
            .collect();
        if ran != expect {
            return Ok(false);
        }
    }
    Ok(true)
}

fn list(state: &Value, field: &str) -> Vec<Value> {
    state
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A fan-out invariant's observed value (compared with the fixture's), if `name` is one.
pub(crate) async fn invariant(name: &str, ctx: &Ctx<'_>, run: &Run) -> Option<Check<Value>> {
    let state = run.result.as_ref().ok().cloned().unwrap_or(Value::Null);
    let instance_1 = || {
        started(ctx, run)
            .into_iter()
            .filter(|e| e.fan_out_index_chain.first().copied().flatten() == Some(1))
            .collect::<Vec<_>>()
    };
    let distinct = |values: Vec<Value>| {
        let n = values.len();
        values
            .iter()
            .map(Value::to_string)
            .collect::<BTreeSet<_>>()
            .len()
            == n
    };
    Some(Ok(json!(match name {
        "no_duplicate_results" => distinct(list(&state, "results")),
        "results_list_length" => return Some(Ok(json!(list(&state, "results").len()))),
        "no_duplicate_error_entries" => distinct(
            list(&state, "errors")
                .into_iter()
                .map(|e| e["fan_out_index"].clone())
                .collect(),
        ),
        "instance_1_executes_step_a_on_resume" | "instance_1_executes_step_b_on_resume" => {
            let step = if name.contains("step_a") {
                "step_a"
            } else {
                "step_b"
            };
            instance_1().iter().any(|e| *e.node_name == *step)
        }
        "instance_1_attempt_index_on_resume" => {
            let first = instance_1().first().map(|e| e.attempt_index);
            return Some(Ok(json!(first)));
        }
        "instance_1_resume_attempt_count" => {
            return Some(Ok(json!(instance_1().len())));
        }
        "degrade_slot_rolled_forward_unchanged" => {
            let recorded = ctx.loaded.and_then(|r| {
                r.fan_out_progress
                    .first()
                    .and_then(|e| e.instances.first())
                    .map(|i| i.result.clone())
            });
            executed(ctx, run).is_empty()
                && recorded.is_some_and(|r| list(&state, "results") == [r])
        }
        // The run's last save (the fan-out node's completion, a regular save) reached
        // the store unbuffered.
        "batching_scoped_to_fan_out_internal_saves_only" => {
            let last = ctx.store.saves_for(&run.id).last().cloned();
            last.is_some() && ctx.store.latest(&run.id).await == last
        }
        "inner_fan_out_progress_matched_per_enclosing_lineage"
        | "each_outer_instance_skips_only_its_own_completed_inner_instances"
        | "no_inner_instance_skipped_across_enclosing_instances"
        | "legacy_unlineaged_entry_not_applied_to_nested_fan_out"
        | "all_inner_instances_re_run_in_every_outer_instance" => {
            return Some(lineage_exact(ctx, run).map(|b| json!(b)));
        }
        _ => return None,
    })))
}
