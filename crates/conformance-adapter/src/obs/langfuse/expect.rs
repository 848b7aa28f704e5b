//! Spec: observability §8 fixtures (022 header: the `langfuse_trace` shape) and
//! conformance-adapter §5.8 / §5.10 — matching `expected.langfuse_trace(s)` against
//! the recorded Langfuse traces: metadata and model parameters are subsets, children
//! lists are exhaustive (matched as multisets), tokens bind across the case.

use openarmature_observability::langfuse::{LangfuseTrace, Observation};
use serde_json::Value;

use crate::failure::{Check, Failure};
use crate::matchers::{check, Bindings};
use crate::yaml::Y;

const TRACE_KEYS: &[&str] = &[
    "id",
    "name",
    "metadata",
    "observations",
    "input",
    "output",
    "sessionId",
    "userId",
];

const OBSERVATION_KEYS: &[&str] = &[
    "type",
    "name",
    "metadata",
    "level",
    "statusMessage",
    "children",
    "model",
    "modelParameters",
    "usage",
    "usageDetails",
    "input",
    "input_parses_as_messages",
    "input_is_raw_string_with_marker",
    "output",
    "prompt_entity_link",
    "prompt_entity_link_absent",
];

/// The §5.5.5 truncation marker's fixed prefix.
const MARKER: &str = "…[truncated, ";

/// A value matcher object (`{non_empty_string: true, harness_parameterized: …}`).
fn matcher_object(want: &Value, got: &Value, path: &str) -> Option<Check> {
    let map = want.as_object()?;
    let known = ["non_empty_string", "harness_parameterized"];
    if map.is_empty() || !map.keys().all(|k| known.contains(&k.as_str())) {
        return None;
    }
    for (k, v) in map {
        let ok = match (k.as_str(), v) {
            ("non_empty_string", Value::Bool(true)) => got.as_str().is_some_and(|s| !s.is_empty()),
            ("harness_parameterized", Value::String(p)) if p == "implementation_name" => {
                got.as_str() == Some(openarmature_observability::attributes::IMPLEMENTATION)
            }
            _ => {
                return Some(Err(format!(
                    "{path}: fixture_directive_unknown: matcher {k}"
                )
                .into()))
            }
        };
        if !ok {
            return Some(Err(
                format!("{path}: {got} does not satisfy {k}: {v}").into()
            ));
        }
    }
    Some(Ok(()))
}

/// `want`'s keys must be in `got`, each matching.
fn subset(
    want: &Y<'_>,
    got: &serde_json::Map<String, Value>,
    b: &mut Bindings,
    path: &str,
) -> Check {
    for (k, v) in want.entries()? {
        let v = v.json()?;
        let here = format!("{path}.{k}");
        let actual = got
            .get(&k)
            .ok_or_else(|| format!("{here}: missing (actual {got:?})"))?;
        match matcher_object(&v, actual, &here) {
            Some(verdict) => verdict?,
            None => check(&v, actual, b, &here)?,
        }
    }
    Ok(())
}

/// Compares an optional actual with an expected value where `null` means absent.
fn optional(want: &Y<'_>, got: Option<&Value>, b: &mut Bindings, path: &str) -> Check {
    let want = want.json()?;
    match (want.is_null(), got) {
        (true, None) => Ok(()),
        (true, Some(v)) => Err(format!("{path}: expected absent, got {v}").into()),
        (false, None) => Err(format!("{path}: missing").into()),
        (false, Some(v)) => check(&want, v, b, path),
    }
}

