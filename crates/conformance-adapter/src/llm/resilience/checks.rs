//! The extension expectations of a call:
//!
//! - `usage` (attempt_accounting): `{final, billed, unattributed, calls: [{final,
//!   billed, attempts, wire_requests, call_ids, node_attempts, succeeded}]}`; token
//!   counts are `{input, output[, total]}`, `final: null` when no attempt
//!   succeeded; `calls` lists every logical call, in order;
//! - `sleeps_seconds`: every backoff sleep requested (both lanes), in order;
//! - `breaker_state` / `breaker_transitions` (circuit_breaker): the state after the
//!   call / every transition during it, `{from, to, reason}`;
//! - `budget` (retry_budget): the endpoint budget's counters after the call,
//!   `{first_attempts, retries, denied}`;
//! - `degraded`: the node degraded (`in_graph` + `failure_isolation`);
//! - `extension_events`: the extension events observers received (`in_graph`),
//!   `{name, attributes}` (attributes matched as a subset).

use openarmature_llm::resilience::accounting::{CallUsage, TokenCounts};
use serde_json::{json, Value};

use super::exec::Outcome;
use super::setup::{EndpointSetup, Extensions};
use crate::failure::{Check, Failure};
use crate::llm::CallSpec;
use crate::matchers::json_eq;
use crate::yaml::Y;

fn n(y: &Y<'_>) -> Check<u64> {
    u64::try_from(y.i64()?).map_err(|_| Failure::from(y.invalid("a count")))
}

fn counts(y: &Y<'_>, got: Option<TokenCounts>, what: &str) -> Check {
    if y.is_null() {
        return match got {
            None => Ok(()),
            Some(g) => Err(format!("{what}: expected none, got {g:?}").into()),
        };
    }
    y.check_keys(&["input", "output", "total"])?;
    let g = got.ok_or_else(|| format!("{what}: expected usage, got none"))?;
    for (key, value) in [("input", g.input), ("output", g.output), ("total", g.total)] {
        if let Some(want) = y.get(key) {
            let want = n(&want)?;
            if want != value {
                return Err(format!("{what}.{key}: expected {want}, got {value} ({g:?})").into());
            }
        }
    }
    Ok(())
}

fn logical_call(y: &Y<'_>, c: &CallUsage, what: &str) -> Check {
    y.check_keys(&[
        "final",
        "billed",
        "attempts",
        "wire_requests",
        "call_ids",
        "node_attempts",
        "succeeded",
    ])?;
    if let Some(f) = y.get("final") {
        counts(&f, c.final_usage(), &format!("{what}.final"))?;
    }
    if let Some(b) = y.get("billed") {
        counts(&b, Some(c.billed()), &format!("{what}.billed"))?;
    }
    let pairs = [
        ("attempts", c.attempts.len()),
        ("wire_requests", c.wire_requests()),
        ("call_ids", c.call_ids.len()),
    ];
    for (key, got) in pairs {
        if let Some(want) = y.get(key) {
            let want = n(&want)?;
            if usize::try_from(want).ok() != Some(got) {
                return Err(format!("{what}.{key}: expected {want}, got {got}").into());
            }
        }
    }
    if let Some(want) = y.get("node_attempts") {
        let want = want.json()?;
        let got = json!(c
            .attempts
            .iter()
            .map(|a| a.node_attempt_index)
            .collect::<Vec<_>>());
        if !json_eq(&got, &want) {
            return Err(format!("{what}.node_attempts: expected {want}, got {got}").into());
        }
    }
    if let Some(s) = y.get("succeeded") {
        let want = s.bool()?;
        if want != c.succeeded() {
            return Err(format!("{what}.succeeded: expected {want}").into());
        }
    }
    Ok(())
}

fn usage(y: &Y<'_>, out: &Outcome) -> Check {
    y.check_keys(&["final", "billed", "unattributed", "calls"])?;
    let u = out
        .usage
        .as_ref()
        .ok_or("expected.usage: the aggregator saw no LLM attempt")?;
    if let Some(f) = y.get("final") {
        counts(&f, Some(u.final_usage()), "usage.final")?;
    }
    if let Some(b) = y.get("billed") {
        counts(&b, Some(u.billed()), "usage.billed")?;
    }
    if let Some(want) = y.get("unattributed") {
        let want = n(&want)?;
        if usize::try_from(want).ok() != Some(u.unattributed.len()) {
            return Err(format!(
                "usage.unattributed: expected {want}, got {}",
                u.unattributed.len()
            )
            .into());
        }
    }
    if let Some(calls) = y.get("calls") {
        let want = calls.seq()?;
        if want.len() != u.calls.len() {
            return Err(format!(
                "usage.calls: expected {} logical calls, got {}: {:?}",
                want.len(),
                u.calls.len(),
                u.calls
                    .iter()
                    .map(|c| &c.logical_call_id)
                    .collect::<Vec<_>>()
            )
            .into());
        }
        for (i, (w, c)) in want.iter().zip(&u.calls).enumerate() {
            logical_call(w, c, &format!("usage.calls[{i}]"))?;
        }
    }
    Ok(())
}

