//! Spec: conformance-adapter §5.6 / §5.8 / §5.13 — the checkpoint fixtures' outcome
//! blocks: first-run error and crash, `saved_record_assertions`, `expected` (saves,
//! latest record, resume progress, migrations), `expected_error` with `carries` /
//! `cause`, and `every_save_assertions`. Named invariants live in `invariants.rs`.

use std::sync::Arc;

use openarmature_graph::checkpoint::CheckpointRecord;
use openarmature_graph::{NodeEvent, ObserverEvent, Phase};
use serde_json::{json, Value};

use super::store::{positions_json, record_json, MigrationLog, Store};
use super::Run;
use crate::failure::{Check, Failure};
use crate::ge::harness::{lock, Harness, HarnessObserver};
use crate::matchers::{check, each_pair, Bindings};
use crate::yaml::Y;

pub(crate) use super::invariants::invariants;
pub(crate) use super::raised::expected_error;

/// What the assertions look at.
pub(crate) struct Ctx<'a> {
    pub(crate) store: &'a Store,
    pub(crate) log: &'a MigrationLog,
    pub(crate) implicit: &'a Arc<HarnessObserver>,
    /// The fresh run (or the `invoke_with` run).
    pub(crate) first: Option<&'a Run>,
    pub(crate) resumed: Option<&'a Run>,
    /// The record the resume loaded (snapshot taken before it ran).
    pub(crate) loaded: Option<&'a CheckpointRecord>,
    /// `resume.caller_invocation_id`.
    pub(crate) resume_caller: Option<&'a str>,
    /// The outermost `state.schema_version` (`""` when undeclared).
    pub(crate) declared_version: &'a str,
    /// The outermost state's field names.
    pub(crate) outer_fields: Vec<String>,
    /// The case graph's top-level fan-out nodes.
    pub(crate) fan_outs: &'a [String],
}

pub(crate) fn j(y: &Y<'_>) -> Check<Value> {
    Ok(y.json()?)
}

pub(crate) fn entries<'a>(y: &Y<'a>) -> Check<Vec<(String, Y<'a>)>> {
    Ok(y.entries()?)
}

pub(crate) fn unknown(y: &Y<'_>, key: &str) -> Failure {
    Failure::unsupported(format!(
        "fixture_directive_unknown: {}: unknown directive `{key}` at {}",
        y.file.display(),
        y.location()
    ))
}

pub(crate) fn eq(want: &Value, actual: &Value, path: &str) -> Check {
    check(want, actual, &mut Bindings::default(), path)
}

/// The node events one run recorded.
pub(crate) fn node_events(ctx: &Ctx<'_>, run: &Run) -> Vec<Arc<ObserverEvent>> {
    ctx.implicit
        .events_for(&run.id)
        .into_iter()
        .filter(|e| e.as_node().is_some())
        .collect()
}

/// `started` events of one run.
pub(crate) fn started(ctx: &Ctx<'_>, run: &Run) -> Vec<NodeEvent> {
    node_events(ctx, run)
        .iter()
        .filter_map(|e| e.as_node())
        .filter(|e| e.phase == Phase::Started)
        .cloned()
        .collect()
}

/// The nodes a run executed, in first-`started` order.
pub(crate) fn executed(ctx: &Ctx<'_>, run: &Run) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in started(ctx, run) {
        if !names.iter().any(|n| **n == *e.node_name) {
            names.push(e.node_name.to_string());
        }
    }
    names
}

fn state_of(run: &Run, what: &str) -> Check<Value> {
    match &run.result {
        Ok(_) if run.crashed => Err(format!("{what}: the run crashed").into()),
        Ok(state) => Ok(state.clone()),
        Err(f) => Err(format!(
            "{what}: the run failed: {} at `{}`: {}",
            f.category, f.node, f.message
        )
        .into()),
    }
}