/// Matches one expected trace.
pub(crate) fn match_trace(
    want: &Y<'_>,
    got: &LangfuseTrace,
    b: &Bindings,
    path: &str,
) -> Check<Bindings> {
    want.check_keys(TRACE_KEYS)?;
    let mut b = b.clone();
    if let Some(id) = want.get("id") {
        check(
            &id.json()?,
            &Value::from(got.id.clone()),
            &mut b,
            &format!("{path}.id"),
        )?;
    }
    if let Some(n) = want.get("name") {
        check(
            &n.json()?,
            &Value::from(got.name.clone()),
            &mut b,
            &format!("{path}.name"),
        )?;
    }
    if let Some(m) = want.get("metadata") {
        subset(&m, &got.metadata, &mut b, &format!("{path}.metadata"))?;
    }
    if let Some(v) = want.get("input") {
        optional(&v, got.input.as_ref(), &mut b, &format!("{path}.input"))?;
    }
    if let Some(v) = want.get("output") {
        optional(&v, got.output.as_ref(), &mut b, &format!("{path}.output"))?;
    }
    let session = got.session_id.clone().map(Value::String);
    if let Some(v) = want.get("sessionId") {
        optional(&v, session.as_ref(), &mut b, &format!("{path}.sessionId"))?;
    }
    let user = got.user_id.clone().map(Value::String);
    if let Some(v) = want.get("userId") {
        optional(&v, user.as_ref(), &mut b, &format!("{path}.userId"))?;
    }
    match want.get("observations") {
        Some(list) => match_list(
            &list.seq()?,
            &got.observations,
            &b,
            &format!("{path}.observations"),
        ),
        None => Ok(b),
    }
}

