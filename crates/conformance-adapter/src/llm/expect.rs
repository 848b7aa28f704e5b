//! Spec: conformance-adapter §5.8, §5.11–§5.13 and the llm-provider fixture headers
//! (001: `response` / `raw_check` / `raises`; 005: literal `expected_wire_request`;
//! 021/026: the `"*"` wire wildcard) — the llm-provider assertions.

use openarmature_llm::{Content, LlmError, Response};
use serde_json::{json, Value};

use super::{invariants, CallRun, CallSpec};
use crate::failure::{Check, Failure};
use crate::matchers::json_eq;
use crate::yaml::Y;

const EXPECTED_KEYS: &[&str] = &[
    "response",
    "raises",
    "success",
    "provider_call_count",
    "caller_messages_unmodified",
    "wire_requests",
    "llm_spans",
    "invariants",
    "no_token_events_emitted",
];

/// Asserts everything a call declares.
pub(crate) fn call(spec: &CallSpec<'_>, run: &CallRun) -> Check {
    let expected = spec.get("expected");
    if let Some(e) = &expected {
        e.check_keys(EXPECTED_KEYS)?;
    }
    let get = |k: &str| expected.as_ref().and_then(|e| e.get(k));
    let wire_path = run.mapping.wire_path(&run.bound_model, run.streamed);
    if let Some(stray) = run.requests.iter().find(|r| r.path != wire_path) {
        return Err(format!("a request went to {} instead of {wire_path}", stray.path).into());
    }

    match (get("raises"), &run.result) {
        (Some(raises), Err(e)) => self::raises(&raises, e)?,
        (Some(raises), Ok(_)) => {
            return Err(format!(
                "expected a raise ({}), but the call succeeded",
                raises
                    .get("category")
                    .and_then(|c| c.str().ok())
                    .unwrap_or("?")
            )
            .into())
        }
        (None, Err(e)) => {
            return Err(format!("unexpected error {}: {e}", e.category().as_str()).into())
        }
        (None, Ok(_)) => {}
    }
    if let Some(r) = get("response") {
        let response = run
            .response()
            .ok_or("expected.response, but the operation returned no response")?;
        let served = run.requests.last().and_then(|c| c.served.as_ref());
        self::response(&r, response, served).map_err(|m| m.context("expected.response: "))?;
    }
    if let Some(s) = get("success") {
        let want = s.bool()?;
        if want != run.result.is_ok() {
            return Err(format!(
                "expected.success: {want}, got {:?}",
                run.result.as_ref().err()
            )
            .into());
        }
    }
    if let Some(n) = get("provider_call_count") {
        let want = usize::try_from(n.i64()?).map_err(|_| Failure::from(n.invalid("a count")))?;
        if run.requests.len() != want {
            return Err(format!(
                "expected.provider_call_count: {want}, got {}",
                run.requests.len()
            )
            .into());
        }
    }
    if let Some(flag) = get("caller_messages_unmodified") {
        if flag.bool()? && run.caller_messages != run.caller_messages_after {
            return Err("caller_messages_unmodified: the caller's messages changed".into());
        }
    }
    if let Some(flag) = get("no_token_events_emitted") {
        if flag.bool()? && !run.tokens.is_empty() {
            return Err(format!(
                "no_token_events_emitted: {} LlmTokenEvent(s) were dispatched",
                run.tokens.len()
            )
            .into());
        }
    }
    if let Some(w) = get("wire_requests") {
        wire_requests(&w, run).map_err(|m| m.context("expected.wire_requests: "))?;
    }
    if let Some(s) = get("llm_spans") {
        llm_spans(&s, run).map_err(|m| m.context("expected.llm_spans: "))?;
    }
    if let Some(inv) = get("invariants") {
        invariants::check(&inv, spec, run)?;
    }

    let wire = spec.get("expected_wire_request");
    let checks = spec.get("expected_wire_request_checks");
    let absent = spec.get("expected_wire_request_absent_keys");
    if wire.is_some() || checks.is_some() || absent.is_some() {
        let body = run
            .bodies()
            .last()
            .copied()
            .ok_or("expected_wire_request: no request was sent")?;
        if let Some(w) = wire {
            let mut want = w.json()?;
            if run.mapping.model_in_path() {
                // Register L5: the model is the URL path segment, checked above.
                let model = want.as_object_mut().and_then(|o| o.remove("model"));
                if let Some(m) = model.filter(|m| m.as_str() != Some(run.bound_model.as_str())) {
                    return Err(format!(
                        "expected_wire_request.model: expected {m}, the path names {}",
                        run.bound_model
                    )
                    .into());
                }
            }
            wire_match(&want, body, "$").map_err(|m| m.context("expected_wire_request: "))?;
        }
        if let Some(c) = checks {
            wire_checks(&c, body, run.response_schema.as_ref())
                .map_err(|m| m.context("expected_wire_request_checks: "))?;
        }
        if let Some(a) = absent {
            for key in a.strings()? {
                if body.get(&key).is_some() {
                    return Err(format!(
                        "expected_wire_request_absent_keys: `{key}` is on the wire: {body}"
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}

/// The assistant message as fixtures spell it.
pub(crate) fn message_json(response: &Response) -> Value {
    let content = match &response.message.content {
        None => Value::Null,
        Some(Content::Text(t)) => Value::from(t.as_str()),
        Some(blocks @ Content::Blocks(_)) => serde_json::to_value(blocks).unwrap_or(Value::Null),
    };
    let tool_calls = if response.message.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::Array(
            response
                .message
                .tool_calls
                .iter()
                .map(|c| {
                    let mut call = json!({"id": c.id, "name": c.name, "arguments": c.arguments});
                    if let (Some(sig), Value::Object(map)) = (&c.signature, &mut call) {
                        map.insert("signature".into(), Value::from(sig.as_str()));
                    }
                    call
                })
                .collect(),
        )
    };
    json!({"role": "assistant", "content": content, "tool_calls": tool_calls})
}

fn subset(expected: &Y<'_>, actual: &Value, what: &str) -> Check {
    for (key, ev) in expected.entries()? {
        let ev = ev.json()?;
        let av = actual.get(&key).unwrap_or(&Value::Null);
        if !json_eq(av, &ev) {
            return Err(format!("{what}.{key}: expected {ev}, got {av}").into());
        }
    }
    Ok(())
}

fn response(expected: &Y<'_>, response: &Response, served: Option<&Value>) -> Check {
    expected.check_keys(&["message", "finish_reason", "usage", "parsed", "raw_check"])?;
    if let Some(m) = expected.get("message") {
        subset(&m, &message_json(response), "message")?;
    }
    if let Some(f) = expected.get("finish_reason") {
        let want = f.str()?;
        if response.finish_reason.as_str() != want {
            return Err(format!(
                "finish_reason: expected {want}, got {}",
                response.finish_reason.as_str()
            )
            .into());
        }
    }
    if let Some(u) = expected.get("usage") {
        let usage = serde_json::to_value(response.usage).unwrap_or(Value::Null);
        subset(&u, &usage, "usage")?;
    }
    if let Some(p) = expected.get("parsed") {
        let want = p.json()?;
        let got = response.parsed.clone().unwrap_or(Value::Null);
        if !json_eq(&got, &want) {
            return Err(format!("parsed: expected {want}, got {got}").into());
        }
    }
    if let Some(rc) = expected.get("raw_check") {
        rc.check_keys(&["required_keys"])?;
        let served = served.ok_or("raw_check: no mock body was served")?;
        for key in rc.req("required_keys").and_then(|k| k.strings())? {
            let got = response
                .raw
                .get(&key)
                .ok_or_else(|| format!("raw_check: `{key}` missing from raw"))?;
            if let Value::Array(chunks) = served {
                streamed_raw_key(&key, got, chunks)?;
                continue;
            }
            if Some(got) != served.get(&key) {
                return Err(format!(
                    "raw_check: raw.{key} is {got}, the provider sent {:?}",
                    served.get(&key)
                )
                .into());
            }
        }
    }
    Ok(())
}

/// `raw_check` on a streamed call (register L4): the assembled raw is
/// implementation-defined, so `object` and `choices` need only be present; `usage` is
/// the terminal chunk's block verbatim (§6 *Streaming assembly*); any other key is
/// the chunks' own value.
fn streamed_raw_key(key: &str, got: &Value, chunks: &[Value]) -> Check {
    let want = match key {
        "object" | "choices" => return Ok(()),
        "usage" => chunks.iter().rev().find_map(|c| c.get("usage")),
        _ => chunks.iter().find_map(|c| c.get(key)),
    };
    if want == Some(got) {
        Ok(())
    } else {
        Err(format!("raw_check: raw.{key} is {got}, the stream carried {want:?}").into())
    }
}

fn raises(expected: &Y<'_>, error: &LlmError) -> Check {
    expected.check_keys(&["category", "message", "retry_after_seconds", "carries"])?;
    let want = expected
        .req("category")
        .and_then(|c| c.str().map(str::to_owned))?;
    if error.category().as_str() != want {
        return Err(format!(
            "expected.raises.category: expected {want}, got {} ({error})",
            error.category().as_str()
        )
        .into());
    }
    if let Some(m) = expected.get("message") {
        let want = m.str()?;
        if error.to_string() != want {
            return Err(format!(
                "expected.raises.message: expected {want:?}, got {:?}",
                error.to_string()
            )
            .into());
        }
    }
    if let Some(s) = expected.get("retry_after_seconds") {
        let want = s.f64()?;
        let got = error.retry_after().map(|d| d.as_secs_f64());
        if got != Some(want) {
            return Err(format!(
                "expected.raises.retry_after_seconds: expected {want}, got {got:?}"
            )
            .into());
        }
    }
    if let Some(c) = expected.get("carries") {
        carries(&c, error).map_err(|m| m.context("expected.raises.carries: "))?;
    }
    Ok(())
}

/// The fields a raised error exposes, by their llm-provider §7 names.
fn carried_field(error: &LlmError, field: &str) -> Check<Value> {
    let soi = error.structured_output();
    Ok(match field {
        "category" => Value::from(error.category().as_str()),
        "message" => Value::from(error.to_string()),
        "retry_after" => error
            .retry_after()
            .map_or(Value::Null, |d| json!(d.as_secs_f64())),
        "response_schema" => soi.map_or(Value::Null, |s| s.response_schema.clone()),
        "output_content" => soi.map_or(Value::Null, |s| Value::from(s.output_content.as_str())),
        "error_message" => soi.map_or(Value::Null, |s| Value::from(s.error_message.as_str())),
        "finish_reason" => soi.map_or(Value::Null, |s| Value::from(s.finish_reason.as_str())),
        "usage" => soi.map_or(Value::Null, |s| {
            serde_json::to_value(s.usage).unwrap_or(Value::Null)
        }),
        other => return Err(format!("`{other}` names no field the error exposes").into()),
    })
}

fn carries(expected: &Y<'_>, error: &LlmError) -> Check {
    for (key, ev) in expected.entries()? {
        if let Some(field) = key.strip_suffix("_present") {
            let want = ev.bool()?;
            let got = carried_field(error, field)?;
            let present = !got.is_null() && got != "";
            if present != want {
                return Err(format!("{key}: expected {want}, got {got}").into());
            }
        } else if let Some(field) = key.strip_suffix("_mentions") {
            let want = ev.str()?;
            let got = carried_field(error, field)?;
            if !got.as_str().is_some_and(|s| s.contains(want)) {
                return Err(format!("{key}: {got} does not mention {want:?}").into());
            }
        } else {
            let want = ev.json()?;
            let got = carried_field(error, &key)?;
            match (&want, &got) {
                (Value::Object(w), _) => {
                    for (k, v) in w {
                        let g = got
                            .get(k)
                            .ok_or_else(|| format!("{key}.{k}: missing, got {got}"))?;
                        if !json_eq(g, v) {
                            return Err(format!("{key}.{k}: expected {v}, got {g}").into());
                        }
                    }
                }
                _ if json_eq(&got, &want) => {}
                _ => return Err(format!("{key}: expected {want}, got {got}").into()),
            }
        }
    }
    Ok(())
}

/// Literal key-by-key comparison (key order irrelevant, extra keys fail); `"*"` in
/// the expectation matches any non-empty string. Register L6: a tool call's
/// `function.arguments` string (§8.1.1: "a JSON-encoded string", separators
/// unspecified; 005 pins compact, 053 spaced) is compared as the JSON it encodes.
pub(crate) fn wire_match(expected: &Value, actual: &Value, path: &str) -> Check {
    if path.ends_with(".function.arguments") {
        if let (Value::String(e), Value::String(a)) = (expected, actual) {
            if let (Ok(ev), Ok(av)) = (
                serde_json::from_str::<Value>(e),
                serde_json::from_str::<Value>(a),
            ) {
                return if json_eq(&av, &ev) {
                    Ok(())
                } else {
                    Err(format!("{path}: expected the JSON {e}, got {a}").into())
                };
            }
        }
    }
    match (expected, actual) {
        (Value::String(w), _) if w == "*" => match actual {
            Value::String(s) if !s.is_empty() => Ok(()),
            _ => Err(format!("{path}: expected a non-empty string, got {actual}").into()),
        },
        (Value::Object(e), Value::Object(a)) => {
            if let Some((extra, value)) = a.iter().find(|(k, _)| !e.contains_key(*k)) {
                return Err(format!("{path}: unexpected key `{extra}` = {value}").into());
            }
            for (k, ev) in e {
                let av = a
                    .get(k)
                    .ok_or_else(|| format!("{path}: missing key `{k}`"))?;
                wire_match(ev, av, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            crate::matchers::pairwise(e, a, actual, path, wire_match)
        }
        _ if json_eq(actual, expected) => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}").into()),
    }
}

fn wire_checks(checks: &Y<'_>, body: &Value, schema: Option<&Value>) -> Check {
    for (key, v) in checks.entries()? {
        if !v.bool()? {
            return Err(format!("`{key}: false` is not a supported check").into());
        }
        if key == "system_message_content_references_schema" {
            let schema = schema.ok_or("the call has no response_schema")?;
            let first = body.get("messages").and_then(|m| m.get(0));
            let content = first
                .filter(|m| m.get("role") == Some(&Value::from("system")))
                .and_then(|m| m.get("content"))
                .and_then(Value::as_str)
                .ok_or("the first wire message is not a system message with string content")?;
            let canonical = openarmature_llm::schema::canonical_string(schema);
            if !content.contains(&canonical) {
                return Err(format!(
                    "the system directive does not contain the schema {canonical}: {content:?}"
                )
                .into());
            }
        } else if let Some(field) = key.strip_suffix("_absent") {
            if let Some(v) = body.get(field) {
                return Err(format!("`{field}` is on the wire: {v}").into());
            }
        } else {
            return Err(format!("unknown check `{key}`").into());
        }
    }
    Ok(())
}

/// §5.11 `wire_requests`: one entry per attempt.
fn wire_requests(expected: &Y<'_>, run: &CallRun) -> Check {
    let entries = expected.seq()?;
    let bodies = run.bodies();
    if entries.len() != bodies.len() {
        return Err(format!(
            "{} entries, but the loop issued {} requests",
            entries.len(),
            bodies.len()
        )
        .into());
    }
    let messages = |b: &Value| {
        b.get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let base = bodies.first().map_or(0, |b| messages(b).len());
    for (i, (entry, body)) in entries.iter().zip(&bodies).enumerate() {
        entry.check_keys(&["sampling", "appended_messages"])?;
        if let Some(s) = entry.get("sampling") {
            for (key, ev) in s.entries()? {
                let want = ev.json()?;
                let got = body.get(&key).unwrap_or(&Value::Null);
                if !json_eq(got, &want) {
                    return Err(
                        format!("attempt {i}: sampling.{key}: expected {want}, got {got}").into(),
                    );
                }
            }
        }
        if let Some(a) = entry.get("appended_messages") {
            let sent = messages(body);
            let appended = sent.get(base..).unwrap_or_default();
            let want = a.seq()?;
            if want.len() != appended.len() {
                return Err(format!(
                    "attempt {i}: expected {} appended messages, got {}: {appended:?}",
                    want.len(),
                    appended.len()
                )
                .into());
            }
            for (j, (w, got)) in want.iter().zip(appended).enumerate() {
                w.check_keys(&["role", "content", "content_contains"])?;
                let role = w.req("role").and_then(|r| r.str().map(str::to_owned))?;
                if got.get("role") != Some(&Value::from(role.as_str())) {
                    return Err(format!(
                        "attempt {i}: appended[{j}]: expected role {role}, got {got}"
                    )
                    .into());
                }
                let content = got
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(c) = w.get("content") {
                    let want = c.str()?;
                    if content != want {
                        return Err(format!("attempt {i}: appended[{j}]: expected content {want:?}, got {content:?}").into());
                    }
                }
                if let Some(cc) = w.get("content_contains") {
                    for needle in cc.strings()? {
                        if !content.contains(&needle) {
                            return Err(format!("attempt {i}: appended[{j}]: {content:?} does not contain {needle:?}").into());
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Register L3: each `llm_spans` entry against the exported span of that attempt.
fn llm_spans(expected: &Y<'_>, run: &CallRun) -> Check {
    let entries = expected.seq()?;
    if entries.len() != run.spans.len() {
        return Err(format!(
            "{} spans expected, but {} `openarmature.llm.complete` spans were exported",
            entries.len(),
            run.spans.len()
        )
        .into());
    }
    for (i, (entry, span)) in entries.iter().zip(&run.spans).enumerate() {
        entry.check_keys(&[
            "attempt_index",
            "attributes",
            "attributes_absent",
            "error_category",
        ])?;
        if !span.under_node {
            return Err(format!("span {i} is not a child of the calling node's span").into());
        }
        if let Some(n) = entry.get("attempt_index") {
            let want = n.i64()?;
            if span.attempt_index != Some(want) {
                return Err(format!(
                    "span {i}: attempt_index {:?}, expected {want}",
                    span.attempt_index
                )
                .into());
            }
        }
        if let Some(c) = entry.get("error_category") {
            let attribute = span.attributes.get("openarmature.error.category");
            if c.is_null() {
                if !span.ok || attribute.is_some() {
                    return Err(format!(
                        "span {i}: expected status OK without an error category, got {:?} / {attribute:?}",
                        span.error
                    ).into());
                }
            } else {
                let want = c.str()?;
                if span.error.as_deref() != Some(want)
                    || attribute.and_then(Value::as_str) != Some(want)
                    || !span.exception
                {
                    return Err(format!(
                        "span {i}: expected ERROR `{want}` (attribute and exception event), got status {:?}, attribute {attribute:?}",
                        span.error
                    ).into());
                }
            }
        }
        if let Some(a) = entry.get("attributes") {
            for (key, ev) in a.entries()? {
                let want = ev.json()?;
                let got = span
                    .attributes
                    .get(&key)
                    .ok_or_else(|| format!("span {i}: attribute `{key}` is missing"))?;
                if !json_eq(got, &want) {
                    return Err(format!("span {i}: {key}: expected {want}, got {got}").into());
                }
            }
        }
        if let Some(a) = entry.get("attributes_absent") {
            for key in a.strings()? {
                if let Some(v) = span.attributes.get(&key) {
                    return Err(format!("span {i}: `{key}` should be absent, got {v}").into());
                }
            }
        }
    }
    Ok(())
}
