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

/// Checks `name` when it is one of 117's Langfuse invariants.
pub(crate) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    let known = [
        "exactly_one_generation_observation_under_stream",
        "no_per_token_child_observations",
        "generation_output_is_full_assembled_content",
    ];
    if !known.contains(&name) {
        return None;
    }
    if v != &Value::Bool(true) {
        return Some(mismatch(format!("expected `true`, got {v}")));
    }
    let generation = match streamed_generation(traces, run) {
        Ok(g) => g,
        Err(e) => return Some(Err(e)),
    };
    let verdict = match name {
        "exactly_one_generation_observation_under_stream" => Ok(()),
        "no_per_token_child_observations" => {
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
        _ => {
            let want = streamed_content(run);
            let got = generation.output.as_ref();
            if !want.is_empty() && got == Some(&Value::String(want.clone())) {
                Ok(())
            } else {
                mismatch(format!("generation output {got:?}, streamed {want:?}"))
            }
        }
    };
    Some(verdict)
}