/// Case-level blocks about the first run (or the `invoke_with` run).
pub(crate) async fn first_run(case: &Y<'_>, ctx: &Ctx<'_>) -> Check {
    let Some(run) = ctx.first else {
        for key in [
            "first_run_expected_error",
            "saved_record_assertions",
            "expected",
        ] {
            if case.get(key).is_some() {
                return Err(format!("{key}: there is no first run (seeded record)").into());
            }
        }
        return Ok(());
    };
    if let Some(e) = case.get("first_run_expected_error") {
        e.check_keys(&["category", "raised_from"])?;
        expected_error(&e, run).map_err(|m| m.context("first_run_expected_error: "))?;
    }
    if ctx.store.crashes() && !run.crashed {
        return Err("crash_injection: the run ended before the crash boundary's save".into());
    }
    if let Some(s) = case.get("saved_record_assertions") {
        let record = ctx
            .store
            .latest(&run.id)
            .await
            .ok_or("saved_record_assertions: no record was saved")?;
        saved_record(&s, &record, ctx).map_err(|m| m.context("saved_record_assertions: "))?;
    }
    if let Some(e) = case.get("expected_error") {
        expected_error(&e, run).map_err(|m| m.context("expected_error: "))?;
    }
    if let Some(e) = case.get("expected") {
        expected(&e, ctx, run).await?;
    }
    if let Some(a) = case.get("every_save_assertions") {
        let saves = ctx.store.saves_for(&run.id);
        if saves.is_empty() {
            return Err("every_save_assertions: the run saved nothing".into());
        }
        for (i, save) in saves.iter().enumerate() {
            let actual = record_json(save);
            for (key, want) in entries(&a)? {
                let got = actual.get(&key).ok_or_else(|| unknown(&want, &key))?;
                eq(
                    &j(&want)?,
                    got,
                    &format!("every_save_assertions: save #{i}.{key}"),
                )?;
            }
        }
    }
    Ok(())
}

/// `resume:` — the resumed run's error or expected block, then its invariants.
pub(crate) async fn resume(r: &Y<'_>, ctx: &Ctx<'_>, run: &Run) -> Check {
    let mut expects_failure = false;
    if let Some(want) = r.get("expected_chain_ambiguity_error") {
        expects_failure = true;
        let want = j(&want)?;
        match &run.result {
            Err(f) => eq(&want, &json!(f.category), "expected_chain_ambiguity_error")?,
            Ok(_) => return Err("expected_chain_ambiguity_error: the resume succeeded".into()),
        }
    }
    if let Some(e) = r.get("expected_error") {
        expects_failure = true;
        expected_error(&e, run).map_err(|m| m.context("resume.expected_error: "))?;
    }
    if let Some(e) = r.get("expected") {
        expected(&e, ctx, run)
            .await
            .map_err(|m| m.context("resume.expected: "))?;
    } else if !expects_failure {
        state_of(run, "resume")?;
    }
    if let Some(i) = r.get("invariants") {
        invariants(&i, ctx, run)
            .await
            .map_err(|m| m.context("resume.invariants: "))?;
    }
    Ok(())
}

/// `saved_record_assertions` against the first run's latest record.
fn saved_record(y: &Y<'_>, record: &CheckpointRecord, ctx: &Ctx<'_>) -> Check {
    for (key, v) in entries(y)? {
        match key.as_str() {
            "state" => eq(&j(&v)?, &record.state, "state")?,
            "completed_positions" => eq(
                &j(&v)?,
                &positions_json(&record.completed_positions),
                "completed_positions",
            )?,
            "parent_states_present" => eq(
                &j(&v)?,
                &json!(!record.parent_states.is_empty()),
                "parent_states_present",
            )?,
            "parent_states_outermost_first" => {
                // One parent per containing level, and the first is an outermost state.
                let depth = record
                    .completed_positions
                    .last()
                    .map_or(0, |p| p.namespace.len());
                let first_is_outer = record.parent_states.first().is_some_and(|p| {
                    p.as_object().is_some_and(|m| {
                        m.len() == ctx.outer_fields.len()
                            && ctx.outer_fields.iter().all(|f| m.contains_key(f))
                    })
                });
                let ok = depth > 0 && record.parent_states.len() == depth && first_is_outer;
                eq(&j(&v)?, &json!(ok), "parent_states_outermost_first").map_err(|m| {
                    Failure::new(
                        m.kind(),
                        format!("{} (parent_states {:?})", m.message(), record.parent_states),
                    )
                })?;
            }
            "fan_out_progress" => super::fan_out::progress(&v, record)?,
            "fan_out_node_in_completed_positions" => {
                let present = record
                    .completed_positions
                    .iter()
                    .any(|p| ctx.fan_outs.contains(&p.node_name));
                eq(&j(&v)?, &json!(present), &key)?;
            }
            _ => return Err(unknown(&v, &key)),
        }
    }
    Ok(())
}

