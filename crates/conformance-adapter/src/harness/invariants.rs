//! Spec: conformance-adapter §4.3 for the harness suite — each transmission's `expected`
//! block, and the case invariants as a table of concrete checks over the turns.

use serde_json::Value;

use super::{counts, Rig, TurnRecord};
use crate::failure::{holds, Check, Failure};
use crate::suspension::subset;
use crate::table::{invariant, names, Table};
use crate::yaml::Y;

/// A `<from …>` token names the previous turn's invocation; anything else is literal.
fn token(want: &str, previous: Option<&TurnRecord>) -> Option<String> {
    if want.starts_with('<') {
        previous.and_then(|p| p.invocation_id.clone())
    } else {
        Some(want.to_owned())
    }
}

fn flag(y: &Y<'_>) -> Check<bool> {
    y.bool().map_err(Failure::from)
}

/// One transmission's `expected` block.
pub(crate) fn expected(
    y: &Y<'_>,
    t: &TurnRecord,
    rig: &Rig,
    previous: Option<&TurnRecord>,
) -> Check {
    for (key, v) in y.entries()? {
        let check = |ok: bool, what: String| -> Check {
            if ok {
                Ok(())
            } else {
                Err(format!("{key}: {what}").into())
            }
        };
        match key.as_str() {
            "dispatch_path" => {
                let want = v.str()?;
                check(
                    t.path == Some(want),
                    format!("expected {want}, got {:?}", t.path),
                )?;
            }
            "invoke_outcome" => {
                let want = v.str()?;
                check(
                    t.outcome == want,
                    format!("expected {want}, got {} ({:?})", t.outcome, t.category),
                )?;
            }
            "final_state" => {
                let got = t.state.clone().unwrap_or(Value::Null);
                subset(&v.json()?, &got, "final_state")?;
            }
            "descriptor" => {
                let got = t
                    .descriptor
                    .clone()
                    .ok_or("descriptor: the turn did not suspend")?;
                subset(&v.json()?, &got, "descriptor")?;
            }
            "invoke_args" => invoke_args(&v, t, previous)?,
            "harness_signal_subscription_registered" | "signal_subscription_registered" => {
                let want = flag(&v)?;
                let in_coordinator = rig.coordinator.as_ref().is_none_or(|c| !c.is_empty());
                check(
                    t.subscribed == want && (!want || in_coordinator),
                    format!("expected {want}"),
                )?;
            }
            "harness_did_not_block" => check(
                !flag(&v)? || (t.outcome == "suspended" && t.shape == "suspended_acknowledgment"),
                "the suspended turn did not return its acknowledgment".into(),
            )?,
            "descriptor_read_from_outcome" => check(
                !flag(&v)? || t.payload.get("descriptor") == t.descriptor.as_ref(),
                "the acknowledgment's descriptor is not the outcome's".into(),
            )?,
            "error_category" => {
                let want = v.str()?;
                check(
                    t.category.as_deref() == Some(want),
                    format!("expected {want}, got {:?}", t.category),
                )?;
            }
            "error_bucket" => {
                let want = v.str()?;
                check(
                    t.bucket == Some(want),
                    format!("expected {want}, got {:?}", t.bucket),
                )?;
            }
            "outbound_shape" => {
                let want = v.str()?;
                check(t.shape == want, format!("expected {want}, got {}", t.shape))?;
            }
            "outbound_payload_includes" => subset(&v.json()?, &t.payload, "outbound")?,
            "harness_auto_retried" => {
                let want = flag(&v)?;
                check(
                    (t.order.len() > 1) == want,
                    format!("node bodies ran {:?}", t.order),
                )?;
            }
            "signal_correlation_resolved" => {
                check(
                    t.resolved.is_some() == flag(&v)?,
                    format!("resolved {:?}", t.resolved),
                )?;
            }
            "resolved_to_invocation_id" => {
                let want = token(v.str()?, previous);
                check(
                    t.resolved == want,
                    format!("expected {want:?}, got {:?}", t.resolved),
                )?;
            }
            "session_store_load_calls" | "session_store_save_calls" => {
                let want = usize::try_from(v.i64()?).unwrap_or(usize::MAX);
                let (loads, saves) = counts(rig);
                let got = if key.ends_with("load_calls") {
                    loads
                } else {
                    saves
                };
                check(got == want, format!("expected {want}, got {got}"))?;
            }
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: expected.{other}"
                )))
            }
        }
    }
    Ok(())
}

