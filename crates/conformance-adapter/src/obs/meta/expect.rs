//! Spec: conformance-adapter §5.8 with observability §3.4 / §5.1 / §9 — the
//! expectation keys of fixtures 028, 035/036, 046, 047 and 049
//! (`augment_rejects_at_call_site`, `invocation_id`, `direct_call_result`,
//! `final_state_bounds`, `per_invocation`).

use openarmature_graph::{get_invocation_metadata, InvocationMetadata, Phase};
use serde_json::Value;

use super::checks::{captures, truthy};
use super::Record;
use crate::failure::{mismatch, Check, Failure};
use crate::obs::{Outcome, Run};
use crate::table::{lookup, names, Table};
use crate::yaml::Y;

/// Checks `augment_rejects_at_call_site`, `final_state_bounds`, `per_invocation` and
/// `invocation_id` (a caller-supplied id, verbatim on the invocation span, §5.1) when
/// present in `expected`.
pub(crate) fn check_expected(expected: &Y<'_>, run: &Run<'_>, outcomes: &[Outcome]) -> Check {
    let json = |y: Y<'_>| y.json();
    if let Some(flag) = expected.get("augment_rejects_at_call_site") {
        truthy(&json(flag)?)?;
        rejected_at_call_site(run, outcomes)
            .map_err(|m| m.context("augment_rejects_at_call_site: "))?;
    }
    if let Some(id) = expected.get("invocation_id") {
        let want = id.str()?;
        let roots: Vec<String> = run
            .forest
            .spans
            .iter()
            .filter(|s| s.name == openarmature_observability::attributes::INVOCATION_SPAN)
            .filter_map(|s| {
                crate::obs::spans::attr_str(
                    s,
                    openarmature_observability::attributes::INVOCATION_ID,
                )
            })
            .collect();
        if roots.is_empty() || roots.iter().any(|r| r != want) {
            return mismatch(format!(
                "invocation_id: invocation spans carry {roots:?}, expected {want}"
            ));
        }
    }
    let finals = super::lock(&run.meta.finals).clone();
    if let Some(bounds) = expected.get("final_state_bounds") {
        let Some(Some(state)) = finals.first() else {
            return mismatch("final_state_bounds: the invocation did not complete");
        };
        for (field, b) in bounds.entries()? {
            let b = json(b)?;
            let got = state.get(&field).and_then(Value::as_i64);
            let (min, max) = (
                b.get("min").and_then(Value::as_i64),
                b.get("max").and_then(Value::as_i64),
            );
            let ok = got.is_some_and(|g| min.is_none_or(|m| g >= m) && max.is_none_or(|m| g <= m));
            if !ok {
                return mismatch(format!(
                    "final_state_bounds.{field}: {got:?} is not within {b}"
                ));
            }
        }
    }
    if let Some(per) = expected.get("per_invocation") {
        let names: Vec<&String> = run.meta.sequence.iter().map(|(n, _)| n).collect();
        let state_of = |name: &str| -> Check<&Value> {
            let i = names
                .iter()
                .position(|n| *n == name)
                .ok_or(format!("no invocation `{name}`"))?;
            finals
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(|| Failure::mismatch(format!("`{name}` did not complete")))
        };
        for (name, flags) in per.entries()? {
            let state = state_of(&name)?;
            for (flag, want) in flags.entries()? {
                per_invocation_flag(state, &flag, &json(want)?, &state_of)
                    .map_err(|m| m.context(format!("per_invocation.{name}.{flag}: ")))?;
            }
        }
    }
    Ok(())
}

