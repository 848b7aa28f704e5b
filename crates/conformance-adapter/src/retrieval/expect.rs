//! Spec: conformance-adapter §5.15 (*Wire-request assertions*), §5.8
//! (`expected_error`, `final_state`), §5.5 (`contains_event`) — the case-level
//! assertions of a retrieval case.
//!
//! Register V4: `expected_error.category` names the §7 category of the
//! `RetrievalError` carried in the failed invocation's cause chain (the engine wraps
//! it as the node's `node_exception`, FIXTURE-QUIRKS Q1), and `raised_from` the node
//! the engine reports. Register V5: `final_state.<field>` asserts the stored
//! response record key by key — `vectors_length`, `inner_vector_lengths_all_equal`
//! and `results_length` are computed from it, every other key is compared exactly,
//! and each `results` entry is matched on the keys it names (the stand-in fixtures
//! 006–011 list results without `document`).

use serde_json::{Map, Value};

use super::exec::Run;
use super::model::{RecordExpect, WireBodies};
use crate::failure::{Check, Failure};
use crate::http_mock::Captured;
use crate::matchers::{check, each_pair, Bindings};

fn exact(expected: &Value, actual: &Value, path: &str) -> Check {
    check(expected, actual, &mut Bindings::default(), path)
}

/// The URL a request was sent to: the block's scheme (register V1), the `Host`
/// header and the request target.
pub(super) fn request_url(run: &Run<'_>, r: &Captured) -> String {
    let scheme = run.bound.base_url.split("://").next().unwrap_or("http");
    let host = r
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map_or("", |(_, v)| v.as_str());
    format!("{scheme}://{host}{}", r.path)
}

/// `expected_error`, or — without one — a completed invocation.
pub(super) fn outcome(run: &Run<'_>) -> Check {
    match (&run.case.expected_error, &run.graph) {
        (None, Ok(_)) => Ok(()),
        (None, Err(f)) => Err(format!(
            "the invocation failed at `{}` ({:?}): {:?}",
            f.node,
            f.category,
            run.error()
        )
        .into()),
        (Some(e), Ok(_)) => Err(format!(
            "expected {} raised from `{}`; the invocation completed",
            e.category, e.raised_from
        )
        .into()),
        (Some(e), Err(f)) => {
            if f.category.as_deref() != Some(e.category.as_str()) {
                return Err(format!(
                    "expected_error.category: expected {}, the failure carries {:?} ({:?})",
                    e.category,
                    f.category,
                    run.error()
                )
                .into());
            }
            if f.node != e.raised_from {
                return Err(format!(
                    "expected_error.raised_from: expected `{}`, got `{}`",
                    e.raised_from, f.node
                )
                .into());
            }
            Ok(())
        }
    }
}

