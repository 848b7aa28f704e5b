//! Spec: sessions §3, §4, §6, §7, §9, §11 — the named invariants of the sessions
//! fixtures (adapter register S4 for how each is read).
//!
//! [`INVARIANTS`] maps each name to its check; an unknown name is
//! `fixture_directive_unknown`. Boolean invariants must be `true`.

use openarmature_graph::NodeEvent;
use serde_json::Value as Json;

use super::expect::{last_run, loads, saves};
use super::run::{entry_pre_state, started_at, Run};
use super::store::Op;
use super::Ctx;
use crate::failure::{Check, Failure};
use crate::matchers::json_eq;
use crate::shared::lock;
use crate::table::{invariant, names, Table};

type CheckFn = fn(&Json, &Ctx<'_>) -> Check;

/// Every invariant the sessions fixtures name.
const INVARIANTS: &Table<CheckFn> = &[
    ("second_invoke_loads_first_invoke_state", second_loads_first),
    ("saved_record_overwrites_prior", overwrites_prior),
    ("scratch_field_never_persisted", scratch_never_persisted),
    (
        "projected_field_persists_across_invokes",
        projected_persists,
    ),
    (
        "mid_invoke_save_survives_subsequent_crash",
        mid_save_survives,
    ),
    ("single_migration_invocation", single_migration),
    (
        "migration_runs_before_projection_merge",
        migration_before_merge,
    ),
    ("node_never_invoked", node_never_invoked),
    ("no_invoke_attempted", no_invoke_attempted),
    (
        "subgraph_state_fields_match_subgraph_schema",
        subgraph_fields,
    ),
    (
        "subgraph_does_not_see_session_state_directly",
        subgraph_blind,
    ),
    ("no_inner_session_load_or_save", outer_calls_only),
    (
        "fan_out_instance_state_fields_match_subgraph_schema",
        instance_fields,
    ),
    (
        "fan_out_instances_do_not_see_session_state_directly",
        instance_blind,
    ),
    ("no_per_instance_session_load_or_save", outer_calls_only),
    ("session_id_uniform_across_span_tree", uniform_span_session),
    ("all_logs_carry_session_id", logs_carry_session),
    (
        "node_event_does_not_carry_session_id_field",
        events_without_session,
    ),
    ("error_category_not", category_not),
];

/// The names [`INVARIANTS`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(INVARIANTS);

/// Checks every invariant the case names.
pub(super) fn check(ctx: &Ctx<'_>) -> Check {
    for (name, value) in &ctx.case.invariants {
        let f = invariant(INVARIANTS, name)?;
        f(value, ctx).map_err(|m| m.context(format!("invariant {name}: ")))?;
    }
    Ok(())
}

fn must_be_true(v: &Json) -> Check {
    match v {
        Json::Bool(true) => Ok(()),
        other => Err(Failure::fixture(format!(
            "fixture_schema_invalid: expected `true`, got {other}"
        ))),
    }
}

fn two_runs<'c>(ctx: &'c Ctx<'_>) -> Check<(&'c Run, &'c Run)> {
    match &ctx.runs[..] {
        [first, second, ..] => Ok((first, second)),
        _ => Err(format!("{} invocations, needs two", ctx.runs.len()).into()),
    }
}

/// The second run loaded exactly what the first saved last, and its entry node saw
/// every loaded field (merged into empty initial fields, so equal to the loaded value).
fn second_loads_first(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let (first, second) = two_runs(ctx)?;
    let saved = *saves(first)
        .last()
        .ok_or("the first invocation saved nothing")?;
    let loaded = match loads(second)[..] {
        [Some(r)] => r,
        _ => return Err("the second invocation did not load one record".into()),
    };
    if loaded.state != saved.state || loaded.version != 1 {
        return Err(format!(
            "the second invocation loaded {} (version {}), the first saved {}",
            loaded.state, loaded.version, saved.state
        )
        .into());
    }
    let pre = entry_pre_state(second).ok_or("the second invocation's entry never started")?;
    for (field, value) in saved.state.as_object().into_iter().flatten() {
        let seen = pre.get(field).unwrap_or(&Json::Null);
        if !json_eq(value, seen) {
            return Err(format!("the entry node saw {field} = {seen}, loaded {value}").into());
        }
    }
    Ok(())
}