/// `<field>_is_non_empty`, `<field>_disjoint_from_<invocation>`, or a state field.
fn per_invocation_flag<'s>(
    state: &Value,
    flag: &str,
    want: &Value,
    state_of: &dyn Fn(&str) -> Check<&'s Value>,
) -> Check {
    let events = |v: Option<&Value>| -> Vec<String> {
        v.and_then(|b| b.get("events"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(field) = flag.strip_suffix("_is_non_empty") {
        truthy(want)?;
        return match state.get(field) {
            Some(Value::Object(m)) if !m.is_empty() => Ok(()),
            other => mismatch(format!("`{field}` is {other:?}")),
        };
    }
    if let Some((field, other)) = flag.split_once("_disjoint_from_") {
        truthy(want)?;
        let mine = events(state.get(field));
        let theirs = events(state_of(other)?.get(field));
        if mine.is_empty() || mine.iter().any(|e| theirs.contains(e)) {
            return mismatch(format!("{mine:?} vs {theirs:?}"));
        }
        return Ok(());
    }
    match state.get(flag) {
        Some(got) if got == want => Ok(()),
        got => mismatch(format!("state field is {got:?}, expected {want}")),
    }
}

fn rejected_at_call_site(run: &Run<'_>, outcomes: &[Outcome]) -> Check {
    let records = run.meta.records();
    let Some(keys) = records.iter().find_map(|r| match r {
        Record::Augment {
            entries,
            rejected: Some(c),
            ..
        } if c == openarmature_graph::metadata::INVOCATION_METADATA_INVALID => Some(entries),
        _ => None,
    }) else {
        return mismatch("no set_invocation_metadata call was rejected");
    };
    let failed =
        |o: &Outcome| matches!(o, Outcome::Failed { category, .. } if category == "node_exception");
    if !outcomes.first().is_some_and(failed) {
        return mismatch("the invocation did not fail with node_exception");
    }
    let chained = run.events.iter().filter_map(|e| e.as_node()).any(|n| {
        n.phase == Phase::Completed
            && n.error.as_ref().is_some_and(|e| {
                e.chain.iter().any(|l| {
                    l.category.as_deref()
                        == Some(openarmature_graph::metadata::INVOCATION_METADATA_INVALID)
                })
            })
    });
    if !chained {
        return mismatch("no completed event carries the MetadataError in its cause chain");
    }
    for key in keys.keys() {
        let attr = format!("openarmature.user.{key}");
        if let Some(s) = run
            .forest
            .spans
            .iter()
            .find(|s| crate::obs::spans::attr(s, &attr).is_some())
        {
            return mismatch(format!("span `{}` carries `{attr}`", s.name));
        }
        if captures(&records)
            .iter()
            .any(|(_, _, read)| read.contains_key(key))
        {
            return mismatch(format!("a later read sees `{key}`"));
        }
    }
    Ok(())
}

/// The invariants of a direct call outside any invocation: whether each holds of what
/// it returned.
const DIRECT_CALL: &Table<fn(&InvocationMetadata) -> bool> = &[
    ("outside_invocation_returns_empty_mapping", |read| {
        read.is_empty()
    }),
    // Reaching the check means the call returned: it has no error path.
    ("outside_invocation_does_not_raise", |_| true),
    // `InvocationMetadata` only dereferences to `&Map`: no mutation API.
    ("outside_invocation_return_is_immutable", |read| {
        read.ptr_eq(&get_invocation_metadata())
    }),
];

/// The names [`DIRECT_CALL`] knows (for [`crate::table::registry`]).
pub(crate) const DIRECT_CALL_NAMES: fn() -> Vec<&'static str> = || names(DIRECT_CALL);

/// 046 `direct_call: {operation: get_invocation_metadata}` outside any invocation.
pub(crate) fn direct_call(case: &Y<'_>) -> Check {
    case.check_keys(&["name", "description", "direct_call", "expected"])?;
    let call = case.req("direct_call")?;
    call.check_keys(&["operation"])?;
    let op = call.req("operation").and_then(|o| o.str())?;
    if op != "get_invocation_metadata" {
        return Err(Failure::unsupported(format!(
            "fixture_directive_unknown: direct_call operation `{op}`"
        )));
    }
    // The return type is the immutable snapshot; there is no error path to raise.
    let read: InvocationMetadata = get_invocation_metadata();
    let expected = case.req("expected")?;
    expected.check_keys(&["direct_call_result", "invariants"])?;
    if let Some(r) = expected.get("direct_call_result") {
        r.check_keys(&["value", "type", "exception"])?;
        let want = r.req("value").and_then(|v| v.json())?;
        if Value::from(read.clone()) != want {
            return mismatch(format!(
                "direct_call_result.value: {read:?}, expected {want}"
            ));
        }
        let ty = r.req("type").and_then(|t| t.str())?;
        if ty != "immutable_mapping" {
            return mismatch(format!("direct_call_result.type: `{ty}` is not supported"));
        }
        if !r.req("exception")?.is_null() {
            return mismatch("direct_call_result.exception: only null is supported");
        }
    }
    if let Some(inv) = expected.get("invariants") {
        for (name, v) in inv.entries()? {
            truthy(&v.json()?)?;
            if !lookup(DIRECT_CALL, &name).is_some_and(|holds| holds(&read)) {
                return mismatch(format!("invariant {name} does not hold or has no check"));
            }
        }
    }
    Ok(())
}