fn invoke_args(y: &Y<'_>, t: &TurnRecord, previous: Option<&TurnRecord>) -> Check {
    for (key, v) in y.entries()? {
        let ok = match key.as_str() {
            "session_id_present" => t.session_id.is_some() == flag(&v)?,
            "session_id_auto_generated" => t.session_generated == flag(&v)?,
            "session_id" => t.session_id.as_deref() == Some(v.str()?),
            "session_id_caller_supplied" => {
                (!t.session_generated && t.session_id.is_some() && t.session_id == t.caller_session)
                    == flag(&v)?
            }
            "session_id_absent_verified" => t.session_id.is_none() == flag(&v)?,
            "resume_invocation" => t.resume_invocation == token(v.str()?, previous),
            "signal_payload" => t.signal_payload.as_ref() == Some(&v.json()?),
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: invoke_args.{other}"
                )))
            }
        };
        if !ok {
            return Err(format!(
                "invoke_args.{key}: session {:?} (generated {}), resume {:?}, payload {:?}",
                t.session_id, t.session_generated, t.resume_invocation, t.signal_payload
            )
            .into());
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Rule {
    Shape(&'static str),
    Bucket(&'static str),
    Path(usize, &'static str),
    FirstSuspendedSubscribed,
    LastCompletedAfterSuspend,
    ResumeThreaded,
    Correlated,
    StoreUntouched,
    NoSession,
    AllSessioned,
    FirstGenerated,
    CallerSessionVerbatim,
    SecondSawFirst,
    NoRetry,
    PayloadHas(&'static [&'static str]),
    PayloadFlag(&'static str),
}

const TABLE: &Table<Rule> = &[
    (
        "completed_outcome_surfaced_as_completion_response_shape",
        Rule::Shape("completion_response"),
    ),
    (
        "outbound_shape_distinct_from_error_or_suspended",
        Rule::Shape("completion_response"),
    ),
    (
        "outbound_shape_is_error_response",
        Rule::Shape("error_response"),
    ),
    (
        "suspended_outcome_distinct_outbound_shape",
        Rule::Shape("suspended_acknowledgment"),
    ),
    (
        "errored_outcome_categorized_into_retryable_transient_bucket",
        Rule::Bucket("retryable_transient"),
    ),
    (
        "provider_unavailable_classified_as_retryable_transient",
        Rule::Bucket("retryable_transient"),
    ),
    (
        "provider_invalid_request_classified_as_user_correctable",
        Rule::Bucket("user_correctable"),
    ),
    (
        "session_load_failed_classified_as_terminating",
        Rule::Bucket("session_terminating"),
    ),
    (
        "harness_classified_as_new_session_path",
        Rule::Path(0, "3.1"),
    ),
    (
        "stateless_harness_classified_via_path_3_0",
        Rule::Path(0, "3.0"),
    ),
    (
        "second_invoke_classified_as_signal_resume",
        Rule::Path(1, "3.3"),
    ),
    (
        "harness_classified_first_as_new_second_as_existing",
        Rule::Path(1, "3.2"),
    ),
    (
        "first_invoke_suspended_and_signal_subscribed",
        Rule::FirstSuspendedSubscribed,
    ),
    (
        "harness_did_not_block_between_suspend_and_signal",
        Rule::FirstSuspendedSubscribed,
    ),
    (
        "harness_did_not_block_on_suspended_turn",
        Rule::FirstSuspendedSubscribed,
    ),
    (
        "suspend_registered_subscription",
        Rule::FirstSuspendedSubscribed,
    ),
    (
        "suspended_outcome_registered_subscription",
        Rule::FirstSuspendedSubscribed,
    ),
    (
        "end_to_end_signal_roundtrip_succeeded",
        Rule::LastCompletedAfterSuspend,
    ),
    (
        "resume_invocation_completed_the_graph",
        Rule::LastCompletedAfterSuspend,
    ),
    (
        "resume_threaded_signal_payload_into_engine",
        Rule::ResumeThreaded,
    ),
    (
        "signal_arrival_correlated_to_paused_invocation",
        Rule::Correlated,
    ),
    ("engine_did_not_invoke_session_store", Rule::StoreUntouched),
    ("session_store_completely_untouched", Rule::StoreUntouched),
    (
        "stateless_harness_did_not_resolve_session_id",
        Rule::NoSession,
    ),
    ("engine_received_session_id", Rule::AllSessioned),
    ("harness_auto_generated_session_id", Rule::FirstGenerated),
    (
        "harness_threaded_caller_session_id_verbatim",
        Rule::CallerSessionVerbatim,
    ),
    (
        "engine_loaded_prior_session_state_on_second_invoke",
        Rule::SecondSawFirst,
    ),
    ("harness_did_not_auto_retry", Rule::NoRetry),
    (
        "outbound_includes_category_and_bucket",
        Rule::PayloadHas(&["category", "bucket"]),
    ),
    (
        "outbound_includes_diagnostic_message",
        Rule::PayloadHas(&["diagnostic_message"]),
    ),
    (
        "outbound_marked_intervention_required",
        Rule::PayloadFlag("intervention_required"),
    ),
    (
        "outbound_marked_retry_safe",
        Rule::PayloadFlag("retry_safe"),
    ),
    (
        "outbound_marks_user_action_required",
        Rule::PayloadFlag("user_action_required"),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The case invariants: each `true` entry is checked.
pub(crate) fn check(y: &Y<'_>, turns: &[TurnRecord], rig: &Rig) -> Check {
    for (name, want) in y.entries()? {
        if !want.bool()? {
            continue;
        }
        let c = invariant(TABLE, &name)?;
        one(c, turns, rig).map_err(|m| m.context(format!("invariant {name}: ")))?;
    }
    Ok(())
}

fn one(c: Rule, turns: &[TurnRecord], rig: &Rig) -> Check {
    let first = turns.first().ok_or("no transmission ran")?;
    let last = turns.last().ok_or("no transmission ran")?;
    match c {
        Rule::Shape(shape) => holds(turns.iter().any(|t| t.shape == shape), shape),
        Rule::Bucket(bucket) => holds(turns.iter().any(|t| t.bucket == Some(bucket)), bucket),
        Rule::Path(i, path) => holds(turns.get(i).is_some_and(|t| t.path == Some(path)), path),
        Rule::FirstSuspendedSubscribed => holds(
            first.outcome == "suspended"
                && first.subscribed
                && first.shape == "suspended_acknowledgment",
            "the first turn did not suspend, subscribe and return",
        ),
        Rule::LastCompletedAfterSuspend => holds(
            turns.len() > 1 && first.outcome == "suspended" && last.outcome == "completed",
            "no completed resume after the suspension",
        ),
        Rule::ResumeThreaded => holds(
            last.resume_invocation.is_some()
                && last.resume_invocation == first.invocation_id
                && last.signal_payload.is_some(),
            "the resume did not carry the paused invocation and its payload",
        ),
        Rule::Correlated => holds(
            last.resolved.is_some() && last.resolved == first.invocation_id,
            "the signal id did not resolve to the paused invocation",
        ),
        Rule::StoreUntouched => holds(
            counts(rig) == (0, 0),
            format!("store calls {:?}", counts(rig)),
        ),
        Rule::NoSession => holds(
            rig.stateless && turns.iter().all(|t| t.session_id.is_none()),
            "a session id was threaded",
        ),
        Rule::AllSessioned => holds(
            turns.iter().all(|t| t.session_id.is_some()),
            "a turn had no session id",
        ),
        Rule::FirstGenerated => holds(first.session_generated, "the session id was not minted"),
        Rule::CallerSessionVerbatim => holds(
            turns
                .iter()
                .all(|t| t.session_id.is_some() && t.session_id == t.caller_session),
            "a caller session id was not threaded verbatim",
        ),
        Rule::SecondSawFirst => holds(
            turns.len() > 1 && turns[1].state != first.state,
            "the second turn did not see the first turn's saved state",
        ),
        Rule::NoRetry => holds(
            turns.iter().all(|t| t.order.len() <= 1),
            "a node body ran more than once",
        ),
        Rule::PayloadHas(keys) => holds(
            turns.iter().any(|t| {
                keys.iter()
                    .all(|k| t.payload.get(*k).is_some_and(|v| !v.is_null()))
            }),
            format!("no outbound carries {keys:?}"),
        ),
        Rule::PayloadFlag(key) => holds(
            turns
                .iter()
                .any(|t| t.payload.get(key) == Some(&Value::Bool(true))),
            format!("no outbound has {key} = true"),
        ),
    }
}