/// Asserts the extension expectations of `spec`.
pub(super) fn call(
    spec: &CallSpec<'_>,
    ext: &Extensions,
    out: &Outcome,
    endpoint: Option<&EndpointSetup>,
) -> Check {
    let Some(expected) = spec.get("expected") else {
        return Ok(());
    };
    if let Some(u) = expected.get("usage") {
        ext.require("attempt_accounting", &u)?;
        usage(&u, out)?;
    }
    if let Some(s) = expected.get("sleeps_seconds") {
        let want: Vec<f64> = s
            .seq()?
            .iter()
            .map(|x| x.f64().map_err(Failure::from))
            .collect::<Result<_, _>>()?;
        let got: Vec<f64> = out.run.sleeps.iter().map(|d| d.as_secs_f64()).collect();
        let same =
            want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| (w - g).abs() < 1e-6);
        if !same {
            return Err(format!("expected.sleeps_seconds: expected {want:?}, got {got:?}").into());
        }
    }
    if let Some(s) = expected.get("breaker_state") {
        ext.require("circuit_breaker", &s)?;
        let want = s.str()?;
        let got = endpoint
            .and_then(|e| e.endpoint.circuit_breaker())
            .map(|b| b.state().as_str())
            .ok_or("expected.breaker_state: the case has no `endpoint.circuit_breaker`")?;
        if want != got {
            return Err(format!("expected.breaker_state: expected {want}, got {got}").into());
        }
    }
    if let Some(t) = expected.get("breaker_transitions") {
        ext.require("circuit_breaker", &t)?;
        let want = t.json()?;
        let got = Value::Array(
            out.transitions
                .iter()
                .map(|(from, to, reason)| json!({"from": from, "to": to, "reason": reason}))
                .collect(),
        );
        if !json_eq(&got, &want) {
            return Err(format!("expected.breaker_transitions: expected {want}, got {got}").into());
        }
    }
    if let Some(b) = expected.get("budget") {
        ext.require("retry_budget", &b)?;
        b.check_keys(&["first_attempts", "retries", "denied"])?;
        let snap = endpoint
            .and_then(|e| e.bucket.as_ref())
            .map(|b| b.snapshot())
            .ok_or("expected.budget: the case has no `endpoint.retry_budget`")?;
        for (key, got) in [
            ("first_attempts", snap.first_attempts),
            ("retries", snap.retries),
            ("denied", snap.denied),
        ] {
            if let Some(w) = b.get(key) {
                let want = n(&w)?;
                if want != got {
                    return Err(format!("expected.budget.{key}: expected {want}, got {got}").into());
                }
            }
        }
    }
    if let Some(d) = expected.get("degraded") {
        let want = d.bool()?;
        if want != out.degraded {
            return Err(format!("expected.degraded: expected {want}, got {}", out.degraded).into());
        }
    }
    if let Some(list) = expected.get("extension_events") {
        let want = list.seq()?;
        if want.len() != out.events.len() {
            return Err(format!(
                "expected.extension_events: expected {}, got {}: {:?}",
                want.len(),
                out.events.len(),
                out.events
                    .iter()
                    .map(|e| (&e.name, &e.attributes))
                    .collect::<Vec<_>>()
            )
            .into());
        }
        for (i, (w, e)) in want.iter().zip(&out.events).enumerate() {
            w.check_keys(&["name", "attributes"])?;
            if let Some(name) = w.get("name") {
                let name = name.str()?;
                if name != e.name {
                    return Err(format!(
                        "expected.extension_events[{i}].name: expected {name}, got {}",
                        e.name
                    )
                    .into());
                }
            }
            if let Some(a) = w.get("attributes") {
                for (k, v) in a.entries()? {
                    let v = v.json()?;
                    let got = e.attributes.get(&k).cloned().unwrap_or(Value::Null);
                    if !json_eq(&got, &v) {
                        return Err(format!(
                            "expected.extension_events[{i}].attributes.{k}: expected {v}, got {got}"
                        )
                        .into());
                    }
                }
            }
        }
    }
    Ok(())
}
