//! Spec: observability §8.4.1 *Session / user trace-field sourcing* and
//! conformance-adapter §5.9 — the named invariants of fixture 084: `trace.sessionId`
//! from a session-bound invocation's `session_id`, `trace.userId` promoted additively
//! from the caller metadata's `userId`.

use openarmature_observability::langfuse::LangfuseTrace;
use serde_json::Value;

use crate::failure::Check;
use crate::obs::Run;

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

/// The session invariant `name`, or `None` when it is not one of these.
pub(crate) fn check(
    name: &str,
    v: &Value,
    traces: &[LangfuseTrace],
    run: &Run<'_>,
) -> Option<Verdict> {
    let truthy = || match v {
        Value::Bool(true) => Ok(()),
        other => Err(format!("expected `true`, got {other}").into()),
    };
    let supplied = run.case_str("session_id").map(str::to_owned);
    let user_id = |t: &LangfuseTrace| {
        t.metadata
            .get("userId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some(match name {
        "trace_session_id_equals_supplied_session_id" => truthy().and_then(|()| match &supplied {
            Some(s) => every(traces, "sessionId is the supplied session id", |t| {
                t.session_id.as_ref() == Some(s)
            }),
            None => Err("the case supplies no session_id".into()),
        }),
        "trace_session_id_unset" => {
            truthy().and_then(|()| every(traces, "sessionId unset", |t| t.session_id.is_none()))
        }
        "trace_user_id_equals_metadata_userid" | "user_id_promotion_is_additive" => truthy()
            .and_then(|()| {
                every(traces, "userId promoted and kept in metadata", |t| {
                    user_id(t).is_some() && t.user_id == user_id(t)
                })
            }),
        "trace_user_id_unset" => {
            truthy().and_then(|()| every(traces, "userId unset", |t| t.user_id.is_none()))
        }
        "other_metadata_unaffected" => truthy().and_then(|()| {
            let caller = run.caller_metadata();
            every(traces, "caller metadata kept at the top level", |t| {
                caller.iter().all(|(k, val)| t.metadata.get(k) == Some(val))
            })
        }),
        "all_traces_share_session_id" => match v.as_str() {
            Some(want) => every(traces, "sessionId is the shared session", |t| {
                t.session_id.as_deref() == Some(want)
            }),
            None => Err(format!("expected a session id, got {v}").into()),
        },
        "traces_group_into_one_langfuse_session" => truthy().and_then(|()| {
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
        }),
        _ => return None,
    })
}
