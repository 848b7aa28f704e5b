//! Spec: observability §8.4.1 *Session / user trace-field sourcing* and
//! conformance-adapter §5.9 — the named invariants of fixture 084: `trace.sessionId`
//! from a session-bound invocation's `session_id`, `trace.userId` promoted additively
//! from the caller metadata's `userId`.

use openarmature_observability::langfuse::LangfuseTrace;
use serde_json::Value;

use crate::failure::Check;
use crate::obs::Run;
use crate::table::{flag, lookup, names, Table};

type Verdict = Check;

/// The invocations' own traces (not detached children).
fn own(traces: &[LangfuseTrace]) -> Vec<&LangfuseTrace> {
    traces
        .iter()
        .filter(|t| !t.metadata.contains_key("detached_from_invocation_id"))
        .collect()
}

fn every(traces: &[LangfuseTrace], what: &str, ok: impl Fn(&LangfuseTrace) -> bool) -> Verdict {
    let own = own(traces);
    if own.is_empty() {
        return Err("no Langfuse trace".into());
    }
    match own.into_iter().find(|t| !ok(t)) {
        Some(t) => Err(format!(
            "trace {} breaks: {what} (sessionId {:?}, userId {:?})",
            t.id, t.session_id, t.user_id
        )
        .into()),
        None => Ok(()),
    }
}

/// The caller metadata's `userId`, as the trace's metadata keeps it.
fn metadata_user_id(t: &LangfuseTrace) -> Option<String> {
    t.metadata
        .get("userId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn user_id_promoted(traces: &[LangfuseTrace]) -> Verdict {
    every(traces, "userId promoted and kept in metadata", |t| {
        metadata_user_id(t).is_some() && t.user_id == metadata_user_id(t)
    })
}

fn one_session(traces: &[LangfuseTrace]) -> Verdict {
    let own = own(traces);
    let first = own.first().and_then(|t| t.session_id.clone());
    if own.len() >= 2 && first.is_some() && own.iter().all(|t| t.session_id == first) {
        Ok(())
    } else {
        Err(format!(
            "{} traces, sessions {:?}",
            own.len(),
            own.iter().map(|t| &t.session_id).collect::<Vec<_>>()
        )
        .into())
    }
}

/// The session invariants whose value must be `true`.
const FLAGS: &Table<fn(&[LangfuseTrace], &Run<'_>) -> Verdict> = &[
    (
        "trace_session_id_equals_supplied_session_id",
        |traces, run| match run.case_str("session_id") {
            Some(s) => every(traces, "sessionId is the supplied session id", |t| {
                t.session_id.as_deref() == Some(s)
            }),
            None => Err("the case supplies no session_id".into()),
        },
    ),
    ("trace_session_id_unset", |traces, _| {
        every(traces, "sessionId unset", |t| t.session_id.is_none())
    }),
    ("trace_user_id_equals_metadata_userid", |traces, _| {
        user_id_promoted(traces)
    }),
    ("user_id_promotion_is_additive", |traces, _| {
        user_id_promoted(traces)
    }),
    ("trace_user_id_unset", |traces, _| {
        every(traces, "userId unset", |t| t.user_id.is_none())
    }),
    ("other_metadata_unaffected", |traces, run| {
        let caller = run.caller_metadata();
        every(traces, "caller metadata kept at the top level", |t| {
            caller.iter().all(|(k, val)| t.metadata.get(k) == Some(val))
        })
    }),
    ("traces_group_into_one_langfuse_session", |traces, _| {
        one_session(traces)
    }),
];

/// The session invariants whose value is an operand.
const VALUED: &Table<fn(&Value, &[LangfuseTrace]) -> Verdict> =
    &[("all_traces_share_session_id", |v, traces| {
        match v.as_str() {
            Some(want) => every(traces, "sessionId is the shared session", |t| {
                t.session_id.as_deref() == Some(want)
            }),
            None => Err(format!("expected a session id, got {v}").into()),
        }
    })];

/// The names [`FLAGS`] and [`VALUED`] know (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || {
    let mut all = names(FLAGS);
    all.extend(names(VALUED));
    all
};

/// The session invariant `name`, or `None` when it is not one of these.
pub(crate) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    if let Some(verdict) = flag(FLAGS, name, v) {
        return Some(verdict.and_then(|verdict| verdict(traces, run)));
    }
    let verdict = lookup(VALUED, name)?;
    Some(verdict(v, traces))
}
