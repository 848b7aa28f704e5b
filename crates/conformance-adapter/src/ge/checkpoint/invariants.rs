//! Spec: conformance-adapter §5.9 — the named invariants of the checkpoint fixtures
//! (pipeline-utilities §10.3 saves, §10.4 resume identity, §10.6 attempt reset,
//! §10.12 migrations). A boolean invariant asserts its predicate equals the flag.

use std::collections::BTreeSet;

use openarmature_graph::Phase;
use serde_json::{json, Value};

use super::assert::{entries, eq, executed, j, node_events, started, unknown, Ctx};
use super::Run;
use crate::failure::Check;
use crate::ge::harness::lock;
use crate::yaml::Y;

fn is_uuid_v4(s: &str) -> bool {
    eq(&json!("<uuid>"), &json!(s), "").is_ok()
}

/// The one correlation id every node event of `run` carries.
fn correlation(ctx: &Ctx<'_>, run: &Run) -> Check<String> {
    let ids: BTreeSet<Option<String>> = node_events(ctx, run)
        .iter()
        .filter_map(|e| e.as_node())
        .map(|e| e.correlation_id.as_deref().map(str::to_owned))
        .collect();
    match ids.into_iter().collect::<Vec<_>>().as_slice() {
        [Some(id)] => Ok(id.clone()),
        other => Err(format!(
            "run `{}`: its events carry correlation ids {other:?}, not exactly one",
            run.id
        )
        .into()),
    }
}

fn runs<'a>(ctx: &Ctx<'a>, name: &str) -> Check<(&'a Run, &'a Run)> {
    match (ctx.first, ctx.resumed) {
        (Some(f), Some(r)) => Ok((f, r)),
        _ => Err(format!("invariant {name}: needs a first and a resumed run").into()),
    }
}

