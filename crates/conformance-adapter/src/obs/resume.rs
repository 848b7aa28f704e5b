//! Spec: conformance-adapter §5.6 (persistence directives) in the observability runner,
//! for observability §8.4.1 with pipeline-utilities §10.4: a resumed invocation mints
//! its own Langfuse trace, the hooks re-fire on it, the first trace is not mutated
//! (037 case `resume_hooks_refire_to_resumed_trace`).
//!
//! Register O22 (REGISTER.md): `checkpointer: in_memory` gives the case graph the
//! engine's `InMemoryCheckpointer`; after the case's invocation(s),
//! `resume: {from_first_run: true}` runs one more invocation with
//! `InvokeOptions::resume_invocation(<first id>)` (no caller ids: the record's
//! correlation id is kept). `first_run_expected_error` / `first_run_expected` hold for
//! the first run, `resume.expected` for the resumed one (`langfuse_trace` is its own
//! trace; `first_trace_unchanged` compares the first trace with its snapshot taken
//! before the resume); the case-level `invariants` read every run.

use std::sync::Arc;

use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::{ObserverEvent, Phase, StateRef};
use openarmature_observability::langfuse::{trace_id_for, LangfuseTrace};
use serde_json::Value;

use super::expected::expected_error;
use super::{invariants, langfuse, Outcome, Run};
use crate::failure::{Check, Failure};
use crate::matchers::Bindings;
use crate::table::{flag, names, Table};
use crate::yaml::Y;
use crate::AdapterError;

/// The case keys handled here.
pub(super) const CASE_KEYS: &[&str] = &[
    "checkpointer",
    "first_run_expected_error",
    "first_run_expected",
    "resume",
    "invariants",
];

/// Whether the case asserts through the first-run / resume blocks.
pub(super) fn present(case: &Y<'_>) -> bool {
    case.get("first_run_expected").is_some() || case.get("resume").is_some()
}

/// The case's checkpointer (`checkpointer: in_memory`), if any.
pub(super) fn checkpointer(case: &Y<'_>) -> Check<Option<Arc<dyn Checkpointer>>> {
    let Some(kind) = case.get("checkpointer") else {
        return Ok(None);
    };
    match kind.str()? {
        // The selected backend's, when a backend crate's test binary selected one.
        "in_memory" => crate::backends::checkpointer_or_in_memory().map(Some),
        other => Err(Failure::from(AdapterError::PrimitiveMissing {
            file: kind.file.to_path_buf(),
            primitive: format!("checkpointer `{other}` in the observability runner"),
        })),
    }
}

/// The invocation `resume:` resumes (`from_first_run: true`: the first run's).
pub(super) fn resume_from(case: &Y<'_>, first: Option<&str>) -> Check<Option<String>> {
    let Some(r) = case.get("resume") else {
        return Ok(None);
    };
    r.check_keys(&["from_first_run", "expected"])?;
    if r.get("from_first_run").map(|f| f.bool()).transpose()? != Some(true) {
        return Err(Failure::from(
            r.invalid("resume needs `from_first_run: true`"),
        ));
    }
    first
        .map(|id| Some(id.to_owned()))
        .ok_or_else(|| "resume: no first run".into())
}

/// The own (non-detached) trace of invocation `id`.
fn trace_of<'t>(traces: &'t [LangfuseTrace], id: &str) -> Check<&'t LangfuseTrace> {
    let want = trace_id_for(id);
    Ok(traces
        .iter()
        .find(|t| t.id == want)
        .ok_or_else(|| format!("no Langfuse trace for invocation {id}"))?)
}