fn vectors(record: &Value) -> Check<&Vec<Value>> {
    Ok(record
        .get("vectors")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the record has no vectors: {record}"))?)
}

fn record_matches(expect: &RecordExpect, record: &Value, at: &str) -> Check {
    if let Some(n) = expect.vectors_length {
        let got = vectors(record)?.len();
        if got != n {
            return Err(format!("{at}.vectors_length: expected {n}, got {got}").into());
        }
    }
    if let Some(n) = expect.inner_vector_lengths_all_equal {
        let list = vectors(record)?;
        let lengths: Vec<usize> = list
            .iter()
            .map(|v| v.as_array().map_or(0, Vec::len))
            .collect();
        if list.is_empty() || lengths.iter().any(|l| *l != n) {
            return Err(format!(
                "{at}.inner_vector_lengths_all_equal: expected {n}, got {lengths:?}"
            )
            .into());
        }
    }
    if let Some(n) = expect.results_length {
        let got = record
            .get("results")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if got != n {
            return Err(format!("{at}.results_length: expected {n}, got {got}").into());
        }
    }
    let keys = [
        ("vectors", &expect.vectors),
        ("dimensions", &expect.dimensions),
        ("model", &expect.model),
        ("response_id", &expect.response_id),
        ("usage", &expect.usage),
        ("raw", &expect.raw),
    ];
    for (key, want) in keys {
        if let Some(want) = want {
            exact(
                want,
                record.get(key).unwrap_or(&Value::Null),
                &format!("{at}.{key}"),
            )?;
        }
    }
    if let Some(want) = &expect.results {
        let want = want
            .as_array()
            .ok_or_else(|| format!("{at}.results: not a list"))?;
        let got = record
            .get("results")
            .and_then(Value::as_array)
            .ok_or("the record has no results")?;
        each_pair(
            want,
            got,
            || {
                format!(
                    "{at}.results: expected {} entries, got {}: {got:?}",
                    want.len(),
                    got.len()
                )
            },
            |i, w, g| {
                let w = w
                    .as_object()
                    .ok_or_else(|| format!("{at}.results[{i}]: not a mapping"))?;
                for (key, value) in w {
                    exact(
                        value,
                        g.get(key).unwrap_or(&Value::Null),
                        &format!("{at}.results[{i}].{key}"),
                    )?;
                }
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// `expected.final_state`.
pub(super) fn final_state(run: &Run<'_>) -> Check {
    let Some(fields) = &run.case.expected.final_state else {
        return Ok(());
    };
    let state = run
        .graph
        .as_ref()
        .map_err(|f| format!("final_state: the invocation failed at `{}`", f.node))?;
    for (field, expect) in fields {
        let at = format!("final_state.{field}");
        let value = state
            .get(field)
            .ok_or_else(|| format!("{at}: not a declared state field"))?;
        match expect {
            None if value.is_null() => {}
            None => return Err(format!("{at}: expected null, got {value}").into()),
            Some(e) => record_matches(e, value, &at)?,
        }
    }
    Ok(())
}

fn body(r: &Captured, i: usize) -> Check<&Value> {
    Ok(r.json
        .as_ref()
        .ok_or_else(|| format!("request {i} has no JSON body"))?)
}

fn header<'r>(r: &'r Captured, name: &str) -> Option<&'r str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// `expected_wire_request` (exact, key order not significant), `_count`,
/// `_absent_keys`, `expected_wire_headers` (subset, names case-insensitive) and
/// `expected_wire_url`, over every request of the call.
pub(super) fn wire(run: &Run<'_>) -> Check {
    let case = run.case;
    let requests = &run.requests;
    if let Some(bodies) = &case.expected_wire_request {
        let want: Vec<&Map<String, Value>> = match bodies {
            WireBodies::One(b) => vec![b],
            WireBodies::Many(list) => list.iter().collect(),
        };
        if want.len() != requests.len() {
            return Err(format!(
                "expected_wire_request: {} body(ies) expected, {} request(s) sent",
                want.len(),
                requests.len()
            )
            .into());
        }
        for (i, (w, r)) in want.into_iter().zip(requests).enumerate() {
            exact(
                &Value::Object(w.clone()),
                body(r, i)?,
                &format!("expected_wire_request[{i}]"),
            )?;
        }
    }
    if let Some(n) = case.expected_wire_request_count {
        if requests.len() != n {
            return Err(format!(
                "expected_wire_request_count: expected {n}, got {}",
                requests.len()
            )
            .into());
        }
    }
    for (i, r) in requests.iter().enumerate() {
        let b = body(r, i)?;
        if let Some(key) = case
            .expected_wire_request_absent_keys
            .iter()
            .find(|k| b.get(k.as_str()).is_some())
        {
            return Err(format!(
                "expected_wire_request_absent_keys: request {i} carries `{key}`: {b}"
            )
            .into());
        }
        for (name, value) in &case.expected_wire_headers {
            let got = header(r, name);
            if got != Some(value.as_str()) {
                return Err(format!(
                    "expected_wire_headers: request {i} `{name}` is {got:?}, expected {value:?}"
                )
                .into());
            }
        }
        if let Some(url) = &case.expected_wire_url {
            let got = request_url(run, r);
            if got != *url {
                return Err(format!(
                    "expected_wire_url: request {i} went to {got}, expected {url}"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// `expected.observers.<name>.contains_event`.
pub(super) fn observers(run: &Run<'_>) -> Check {
    for (name, expect) in &run.case.expected.observers {
        let records = run.collectors.get(name).ok_or_else(|| {
            Failure::fixture(format!(
                "fixture_schema_invalid: observer `{name}` is not among typed_observers"
            ))
        })?;
        let Some(c) = &expect.contains_event else {
            continue;
        };
        let of_type: Vec<&Value> = records
            .iter()
            .filter(|r| r.get("event_type").and_then(Value::as_str) == Some(c.event_type.as_str()))
            .collect();
        let mut last = Failure::mismatch(format!(
            "observers.{name}: no {} among {} events",
            c.event_type,
            records.len()
        ));
        let found = of_type.iter().any(|r| {
            c.fields
                .iter()
                .try_for_each(|(k, want)| {
                    exact(
                        want,
                        r.get(k).unwrap_or(&Value::Null),
                        &format!("observers.{name}.{}.{k}", c.event_type),
                    )
                })
                .map_err(|m| last = m)
                .is_ok()
        });
        if !found {
            return Err(last);
        }
    }
    Ok(())
}
