//! Spec: sessions §3–§10, conformance-adapter §5.8 — a case's `expected_error`,
//! per-invocation expectations and `expected:` block, checked against what it left.
//!
//! Each `expected:` directive is one entry of [`CHECKS`]; a directive the case does
//! not set passes.

use openarmature_graph::session::SessionRecord;
use serde_json::{json, Value as Json};

use super::model::{Invocation, RaisedAt, SavedSession};
use super::run::{entry_pre_state, started_at, Run, RunFailure};
use super::store::Op;
use super::{telemetry, Ctx};
use crate::failure::Check;
use crate::matchers::{check as exact_check, json_eq, Bindings};
use crate::shared::lock;

/// Exact comparison (§5.10 tokens honoured).
pub(super) fn exact(want: &Json, got: &Json, path: &str) -> Check {
    exact_check(want, got, &mut Bindings::default(), path)
}

/// The records the engine passed to `save()` during `run`, in order.
pub(super) fn saves(run: &Run) -> Vec<&SessionRecord> {
    run.ops
        .iter()
        .filter_map(|op| match op {
            Op::Save(_, r) => Some(r),
            _ => None,
        })
        .collect()
}

/// What each `load()` of the run's session during `run` returned, in order.
pub(super) fn loads(run: &Run) -> Vec<Option<&SessionRecord>> {
    run.ops
        .iter()
        .filter_map(|op| match op {
            Op::Load(id, r) if Some(id) == run.session_id.as_ref() => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

pub(super) fn last_run<'c>(ctx: &'c Ctx<'_>) -> Check<&'c Run> {
    Ok(ctx
        .runs
        .last()
        .ok_or_else(|| "no invocation ran".to_owned())?)
}

fn final_state(run: &Run) -> Check<&Json> {
    Ok(run
        .result
        .as_ref()
        .map_err(|f| format!("the invocation failed: {}: {}", f.category, f.message))?)
}

/// Every check of a case.
pub(super) fn check(ctx: &Ctx<'_>) -> Check {
    outcome(ctx).map_err(|m| m.context("expected_error: "))?;
    for (i, (inv, run)) in ctx.case.invocations.iter().zip(&ctx.runs).enumerate() {
        invocation(inv, run).map_err(|m| m.context(format!("invocations[{i}]: ")))?;
    }
    for (name, check) in CHECKS {
        check(ctx).map_err(|m| m.context(format!("expected.{name}: ")))?;
    }
    Ok(())
}

/// `expected_error` against the registration / the last invocation; without it,
/// nothing may fail.
fn outcome(ctx: &Ctx<'_>) -> Check {
    let failed_early = ctx
        .runs
        .iter()
        .rev()
        .skip(1)
        .find_map(|r| r.result.as_ref().err());
    if let Some(f) = failed_early {
        return Err(format!(
            "an invocation before the last failed: {}: {}",
            f.category, f.message
        )
        .into());
    }
    let last = ctx.runs.last().and_then(|r| r.result.as_ref().err());
    let Some(want) = &ctx.case.expected_error else {
        return match ctx.registration.as_ref().or(last) {
            Some(f) => Err(format!("unexpected failure {}: {}", f.category, f.message).into()),
            None => Ok(()),
        };
    };
    let got: &RunFailure = match (want.raised_at, &ctx.registration) {
        (Some(RaisedAt::Registration), Some(f)) => f,
        (Some(RaisedAt::Registration), None) => {
            return Err("expected the session registration to fail; it was accepted".into())
        }
        (None, Some(f)) => {
            return Err(format!(
                "the session registration failed: {}: {}",
                f.category, f.message
            )
            .into())
        }
        (None, None) => last.ok_or("expected the invocation to fail; it completed")?,
    };
    if got.category != want.category {
        return Err(format!(
            "category {} ({}), expected {}",
            got.category, got.message, want.category
        )
        .into());
    }
    if let Some(node) = &want.raised_from {
        if &got.node != node {
            return Err(format!("raised_from `{}`, expected `{node}`", got.node).into());
        }
    }
    if let Some(carries) = &want.carries {
        let fields = got
            .carries
            .as_ref()
            .ok_or("carries: the failure is not a session error")?;
        for (key, value) in carries {
            let actual = fields
                .get(key)
                .ok_or(format!("carries.{key}: the error exposes no such field"))?;
            if !json_eq(value, actual) {
                return Err(format!("carries.{key}: {actual}, expected {value}").into());
            }
        }
    }
    if let Some(cause) = &want.cause {
        match got.cause_type {
            Some(t) if t == cause.exception_type => {}
            other => {
                return Err(format!(
                    "cause.exception_type {other:?}, expected {}",
                    cause.exception_type
                )
                .into())
            }
        }
    }
    Ok(())
}

fn invocation(inv: &Invocation, run: &Run) -> Check {
    if let Some(want) = &inv.loaded_session_state {
        let [loaded] = loads(run)[..] else {
            return Err(format!(
                "loaded_session_state: {} loads, expected one",
                loads(run).len()
            )
            .into());
        };
        let got = loaded.map_or(Json::Null, |r| r.state.clone());
        exact(want, &got, "loaded_session_state")?;
    }
    if let Some(want) = &inv.expected_final_state {
        exact(want, final_state(run)?, "expected_final_state")?;
    }
    if let Some(want) = &inv.saved_session_assertions {
        saved(want, run, "saved_session_assertions")?;
    }
    for (field, want) in inv.probes()? {
        let pre = entry_pre_state(run).ok_or("the entry node never started")?;
        let got = pre.get(field).cloned().unwrap_or(Json::Null);
        if !json_eq(want, &got) {
            return Err(format!(
                "loaded_invoke_state_for_{field}: the entry node saw {got}, expected {want}"
            )
            .into());
        }
    }
    Ok(())
}

/// `saved_session_assertions` against the last record `run` saved.
fn saved(want: &SavedSession, run: &Run, path: &str) -> Check {
    let record = *saves(run)
        .last()
        .ok_or(format!("{path}: the invocation saved no record"))?;
    if let Some(state) = &want.state {
        exact(state, &record.state, &format!("{path}.state"))?;
    }
    if let Some(version) = &want.schema_version {
        if &record.schema_version != version {
            return Err(format!(
                "{path}.schema_version: {}, expected {version}",
                record.schema_version
            )
            .into());
        }
    }
    if let Some(f) = want
        .excludes_fields
        .iter()
        .find(|f| record.state.get(f.as_str()).is_some())
    {
        return Err(format!("{path}.excludes_fields: the record holds `{f}`").into());
    }
    Ok(())
}

type CheckFn = fn(&Ctx<'_>) -> Check;

/// The `expected:` directives, by name.
const CHECKS: &[(&str, CheckFn)] = &[
    ("final_state", final_state_check),
    ("no_session_load", no_load),
    ("no_session_save", no_save),
    ("store_untouched", store_untouched),
    ("no_auto_save_on_end", no_auto_save),
    ("store_after", store_after),
    ("migrations_run", migrations_run),
    ("saved_session_assertions", saved_check),
    ("inner_pre_state", inner_pre_state),
    ("instance_pre_states", instance_pre_states),
    ("span_tree", span_tree),
    ("log_records", log_records),
];

fn final_state_check(ctx: &Ctx<'_>) -> Check {
    match &ctx.case.expected.final_state {
        Some(want) => exact(want, final_state(last_run(ctx)?)?, "final_state"),
        None => Ok(()),
    }
}

fn all_ops<'c>(ctx: &'c Ctx<'_>) -> impl Iterator<Item = &'c Op> {
    ctx.runs.iter().flat_map(|r| r.ops.iter())
}

/// A boolean directive: `want` against what was observed.
fn flag(want: Option<bool>, got: bool, what: &str) -> Check {
    match want {
        Some(w) if w != got => Err(format!("expected {w}, observed {got} ({what})").into()),
        _ => Ok(()),
    }
}

fn no_load(ctx: &Ctx<'_>) -> Check {
    let loads = all_ops(ctx).filter(|o| matches!(o, Op::Load(..))).count();
    flag(
        ctx.case.expected.no_session_load,
        loads == 0,
        &format!("{loads} loads"),
    )
}

fn no_save(ctx: &Ctx<'_>) -> Check {
    let n = all_ops(ctx).filter(|o| matches!(o, Op::Save(..))).count();
    flag(
        ctx.case.expected.no_session_save,
        n == 0,
        &format!("{n} saves"),
    )
}

fn store_untouched(ctx: &Ctx<'_>) -> Check {
    let calls: Vec<&str> = all_ops(ctx).map(Op::name).collect();
    let untouched = calls.is_empty() && ctx.listed_before == ctx.listed_after;
    let what = format!(
        "calls {calls:?}; {} sessions before, {} after",
        ctx.listed_before.len(),
        ctx.listed_after.len()
    );
    flag(ctx.case.expected.store_untouched, untouched, &what)
}

fn no_auto_save(ctx: &Ctx<'_>) -> Check {
    let n = all_ops(ctx).filter(|o| matches!(o, Op::Save(..))).count();
    let what = format!("{n} saves, {} explicit", ctx.explicit_saves);
    flag(
        ctx.case.expected.no_auto_save_on_end,
        n == ctx.explicit_saves,
        &what,
    )
}

fn store_after(ctx: &Ctx<'_>) -> Check {
    let Some(after) = &ctx.case.expected.store_after else {
        return Ok(());
    };
    if let Some(id) = &after.load_returns_none_for_session_id {
        if let Some(Some(r)) = ctx.records_after.get(id) {
            return Err(format!("load({id}) returned {}", r.state).into());
        }
    }
    if let Some(id) = &after.load_returns_for_session_id {
        let record = ctx
            .records_after
            .get(id)
            .and_then(Option::as_ref)
            .ok_or(format!("load({id}) returned no record"))?;
        if let Some(state) = &after.loaded_state {
            exact(state, &record.state, "loaded_state")?;
        }
        if let Some(v) = &after.loaded_schema_version {
            if &record.schema_version != v {
                return Err(format!(
                    "loaded_schema_version {}, expected {v}",
                    record.schema_version
                )
                .into());
            }
        }
    } else if after.loaded_state.is_some() || after.loaded_schema_version.is_some() {
        return Err("loaded_* needs load_returns_for_session_id".into());
    }
    Ok(())
}

fn migrations_run(ctx: &Ctx<'_>) -> Check {
    let Some(want) = &ctx.case.expected.migrations_run else {
        return Ok(());
    };
    let got = lock(&ctx.migrations.runs).clone();
    if &got != want {
        return Err(format!("{got:?}, expected {want:?}").into());
    }
    Ok(())
}

fn saved_check(ctx: &Ctx<'_>) -> Check {
    match &ctx.case.expected.saved_session_assertions {
        Some(want) => saved(want, last_run(ctx)?, "saved_session_assertions"),
        None => Ok(()),
    }
}

fn inner_pre_state(ctx: &Ctx<'_>) -> Check {
    let Some(want) = &ctx.case.expected.inner_pre_state else {
        return Ok(());
    };
    let run = last_run(ctx)?;
    let inner: Vec<Json> = started_at(run, 2)
        .iter()
        .filter(|e| e.fan_out_index.is_none())
        .map(|e| e.pre_state.to_json())
        .collect();
    match &inner[..] {
        [got] => exact(want, got, "inner_pre_state"),
        other => Err(format!("{} subgraph entries started, expected one", other.len()).into()),
    }
}

fn instance_pre_states(ctx: &Ctx<'_>) -> Check {
    let Some(want) = &ctx.case.expected.instance_pre_states else {
        return Ok(());
    };
    let run = last_run(ctx)?;
    let mut instances: Vec<(usize, Json)> = started_at(run, 2)
        .iter()
        .filter_map(|e| e.fan_out_index.map(|i| (i, e.pre_state.to_json())))
        .collect();
    instances.sort_by_key(|(i, _)| *i);
    let got: Vec<Json> = instances.into_iter().map(|(_, s)| s).collect();
    exact(&json!(want), &json!(got), "instance_pre_states")
}

fn span_tree(ctx: &Ctx<'_>) -> Check {
    let Some(want) = &ctx.case.expected.span_tree else {
        return Ok(());
    };
    let t = ctx.telemetry.as_ref().ok_or("no telemetry recorded")?;
    telemetry::check_span_tree(want, &t.spans()?)
}

fn log_records(ctx: &Ctx<'_>) -> Check {
    let Some(want) = &ctx.case.expected.log_records else {
        return Ok(());
    };
    let t = ctx.telemetry.as_ref().ok_or("no telemetry recorded")?;
    telemetry::check_logs(want, &t.logs()?)
}
