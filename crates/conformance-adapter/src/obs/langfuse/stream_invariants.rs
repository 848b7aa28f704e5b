//! Spec: observability §5.5 / §8 (the Langfuse observer does not render
//! `LlmTokenEvent`) and conformance-adapter §5.9 — the named invariants of fixture
//! 117's Langfuse case: a streamed call is one Generation carrying the assembled
//! output, with no per-token observations.

use openarmature_core::vocab::llm::LlmDeltaKind;
use openarmature_graph::ObserverEvent;
use openarmature_observability::langfuse::{LangfuseTrace, Observation, ObservationType};
use serde_json::Value;

use crate::failure::{mismatch, Check};
use crate::obs::Run;
use crate::table::{flag, names, Table};

type Verdict = Check;

/// The content deltas the invocations' token events carried, concatenated in
/// delivery order (empty when the call did not stream).
fn streamed_content(run: &Run<'_>) -> String {
    run.events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmToken(t) if t.delta_kind == LlmDeltaKind::Content => {
                Some(t.delta.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The one Generation of a streamed call (token events were dispatched).
fn streamed_generation<'t>(traces: &'t [LangfuseTrace], run: &Run<'_>) -> Check<&'t Observation> {
    if !run
        .events
        .iter()
        .any(|e| matches!(&**e, ObserverEvent::LlmToken(_)))
    {
        return mismatch("the call dispatched no token events (it did not stream)");
    }
    let generations: Vec<&Observation> = traces
        .iter()
        .flat_map(LangfuseTrace::all_observations)
        .filter(|o| o.kind == ObservationType::Generation)
        .collect();
    match generations.as_slice() {
        [one] => Ok(one),
        other => mismatch(format!("{} generations, expected one", other.len())),
    }
}

fn no_per_token_children(traces: &[LangfuseTrace], generation: &Observation) -> Verdict {
    let events = traces
        .iter()
        .flat_map(LangfuseTrace::all_observations)
        .filter(|o| o.kind == ObservationType::Event)
        .count();
    if !generation.children.is_empty() {
        mismatch(format!(
            "the generation has {} child observations",
            generation.children.len()
        ))
    } else if events > 0 {
        mismatch(format!("{events} event observations"))
    } else {
        Ok(())
    }
}

fn full_assembled_content(generation: &Observation, run: &Run<'_>) -> Verdict {
    let want = streamed_content(run);
    let got = generation.output.as_ref();
    if !want.is_empty() && got == Some(&Value::String(want.clone())) {
        Ok(())
    } else {
        mismatch(format!("generation output {got:?}, streamed {want:?}"))
    }
}

/// A check over the traces, the streamed call's one Generation and the run.
type StreamCheck = fn(&[LangfuseTrace], &Observation, &Run<'_>) -> Verdict;

/// 117's Langfuse invariants (each value must be `true`).
const TABLE: &Table<StreamCheck> = &[
    (
        "exactly_one_generation_observation_under_stream",
        |_, _, _| Ok(()),
    ),
    ("no_per_token_child_observations", |traces, g, _| {
        no_per_token_children(traces, g)
    }),
    (
        "generation_output_is_full_assembled_content",
        |_, g, run| full_assembled_content(g, run),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks `name` when it is one of 117's Langfuse invariants.
pub(crate) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    let verdict = flag(TABLE, name, v)?;
    Some(
        verdict.and_then(|verdict| {
            streamed_generation(traces, run).and_then(|g| verdict(traces, g, run))
        }),
    )
}
