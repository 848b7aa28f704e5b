//! Spec: retrieval-provider §4 / §6 / §7 / §8 / §10 — the observations the named
//! invariants ([`super::invariants`]) are built from. Each fact reads the run (the
//! call, the wire, the mock's answers, the response record, the typed events) and
//! either holds or says why not.

use serde_json::Value;

use super::exec::{Call, Run};
use super::oracle::{self, sound};
use super::providers::Kind;

/// A fact: holds, or a reason.
pub(super) type Fact = fn(&Run<'_>) -> Check;

fn record<'r>(run: &'r Run<'_>) -> Check<&'r Value> {
    Ok(run
        .record()
        .ok_or_else(|| "the call returned no response".to_owned())?)
}

fn field<'r>(run: &'r Run<'_>, key: &str) -> Check<&'r Value> {
    Ok(record(run)?.get(key).unwrap_or(&Value::Null))
}

fn vectors(run: &Run<'_>) -> Check<Vec<Vec<f64>>> {
    Ok(serde_json::from_value(field(run, "vectors")?.clone())
        .map_err(|e| format!("vectors: {e}"))?)
}

fn results<'r>(run: &'r Run<'_>) -> Check<&'r Vec<Value>> {
    Ok(field(run, "results")?
        .as_array()
        .ok_or_else(|| "the record has no results".to_owned())?)
}

fn indices(run: &Run<'_>) -> Check<Vec<u64>> {
    results(run)?
        .iter()
        .map(|r| {
            r.get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| Failure::mismatch(format!("result {r} has no index")))
        })
        .collect()
}

fn extras<'r>(run: &'r Run<'_>) -> &'r serde_json::Map<String, Value> {
    match run.call {
        Call::Embed(c) => &c.config.extras,
        Call::Rerank(c) => &c.config.extras,
    }
}

fn input_type<'r>(run: &'r Run<'_>) -> Option<&'r str> {
    match run.call {
        Call::Embed(c) => c.config.input_type.as_deref(),
        Call::Rerank(_) => None,
    }
}

fn top_k(run: &Run<'_>) -> Check<u32> {
    match run.call {
        Call::Rerank(c) => Ok(c
            .top_k
            .ok_or_else(|| "the call passes no top_k".to_owned())?),
        Call::Embed(_) => Err("not a rerank call".into()),
    }
}

fn wire_list<'r>(body: &'r Value, run: &Run<'_>) -> Check<&'r Vec<Value>> {
    let key = oracle::list_key(run.bound.mapping, run.call.kind());
    Ok(body
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the request body carries no `{key}` list: {body}"))?)
}

fn every_body(run: &Run<'_>, f: impl Fn(&Value) -> Check) -> Check {
    let bodies = run.bodies();
    ensure(!bodies.is_empty(), || "no request reached the wire".into())?;
    bodies.into_iter().try_for_each(f)
}

fn embedding_types(body: &Value) -> Check<Vec<&str>> {
    Ok(body
        .get("embedding_types")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(Value::as_str).collect())
        .ok_or_else(|| format!("the body carries no embedding_types string list: {body}"))?)
}

fn extras_types<'r>(run: &'r Run<'_>) -> Option<&'r Value> {
    extras(run).get("embedding_types")
}

/// The first event of the call's success type.
fn event<'r>(run: &'r Run<'_>) -> Check<&'r Value> {
    let want = match run.call.kind() {
        Kind::Embed => "EmbeddingEvent",
        Kind::Rerank => "RerankEvent",
    };
    let found: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e.get("event_type").and_then(Value::as_str) == Some(want))
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        other => Err(format!(
            "expected one {want}, the invocation dispatched {}",
            other.len()
        )
        .into()),
    }
}

fn served_entries(run: &Run<'_>) -> Check<Vec<(u64, f64, Option<Value>)>> {
    oracle::served_results(run)
}

fn echo_shapes(run: &Run<'_>) -> Check<Vec<&'static str>> {
    Ok(served_entries(run)?
        .iter()
        .map(|(_, _, e)| match e {
            None | Some(Value::Null) => "absent",
            Some(Value::String(_)) => "string",
            Some(Value::Object(o)) if o.get("text").is_some_and(Value::is_string) => "textdoc",
            Some(Value::Object(_)) => "object",
            Some(_) => "scalar",
        })
        .collect())
}

mod answers;
mod call;
mod events;
mod response;
mod wire;

pub(super) use self::answers::*;
pub(super) use self::call::*;
pub(super) use self::events::*;
pub(super) use self::response::*;
pub(super) use self::wire::*;

use crate::failure::{ensure, Check, Failure};