/// Every run saved under one id, and the store keeps one record: the last save,
/// at a version counting every save.
fn overwrites_prior(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let all: Vec<(&String, &Json)> = ctx
        .runs
        .iter()
        .flat_map(|r| r.ops.iter())
        .filter_map(|op| match op {
            Op::Save(id, r) => Some((id, &r.state)),
            _ => None,
        })
        .collect();
    let (Some((id, last)), true) = (all.last(), all.len() >= 2) else {
        return Err(format!("{} saves, needs two", all.len()).into());
    };
    if all.iter().any(|(i, _)| i != id) {
        return Err("the saves name different sessions".into());
    }
    let stored = ctx
        .records_after
        .get(*id)
        .and_then(Option::as_ref)
        .ok_or(format!("no record for `{id}` after the case"))?;
    if &&stored.state != last || stored.version != all.len() as u64 {
        return Err(format!(
            "stored {} at version {}, the last of {} saves wrote {last}",
            stored.state,
            stored.version,
            all.len()
        )
        .into());
    }
    let listed = ctx
        .listed_after
        .iter()
        .filter(|s| &s.session_id == *id)
        .count();
    if listed != 1 {
        return Err(format!("list() shows `{id}` {listed} times").into());
    }
    Ok(())
}

fn projection(ctx: &Ctx<'_>) -> Check<Vec<String>> {
    Ok(ctx
        .case
        .session_state
        .as_ref()
        .map(|p| p.fields.clone())
        .ok_or_else(|| "the case declares no session_state".to_owned())?)
}

/// Every saved record holds projected fields only.
fn scratch_never_persisted(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let fields = projection(ctx)?;
    let records: Vec<_> = ctx.runs.iter().flat_map(saves).collect();
    if records.is_empty() {
        return Err("nothing was saved".into());
    }
    for r in records {
        let keys = r.state.as_object().map(|m| m.keys().collect::<Vec<_>>());
        if let Some(k) = keys.into_iter().flatten().find(|k| !fields.contains(k)) {
            return Err(format!("a saved record holds `{k}`: {}", r.state).into());
        }
    }
    Ok(())
}

/// The second run's entry node saw each projected field as the first run ended it.
fn projected_persists(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let (first, second) = two_runs(ctx)?;
    let ended = first
        .result
        .as_ref()
        .map_err(|f| format!("the first invocation failed: {}", f.message))?;
    let pre = entry_pre_state(second).ok_or("the second invocation's entry never started")?;
    for f in projection(ctx)? {
        let (want, got) = (ended.get(&f), pre.get(&f));
        if want.is_none() || want != got {
            return Err(format!("`{f}`: first ended with {want:?}, second saw {got:?}").into());
        }
    }
    Ok(())
}

/// The run failed after an explicit save, and the store still holds that save.
fn mid_save_survives(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let run = last_run(ctx)?;
    if run.result.is_ok() {
        return Err("the invocation did not fail".into());
    }
    if ctx.explicit_saves == 0 {
        return Err("no explicit save wrote a record".into());
    }
    let saved = *saves(run).last().ok_or("nothing was saved")?;
    let id = run
        .session_id
        .as_deref()
        .ok_or("the run is not session-bound")?;
    match ctx.records_after.get(id).and_then(Option::as_ref) {
        Some(r) if r.state == saved.state => Ok(()),
        Some(r) => Err(format!(
            "the store holds {}, the save wrote {}",
            r.state, saved.state
        )
        .into()),
        None => Err(format!("no record for `{id}` after the failure").into()),
    }
}