/// Checks the first-run and resume blocks; `before` is the trace list as it was
/// before the resume ran.
pub(super) fn check(
    case: &Y<'_>,
    run: &Run<'_>,
    outcomes: &[Outcome],
    before: &[LangfuseTrace],
) -> Check {
    let traces = run.langfuse.as_deref().unwrap_or_default();
    let mut b = Bindings::default();
    if let Some(e) = case.get("first_run_expected_error") {
        expected_error(&e, outcomes).map_err(|m| m.context("first_run_expected_error: "))?;
    }
    let first_id = run.invocation_ids.first().cloned().unwrap_or_default();
    if let Some(want) = case.get("first_run_expected") {
        want.check_keys(&["langfuse_trace"])?;
        if let Some(t) = want.get("langfuse_trace") {
            b = langfuse::expect::match_trace(&t, trace_of(traces, &first_id)?, &b, "first_run")?;
        }
    }
    if let Some(want) = case.get("resume").and_then(|r| r.get("expected")) {
        want.check_keys(&["langfuse_trace", "first_trace_unchanged"])?;
        let resumed_id = run.invocation_ids.get(1).ok_or("resume: did not run")?;
        if let Some(t) = want.get("langfuse_trace") {
            let got = trace_of(traces, resumed_id)?;
            langfuse::expect::match_trace(&t, got, &b, "resume")?;
        }
        if let Some(flag) = want.get("first_trace_unchanged") {
            let expect = flag.bool()?;
            let same = trace_of(before, &first_id)? == trace_of(traces, &first_id)?;
            if same != expect {
                return Err(format!("first_trace_unchanged: {same}, expected {expect}").into());
            }
        }
    }
    if let Some(inv) = case.get("invariants") {
        invariants::check_all(&inv, run)?;
    }
    Ok(())
}

/// The outermost state the first node of `id` started from, and the outermost state
/// after its last completed node.
fn endpoints(run: &Run<'_>, id: &str) -> (Option<StateRef>, Option<StateRef>) {
    let mut start = None;
    let mut end = None;
    for e in &run.events {
        let ObserverEvent::Node(e) = &**e else {
            continue;
        };
        if &*e.invocation_id != id {
            continue;
        }
        let outer = e.parent_states.first().cloned();
        if e.phase == Phase::Started && start.is_none() {
            start = Some(outer.unwrap_or_else(|| e.pre_state.clone()));
        } else if e.phase == Phase::Completed {
            end = outer.or_else(|| e.post_state.clone());
        }
    }
    (start, end)
}

/// Checks a resumed-run invariant, or `None` when `name` is not one.
pub(super) fn invariant(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let verdict = flag(TABLE, name, v)?;
    Some(verdict.and_then(|verdict| verdict(run)))
}

/// The resumed-run invariants.
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[("hooks_refire_on_resumed_trace", hooks_refire)];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// `hooks_refire_on_resumed_trace`: the resumed trace's input / output are the
/// case's hooks over the resumed run's restored and final states, and its input is
/// not the first trace's.
fn hooks_refire(run: &Run<'_>) -> Check {
    let traces = run.langfuse.as_deref().ok_or("no Langfuse observer ran")?;
    let (first, resumed) = match run.invocation_ids.as_slice() {
        [first, resumed, ..] => (first, resumed),
        _ => return Err("no resumed invocation".into()),
    };
    let config = run.case.req("langfuse_observer")?;
    let input_hook = langfuse::hook(&config.req("trace_input_from_state")?)?;
    let output_hook = langfuse::hook(&config.req("trace_output_from_state")?)?;
    let (start, end) = endpoints(run, resumed);
    let (start, end) = start.zip(end).ok_or("the resumed run ran no node")?;
    let got = trace_of(traces, resumed)?;
    let want = (input_hook(&*start), output_hook(&*end));
    if (got.input.clone(), got.output.clone()) != want {
        return Err(format!(
            "resumed trace input/output {:?} / {:?}, hooks give {want:?}",
            got.input, got.output
        )
        .into());
    }
    if trace_of(traces, first)?.input == got.input {
        return Err("the resumed trace repeats the first trace's input".into());
    }
    Ok(())
}