/// One `expected:` block about `run`.
pub(crate) async fn expected(y: &Y<'_>, ctx: &Ctx<'_>, run: &Run) -> Check {
    for (key, v) in entries(y)? {
        let want = j(&v)?;
        match key.as_str() {
            "final_state" => {
                super::fan_out::final_state(&want, &state_of(run, "final_state")?, "final_state")?;
            }
            "instances_executed_during_resume" => {
                eq(&want, &json!(super::fan_out::executed(ctx, run)), &key)?;
            }
            "instances_skipped_during_resume" => {
                eq(&want, &json!(super::fan_out::skipped(ctx, run)), &key)?;
            }
            "checkpoint_saves" => checkpoint_saves(&v, &ctx.store.saves_for(&run.id))?,
            "latest_record_assertions" => {
                let record = ctx
                    .store
                    .latest(&run.id)
                    .await
                    .ok_or("latest_record_assertions: no record")?;
                let actual = record_json(&record);
                for (field, w) in entries(&v)? {
                    let got = actual.get(&field).ok_or_else(|| unknown(&w, &field))?;
                    let w = j(&w)?;
                    let path = format!("latest_record_assertions.{field}");
                    if w == json!("<timestamp>") {
                        if got.as_u64().is_none_or(|t| t == 0) {
                            return Err(format!("{path}: {got} is not a timestamp").into());
                        }
                    } else {
                        eq(&w, got, &path)?;
                    }
                }
            }
            "nodes_executed_during_resume" => {
                eq(&want, &json!(executed(ctx, run)), &key)?;
            }
            "nodes_skipped_during_resume" => {
                let ran = executed(ctx, run);
                let rolled: Vec<&str> = ctx
                    .loaded
                    .map(|r| {
                        r.completed_positions
                            .iter()
                            .map(|p| p.node_name.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                for node in v.strings()? {
                    if ran.contains(&node) || !rolled.contains(&node.as_str()) {
                        return Err(format!(
                            "{key}: `{node}` ran ({ran:?}) or was not completed in the loaded record ({rolled:?})"
                        ).into());
                    }
                }
            }
            "migrations_run" => eq(&want, &json!(*lock(&ctx.log.runs)), &key)?,
            "successful_attempt_index_during_resume" => {
                // The successful attempts of nodes that failed an attempt in this run.
                let events = node_events(ctx, run);
                let completed: Vec<&NodeEvent> = events
                    .iter()
                    .filter_map(|e| e.as_node())
                    .filter(|e| e.phase == Phase::Completed)
                    .collect();
                let retried = |n: &str| {
                    completed
                        .iter()
                        .any(|e| *e.node_name == *n && e.error.is_some())
                };
                let got: Vec<u32> = completed
                    .iter()
                    .filter(|e| e.error.is_none() && retried(&e.node_name))
                    .map(|e| e.attempt_index)
                    .collect();
                if got.is_empty() || got.iter().any(|a| json!(a) != want) {
                    return Err(format!("{key}: expected {want}, got {got:?}").into());
                }
            }
            "invariants" => invariants(&v, ctx, run).await?,
            _ => return Err(unknown(&v, &key)),
        }
    }
    state_of(run, "expected").map(drop)
}

/// `checkpoint_saves: [{after_node, state, completed_positions}]`, one per save.
fn checkpoint_saves(y: &Y<'_>, saves: &[CheckpointRecord]) -> Check {
    let list = y.seq()?;
    each_pair(
        &list,
        saves,
        || {
            format!(
                "checkpoint_saves: expected {} saves, got {}",
                list.len(),
                saves.len()
            )
        },
        |i, want, save| {
            want.check_keys(&["after_node", "state", "completed_positions"])?;
            let path = format!("checkpoint_saves[{i}]");
            if let Some(n) = want.get("after_node") {
                let last = save.completed_positions.last().map(|p| p.node_name.clone());
                eq(&j(&n)?, &json!(last), &format!("{path}.after_node"))?;
            }
            if let Some(s) = want.get("state") {
                eq(&j(&s)?, &save.state, &format!("{path}.state"))?;
            }
            if let Some(p) = want.get("completed_positions") {
                let got = positions_json(&save.completed_positions);
                eq(&j(&p)?, &got, &format!("{path}.completed_positions"))?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// Harness-detected contract violations (a `should_not_run` migration ran, ...).
pub(crate) fn no_violations(log: &MigrationLog, harness: &Harness) -> Check {
    let mut all = lock(&log.violations).clone();
    all.extend(lock(&harness.violations).iter().cloned());
    if all.is_empty() {
        Ok(())
    } else {
        Err(format!("harness violations: {all:?}").into())
    }
}