fn single_migration(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    match lock(&ctx.migrations.runs).len() {
        1 => Ok(()),
        n => Err(format!("{n} migrations ran").into()),
    }
}

/// The entry node saw the migration's output (not the raw record).
fn migration_before_merge(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let migrated = lock(&ctx.migrated)
        .last()
        .cloned()
        .ok_or("no migration produced a state")?;
    let pre = entry_pre_state(last_run(ctx)?).ok_or("the entry node never started")?;
    for (field, value) in migrated.as_object().into_iter().flatten() {
        let seen = pre.get(field).unwrap_or(&Json::Null);
        if !json_eq(value, seen) {
            return Err(format!("the entry node saw {field} = {seen}, migrated {value}").into());
        }
    }
    Ok(())
}

fn node_never_invoked(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    for run in &ctx.runs {
        if !run.nodes_run.is_empty() || !run.events.is_empty() {
            return Err(format!("nodes ran: {:?}", run.nodes_run).into());
        }
    }
    Ok(())
}

/// The registration failed, so nothing was invoked and the store saw no call.
fn no_invoke_attempted(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    if ctx.registration.is_none() || !ctx.runs.is_empty() {
        return Err(format!("{} invocations ran", ctx.runs.len()).into());
    }
    match ctx.store.as_ref().map(|s| s.ops()) {
        Some(ops) if !ops.is_empty() => Err(format!("{} store calls", ops.len()).into()),
        _ => Ok(()),
    }
}

/// `started` events below the outermost graph: fan-out instances or the others.
fn inner_events<'c>(ctx: &'c Ctx<'_>, instances: bool) -> Check<Vec<&'c NodeEvent>> {
    let run = last_run(ctx)?;
    let found: Vec<&NodeEvent> = (2..=8)
        .flat_map(|depth| started_at(run, depth))
        .filter(|e| e.fan_out_index.is_some() == instances)
        .collect();
    if found.is_empty() {
        return Err("no node ran below the outermost graph".into());
    }
    Ok(found)
}