/// Per-block invariants; `run` is the run the enclosing block is about.
pub(crate) async fn invariants(y: &Y<'_>, ctx: &Ctx<'_>, run: &Run) -> Check {
    for (name, v) in entries(y)? {
        let want = j(&v)?;
        let holds = match name.as_str() {
            "save_count" => {
                let n = ctx.store.saves_for(&run.id).len();
                eq(&want, &json!(n), &name)?;
                continue;
            }
            "save_order_matches_completed_event_order" => {
                // The position each save appended vs. the saving levels' successful
                // `completed` events (not inside fan-out instances / branches).
                let mut appended = Vec::new();
                let mut seen = 0;
                for save in ctx.store.saves_for(&run.id) {
                    if save.completed_positions.len() > seen {
                        seen = save.completed_positions.len();
                        let p = &save.completed_positions[seen - 1];
                        appended.push((p.namespace.clone(), p.node_name.clone(), p.step));
                    }
                }
                let events: Vec<_> = node_events(ctx, run)
                    .iter()
                    .filter_map(|e| e.as_node())
                    .filter(|e| e.phase == Phase::Completed && e.error.is_none())
                    .filter(|e| e.fan_out_index_chain.iter().all(Option::is_none))
                    .filter(|e| e.branch_name_chain.iter().all(Option::is_none))
                    .map(|e| {
                        let prefix = e.namespace[..e.namespace.len().saturating_sub(1)].to_vec();
                        (prefix, e.node_name.to_string(), e.step)
                    })
                    .collect();
                !appended.is_empty() && appended == events
            }
            "invocation_id_is_uuidv4" => is_uuid_v4(&run.id),
            "last_saved_at_monotonic_across_saves" => {
                let saves = ctx.store.saves_for(&run.id);
                saves.len() > 1
                    && saves
                        .windows(2)
                        .all(|w| w[0].last_saved_at < w[1].last_saved_at)
            }
            "completed_positions_step_monotonic" => {
                let record = ctx.store.latest(&run.id).await.ok_or("no record")?;
                let steps: Vec<u64> = record.completed_positions.iter().map(|p| p.step).collect();
                !steps.is_empty() && steps.windows(2).all(|w| w[0] < w[1])
            }
            "resumed_invocation_id_differs_from_original"
            | "first_and_resumed_invocation_ids_differ" => {
                let (f, r) = runs(ctx, &name)?;
                !f.id.is_empty() && !r.id.is_empty() && f.id != r.id
            }
            "resumed_correlation_id_matches_original"
            | "resumed_run_correlation_id_matches_first"
            | "no_new_correlation_id_generated_on_resume"
            | "correlation_id_uniform_across_both_runs" => {
                let (f, r) = runs(ctx, &name)?;
                correlation(ctx, f)? == correlation(ctx, r)?
            }
            "first_run_correlation_id" | "resumed_run_correlation_id" => {
                let (f, r) = runs(ctx, &name)?;
                let which = if name.starts_with("first") { f } else { r };
                eq(&want, &json!(correlation(ctx, which)?), &name)?;
                continue;
            }
            "first_run_correlation_id_is_uuidv4" => {
                let (f, _) = runs(ctx, &name)?;
                is_uuid_v4(&correlation(ctx, f)?)
            }
            "saved_record_correlation_id" => {
                let (f, _) = runs(ctx, &name)?;
                let saves = ctx.store.saves_for(&f.id);
                if saves.is_empty() {
                    return Err(format!("invariant {name}: the first run saved nothing").into());
                }
                for s in saves {
                    eq(&want, &json!(s.correlation_id), &name)?;
                }
                continue;
            }
            "first_run_invocation_id" => {
                let (f, _) = runs(ctx, &name)?;
                eq(&want, &json!(f.id), &name)?;
                continue;
            }
            "resumed_run_invocation_id_is_fresh_uuidv4" => {
                let (f, r) = runs(ctx, &name)?;
                is_uuid_v4(&r.id) && r.id != f.id
            }
            "resumed_run_invocation_id_not_caller_supplied" => {
                let (_, r) = runs(ctx, &name)?;
                let caller = ctx.resume_caller.ok_or(format!(
                    "invariant {name}: the resume supplied no caller id"
                ))?;
                r.id != caller
            }
            "subgraph_re_entry_uses_parent_states" => {
                // The first re-entered inner node sees the record's parent states.
                let loaded = ctx.loaded.ok_or("no loaded record")?;
                let inner = started(ctx, run)
                    .into_iter()
                    .find(|e| e.namespace.len() > 1);
                inner.is_some_and(|e| {
                    let parents: Vec<Value> = e.parent_states.iter().map(|s| s.to_json()).collect();
                    !parents.is_empty() && parents == loaded.parent_states
                })
            }
            "inner_first_node_not_re_run" => {
                // No subgraph-internal position of the loaded record ran again.
                let loaded = ctx.loaded.ok_or("no loaded record")?;
                let inner: Vec<_> = loaded
                    .completed_positions
                    .iter()
                    .filter(|p| !p.namespace.is_empty())
                    .collect();
                let again = started(ctx, run).into_iter().any(|e| {
                    inner.iter().any(|p| {
                        *e.node_name == *p.node_name
                            && e.namespace[..e.namespace.len().saturating_sub(1)] == p.namespace[..]
                    })
                });
                !inner.is_empty() && !again
            }
            "attempt_index_reset_to_zero_on_resume" => {
                // Every node's first started attempt in the resumed run is attempt 0.
                let events = started(ctx, run);
                let mut firsts = Vec::new();
                for e in &events {
                    if !firsts
                        .iter()
                        .any(|(n, _): &(String, u32)| **n == *e.node_name)
                    {
                        firsts.push((e.node_name.to_string(), e.attempt_index));
                    }
                }
                !firsts.is_empty() && firsts.iter().all(|(_, a)| *a == 0)
            }
            "after_node_crash_rolls_node_forward" => {
                let node = ctx.store.crash_node().ok_or("no crash_injection")?;
                let loaded = ctx.loaded.ok_or("no loaded record")?;
                ctx.first.is_some_and(|f| f.crashed)
                    && loaded
                        .completed_positions
                        .iter()
                        .any(|p| p.node_name == node)
                    && !executed(ctx, run).iter().any(|n| n == node)
            }
            "single_migration_invocation" => lock(&ctx.log.runs).len() == 1,
            "migration_count" | "migration_invocation_count" => {
                eq(&want, &json!(lock(&ctx.log.runs).len()), &name)?;
                continue;
            }
            "migration_order_matches_chain" => {
                // Each migration consumed the previous one's version, from the record's
                // version to the declared one.
                let loaded = ctx.loaded.ok_or("no loaded record")?;
                let runs = lock(&ctx.log.runs).clone();
                let mut at = loaded.schema_version.clone();
                let mut ok = !runs.is_empty();
                for label in &runs {
                    match label.split_once("->") {
                        Some((from, to)) if from == at => at = to.to_owned(),
                        _ => ok = false,
                    }
                }
                ok && at == ctx.declared_version
            }
            // Observable proxy (adapter register R11): no migration function ran.
            "migration_registry_not_consulted" => lock(&ctx.log.runs).is_empty(),
            "error_category_not" => {
                let category = match &run.result {
                    Err(f) => f.category.clone(),
                    Ok(_) => return Err(format!("invariant {name}: the run did not fail").into()),
                };
                let excluded = v.strings()?;
                if excluded.contains(&category) {
                    return Err(
                        format!("invariant {name}: got excluded category {category}").into(),
                    );
                }
                continue;
            }
            other => match super::fan_out::invariant(other, ctx, run).await {
                Some(actual) => {
                    eq(&want, &actual?, &format!("invariant {name}"))?;
                    continue;
                }
                None => return Err(unknown(&v, &name)),
            },
        };
        eq(&want, &json!(holds), &format!("invariant {name}"))?;
    }
    Ok(())
}