/// Matches an exhaustive list of observations, in any order.
fn match_list(want: &[Y<'_>], got: &[Observation], b: &Bindings, path: &str) -> Check<Bindings> {
    if want.len() != got.len() {
        let names: Vec<&str> = got.iter().map(|o| o.name.as_str()).collect();
        return Err(format!(
            "{path}: expected {} observations, got {}: {names:?}",
            want.len(),
            got.len()
        )
        .into());
    }
    assign(want, got, &mut vec![false; got.len()], b, path)
}

fn assign(
    want: &[Y<'_>],
    got: &[Observation],
    used: &mut Vec<bool>,
    b: &Bindings,
    path: &str,
) -> Check<Bindings> {
    let Some((first, rest)) = want.split_first() else {
        return Ok(b.clone());
    };
    let here = format!("{path}[{}]", used.iter().filter(|u| **u).count());
    let mut error = None;
    for (i, o) in got.iter().enumerate() {
        if used[i] {
            continue;
        }
        match match_observation(first, o, b, &here) {
            Ok(bound) => {
                used[i] = true;
                match assign(rest, got, used, &bound, path) {
                    Ok(done) => return Ok(done),
                    Err(e) => {
                        used[i] = false;
                        error.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                let same = first.get("name").and_then(|n| n.str().ok()) == Some(o.name.as_str());
                if same || error.is_none() {
                    error = Some(e);
                }
            }
        }
    }
    Err(error.unwrap_or_else(|| Failure::mismatch(format!("{here}: no observation left"))))
}

fn match_observation(want: &Y<'_>, o: &Observation, b: &Bindings, path: &str) -> Check<Bindings> {
    want.check_keys(OBSERVATION_KEYS)?;
    let mut b = b.clone();
    let path = format!("{path}({})", o.name);
    let text = |y: &Y<'_>| y.json().map_err(Failure::from);
    if let Some(t) = want.get("type") {
        check(
            &text(&t)?,
            &Value::from(o.kind.as_str()),
            &mut b,
            &format!("{path}.type"),
        )?;
    }
    if let Some(n) = want.get("name") {
        check(
            &text(&n)?,
            &Value::from(o.name.clone()),
            &mut b,
            &format!("{path}.name"),
        )?;
    }
    if let Some(l) = want.get("level") {
        check(
            &text(&l)?,
            &Value::from(o.level.as_str()),
            &mut b,
            &format!("{path}.level"),
        )?;
    }
    let status = o.status_message.clone().map(Value::String);
    if let Some(s) = want.get("statusMessage") {
        optional(
            &s,
            status.as_ref(),
            &mut b,
            &format!("{path}.statusMessage"),
        )?;
    }
    if let Some(m) = want.get("metadata") {
        subset(&m, &o.metadata, &mut b, &format!("{path}.metadata"))?;
    }
    let model = o.model.clone().map(Value::String);
    if let Some(m) = want.get("model") {
        optional(&m, model.as_ref(), &mut b, &format!("{path}.model"))?;
    }
    if let Some(m) = want.get("modelParameters") {
        subset(
            &m,
            &o.model_parameters,
            &mut b,
            &format!("{path}.modelParameters"),
        )?;
    }
    let usage = o.usage.map(|u| u.to_json());
    if let Some(u) = want.get("usage") {
        optional(&u, usage.as_ref(), &mut b, &format!("{path}.usage"))?;
    }
    if let Some(u) = want.get("usageDetails") {
        // Embedding / Retriever observations (§8.4.5 / §8.4.7) carry their own map;
        // a Generation's usageDetails is its usage record.
        let details = o
            .usage_details
            .clone()
            .map(Value::Object)
            .or_else(|| usage.clone());
        optional(
            &u,
            details.as_ref(),
            &mut b,
            &format!("{path}.usageDetails"),
        )?;
    }
    if let Some(v) = want.get("input") {
        optional(&v, o.input.as_ref(), &mut b, &format!("{path}.input"))?;
    }
    if let Some(m) = want.get("input_parses_as_messages") {
        let input = o.input.as_ref().filter(|v| v.is_array());
        optional(
            &m,
            input,
            &mut b,
            &format!("{path}.input_parses_as_messages"),
        )?;
    }
    if let Some(flag) = want.get("input_is_raw_string_with_marker") {
        let raw = o
            .input
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains(MARKER));
        if flag.bool()? != raw {
            return Err(
                format!("{path}.input: {:?} is not a raw truncated string", o.input).into(),
            );
        }
    }
    if let Some(v) = want.get("output") {
        optional(&v, o.output.as_ref(), &mut b, &format!("{path}.output"))?;
    }
    if let Some(v) = want.get("prompt_entity_link") {
        optional(
            &v,
            o.prompt_link.as_ref(),
            &mut b,
            &format!("{path}.prompt_entity_link"),
        )?;
    }
    if let Some(flag) = want.get("prompt_entity_link_absent") {
        if flag.bool()? && o.prompt_link.is_some() {
            return Err(format!("{path}: a prompt link was established").into());
        }
    }
    match want.get("children") {
        Some(list) => match_list(&list.seq()?, &o.children, &b, &format!("{path}.children")),
        None => Ok(b),
    }
}

/// Matches `expected.langfuse_trace` (the first invocation's own trace) and
/// `expected.langfuse_traces` (each entry a distinct recorded trace).
pub(crate) fn check_expected(
    expected: &Y<'_>,
    traces: &[LangfuseTrace],
    b: Bindings,
) -> Check<Bindings> {
    let mut b = b;
    if let Some(want) = expected.get("langfuse_trace") {
        let own = traces
            .iter()
            .find(|t| !t.metadata.contains_key("detached_from_invocation_id"))
            .ok_or("langfuse_trace: no Langfuse trace was recorded")?;
        b = match_trace(&want, own, &b, "langfuse_trace")?;
    }
    if let Some(list) = expected.get("langfuse_traces") {
        let want = list.seq()?;
        b = distinct(&want, traces, &mut vec![false; traces.len()], &b)?;
    }
    Ok(b)
}

fn distinct(
    want: &[Y<'_>],
    got: &[LangfuseTrace],
    used: &mut Vec<bool>,
    b: &Bindings,
) -> Check<Bindings> {
    let Some((first, rest)) = want.split_first() else {
        return Ok(b.clone());
    };
    let mut error = None;
    for (i, t) in got.iter().enumerate() {
        if used[i] {
            continue;
        }
        match match_trace(first, t, b, "langfuse_traces") {
            Ok(bound) => {
                used[i] = true;
                match distinct(rest, got, used, &bound) {
                    Ok(done) => return Ok(done),
                    Err(e) => {
                        used[i] = false;
                        error.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    Err(error.unwrap_or_else(|| {
        Failure::mismatch(format!("langfuse_traces: {} traces recorded", got.len()))
    }))
}