fn keys(state: &Json) -> Vec<String> {
    let mut k: Vec<String> = state
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// Each inner node's pre-state has exactly its subgraph's declared fields.
fn schema_fields(ctx: &Ctx<'_>, instances: bool) -> Check {
    for e in inner_events(ctx, instances)? {
        let (fields, _) = ctx
            .subgraphs
            .iter()
            .find(|(_, nodes)| nodes.iter().any(|n| **n == *e.node_name))
            .ok_or(format!("node `{}` is in no declared subgraph", e.node_name))?;
        let mut fields = fields.clone();
        fields.sort();
        let got = keys(&e.pre_state.to_json());
        if got != fields {
            return Err(format!(
                "`{}` saw fields {got:?}, its schema declares {fields:?}",
                e.node_name
            )
            .into());
        }
    }
    Ok(())
}

fn subgraph_fields(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    schema_fields(ctx, false)
}

fn instance_fields(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    schema_fields(ctx, true)
}

/// No inner pre-state holds a field of the loaded session record the subgraph does
/// not itself declare, and the session state was really loaded.
fn blind(ctx: &Ctx<'_>, instances: bool) -> Check {
    let run = last_run(ctx)?;
    let loaded = match loads(run)[..] {
        [Some(r)] => keys(&r.state),
        _ => return Err("the invocation did not load a session record".into()),
    };
    for e in inner_events(ctx, instances)? {
        let declared = ctx
            .subgraphs
            .iter()
            .find(|(_, nodes)| nodes.iter().any(|n| **n == *e.node_name))
            .map(|(f, _)| f.clone())
            .unwrap_or_default();
        if let Some(k) = keys(&e.pre_state.to_json())
            .into_iter()
            .find(|k| loaded.contains(k) && !declared.contains(k))
        {
            return Err(format!("`{}` sees session field `{k}`", e.node_name).into());
        }
    }
    Ok(())
}

fn subgraph_blind(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    blind(ctx, false)
}

fn instance_blind(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    blind(ctx, true)
}

/// Every store call is the outermost graph's own lifecycle: one load at entry, one
/// save at END (with auto-save on and a completed run), plus the explicit saves.
fn outer_calls_only(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    for run in &ctx.runs {
        let names: Vec<&str> = run.ops.iter().map(Op::name).collect();
        let auto = ctx.case.auto_save.unwrap_or(true) && run.result.is_ok();
        let mut want = vec!["load"];
        want.extend(std::iter::repeat_n(
            "save",
            ctx.explicit_saves + usize::from(auto),
        ));
        if names != want {
            return Err(format!("store calls {names:?}, expected {want:?}").into());
        }
    }
    Ok(())
}

fn session_value(v: &Json) -> Check<&str> {
    v.as_str().ok_or_else(|| {
        Failure::fixture(format!(
            "fixture_schema_invalid: expected a session id, got {v}"
        ))
    })
}

const SESSION_ATTR: &str = openarmature_observability::attributes::SESSION_ID;

fn uniform_span_session(v: &Json, ctx: &Ctx<'_>) -> Check {
    let id = session_value(v)?;
    let spans = ctx
        .telemetry
        .as_ref()
        .ok_or("no telemetry recorded")?
        .spans()?;
    if spans.is_empty() {
        return Err("no span was exported".into());
    }
    for s in &spans {
        if s.attributes.get(SESSION_ATTR).and_then(Json::as_str) != Some(id) {
            return Err(format!(
                "span `{}` carries {:?}",
                s.name,
                s.attributes.get(SESSION_ATTR)
            )
            .into());
        }
    }
    Ok(())
}

fn logs_carry_session(v: &Json, ctx: &Ctx<'_>) -> Check {
    let id = session_value(v)?;
    let logs = ctx
        .telemetry
        .as_ref()
        .ok_or("no telemetry recorded")?
        .logs()?;
    if logs.is_empty() {
        return Err("no log record was exported".into());
    }
    for l in &logs {
        if l.attributes.get(SESSION_ATTR).and_then(Json::as_str) != Some(id) {
            return Err(format!(
                "log `{}` carries {:?}",
                l.body,
                l.attributes.get(SESSION_ATTR)
            )
            .into());
        }
    }
    Ok(())
}

/// No recorded node event of a session-bound run mentions its session id anywhere
/// (fields, metadata, states).
fn events_without_session(v: &Json, ctx: &Ctx<'_>) -> Check {
    must_be_true(v)?;
    let mut seen = 0;
    for run in &ctx.runs {
        let Some(id) = &run.session_id else { continue };
        for e in &run.events {
            seen += 1;
            let rendered = format!("{e:?}");
            if rendered.contains(id.as_str()) {
                return Err(format!(
                    "a `{}` event carries the session id: {rendered}",
                    e.node_name
                )
                .into());
            }
        }
    }
    if seen == 0 {
        return Err("no node event of a session-bound invocation was recorded".into());
    }
    Ok(())
}

fn category_not(v: &Json, ctx: &Ctx<'_>) -> Check {
    let banned: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Json::as_str).collect())
        .ok_or_else(|| {
            Failure::fixture(format!(
                "fixture_schema_invalid: expected a list of categories, got {v}"
            ))
        })?;
    let f = last_run(ctx)?
        .result
        .as_ref()
        .err()
        .or(ctx.registration.as_ref())
        .ok_or("nothing failed")?;
    if banned.contains(&f.category.as_str()) {
        return Err(format!("the failure is {}", f.category).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::INVARIANTS;

    #[test]
    fn invariant_names_are_unique() {
        for (i, (name, _)) in INVARIANTS.iter().enumerate() {
            assert!(
                INVARIANTS[i + 1..].iter().all(|(n, _)| n != name),
                "duplicate invariant {name}"
            );
        }
    }
}
