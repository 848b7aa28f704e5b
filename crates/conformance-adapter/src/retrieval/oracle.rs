//! Spec: retrieval-provider §4 / §6 / §7 / §8.1–§8.4 — what the mock's answers say,
//! read independently of the crate: the vectors and results a conforming mapping
//! must return for the bodies the mock served, the usage figures, the response id,
//! and the request list each chunk carried. The invariants compare the crate's
//! response against these.

use serde_json::{json, Value};

use super::exec::{Call, Run};
use super::providers::{Kind, Mapping};

use crate::failure::{Check, Failure};

/// The wire key carrying the chunked list (inputs or documents).
pub(super) fn list_key(mapping: Mapping, kind: Kind) -> &'static str {
    match (mapping, kind) {
        (Mapping::Tei, Kind::Embed) => "inputs",
        (Mapping::Cohere, Kind::Embed) => "texts",
        (_, Kind::Embed) => "input",
        (Mapping::Tei, Kind::Rerank) => "texts",
        (_, Kind::Rerank) => "documents",
    }
}

/// The caller's list (inputs or documents).
pub(super) fn call_list<'r>(run: &'r Run<'_>) -> &'r [String] {
    match run.call {
        Call::Embed(c) => &c.input,
        Call::Rerank(c) => &c.documents,
    }
}

/// The bodies the mock answered with a 2xx status, in request order.
pub(super) fn ok_bodies<'r>(run: &'r Run<'_>) -> Vec<&'r Value> {
    run.requests
        .iter()
        .filter(|r| r.status.is_some_and(|s| (200..300).contains(&s)))
        .filter_map(|r| r.served.as_ref())
        .collect()
}

/// A non-negative integer figure (anything else is not reported, §7).
pub(super) fn sound(v: Option<&Value>) -> Option<u64> {
    v.filter(|v| v.is_number())?.as_u64()
}

fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// Where a mapping's answer carries its usage figures: `(record field, path)`.
fn figure_paths(
    mapping: Mapping,
    kind: Kind,
) -> &'static [(&'static str, &'static [&'static str])] {
    match (mapping, kind) {
        (Mapping::Tei, _) => &[],
        (Mapping::StandIn | Mapping::OpenAi, Kind::Embed) => {
            &[("input_tokens", &["usage", "prompt_tokens"])]
        }
        (Mapping::Jina, _) => &[("input_tokens", &["usage", "total_tokens"])],
        (Mapping::Cohere, Kind::Embed) => {
            &[("input_tokens", &["meta", "billed_units", "input_tokens"])]
        }
        (Mapping::StandIn | Mapping::Cohere, Kind::Rerank) => &[
            ("search_units", &["meta", "billed_units", "search_units"]),
            ("input_tokens", &["meta", "billed_units", "input_tokens"]),
        ],
        (Mapping::OpenAi, Kind::Rerank) => &[],
    }
}

/// The usage figures each served 2xx body carries at the mapping's paths: one
/// `(record field, value as served)` list per body.
pub(super) fn figures<'r>(run: &'r Run<'_>) -> Vec<Vec<(&'static str, Option<&'r Value>)>> {
    let paths = figure_paths(run.bound.mapping, run.call.kind());
    ok_bodies(run)
        .into_iter()
        .map(|b| paths.iter().map(|(f, p)| (*f, at(b, p))).collect())
        .collect()
}

/// The usage record a conforming mapping reports for the served bodies: embedding
/// sums `input_tokens` only when every chunk reported a sound figure; rerank keeps
/// each sound figure and is `null` when none is.
pub(super) fn usage(run: &Run<'_>) -> Value {
    let per_body = figures(run);
    match run.call.kind() {
        Kind::Embed => {
            let sum = per_body.iter().try_fold(0u64, |acc, figures| {
                let (_, v) = figures.first()?;
                Some(acc + sound(*v)?)
            });
            match (per_body.is_empty(), sum) {
                (false, Some(n)) if !figure_paths(run.bound.mapping, Kind::Embed).is_empty() => {
                    json!({"input_tokens": n})
                }
                _ => Value::Null,
            }
        }
        Kind::Rerank => {
            let Some(first) = per_body.first() else {
                return Value::Null;
            };
            let mut record = json!({"search_units": null, "input_tokens": null});
            let mut any = false;
            for (field, v) in first {
                if let Some(n) = sound(*v) {
                    record[*field] = json!(n);
                    any = true;
                }
            }
            if any {
                record
            } else {
                Value::Null
            }
        }
    }
}

/// A usable response identifier: a non-empty string.
pub(super) fn identifier(v: Option<&Value>) -> Option<&str> {
    v?.as_str().filter(|s| !s.is_empty())
}

/// The response id a conforming mapping reports: the first answer's `id` (TEI
/// answers are bare arrays and carry none).
pub(super) fn response_id(run: &Run<'_>) -> Value {
    ok_bodies(run)
        .first()
        .and_then(|b| identifier(b.get("id")))
        .map_or(Value::Null, Value::from)
}

/// Decodes standard base64 (padding optional); `None` when invalid.
fn base64(text: &str) -> Option<Vec<u8>> {
    let trimmed = text.trim_end_matches('=');
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in trimmed.chars() {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' => 62,
            '/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    (trimmed.len() % 4 != 1).then_some(out)
}

/// One `embedding` by its wire shape: a number array, or base64 float32 (LE).
pub(super) fn decode_embedding(v: &Value) -> Check<Vec<f64>> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|x| {
                x.as_f64()
                    .ok_or_else(|| Failure::mismatch(format!("non-number {x}")))
            })
            .collect(),
        Value::String(s) => {
            let bytes = base64(s).ok_or_else(|| format!("invalid base64 {s:?}"))?;
            if bytes.len() % 4 != 0 {
                return Err(format!("{s:?} decodes to {} bytes", bytes.len()).into());
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect())
        }
        other => Err(format!("embedding of shape {other}").into()),
    }
}

/// The vectors the served answers carry, in input order.
pub(super) fn vectors(run: &Run<'_>) -> Check<Vec<Vec<f64>>> {
    let mut out = Vec::new();
    for body in ok_bodies(run) {
        match run.bound.mapping {
            Mapping::Tei => {
                let list = body.as_array().ok_or("a TEI /embed answer is not a list")?;
                for v in list {
                    out.push(decode_embedding(v)?);
                }
            }
            Mapping::Cohere => {
                let list = at(body, &["embeddings", "float"])
                    .and_then(Value::as_array)
                    .ok_or("a Cohere answer has no embeddings.float")?;
                for v in list {
                    out.push(decode_embedding(v)?);
                }
            }
            Mapping::StandIn | Mapping::OpenAi | Mapping::Jina => {
                let data = body
                    .get("data")
                    .and_then(Value::as_array)
                    .ok_or("the answer has no data list")?;
                let mut keyed = Vec::new();
                for entry in data {
                    let index = entry.get("index").and_then(Value::as_u64);
                    let v = entry
                        .get("embedding")
                        .ok_or("a data entry has no embedding")?;
                    keyed.push((index, decode_embedding(v)?));
                }
                keyed.sort_by_key(|(i, _)| *i);
                out.extend(keyed.into_iter().map(|(_, v)| v));
            }
        }
    }
    Ok(out)
}

/// A result's document echo by the §6 rule (`Err` for a non-text scalar / list).
pub(super) fn echo(v: Option<&Value>) -> Check<Value> {
    match v {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(s)) => Ok(Value::from(s.clone())),
        Some(Value::Object(o)) => Ok(o
            .get("text")
            .filter(|t| t.is_string())
            .cloned()
            .unwrap_or(Value::Null)),
        Some(other) => Err(format!("echo {other}").into()),
    }
}

/// The raw result entries the served answers carry, with absolute indices (TEI
/// chunk-local indices re-based by the sizes of the earlier requests' `texts`):
/// `(index, score, echo value as served)`.
pub(super) fn served_results(run: &Run<'_>) -> Check<Vec<(u64, f64, Option<Value>)>> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    let key = list_key(run.bound.mapping, Kind::Rerank);
    for r in &run.requests {
        let sent = r
            .json
            .as_ref()
            .and_then(|b| b.get(key))
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as u64;
        let Some(body) = r
            .served
            .as_ref()
            .filter(|_| r.status.is_some_and(|s| (200..300).contains(&s)))
        else {
            offset += sent;
            continue;
        };
        let (list, score_key, echo_key, base) = match run.bound.mapping {
            Mapping::Tei => (body.as_array(), "score", "text", offset),
            _ => (
                body.get("results").and_then(Value::as_array),
                "relevance_score",
                "document",
                0,
            ),
        };
        for entry in list.ok_or("an answer has no result list")? {
            let index = entry
                .get("index")
                .and_then(Value::as_u64)
                .ok_or("a result has no index")?;
            let score = entry
                .get(score_key)
                .and_then(Value::as_f64)
                .ok_or("a result has no score")?;
            out.push((index + base, score, entry.get(echo_key).cloned()));
        }
        offset += sent;
    }
    Ok(out)
}

/// The results a conforming mapping returns: the served entries, echoes by the §6
/// rule, sorted by score (descending, stable), TEI's `top_k` applied last.
pub(super) fn results(run: &Run<'_>) -> Check<Vec<Value>> {
    let mut entries = served_results(run)?;
    entries.sort_by(|a, b| b.1.total_cmp(&a.1));
    if let (Mapping::Tei, Call::Rerank(c)) = (run.bound.mapping, run.call) {
        if let Some(k) = c.top_k {
            entries.truncate(k as usize);
        }
    }
    entries
        .into_iter()
        .map(|(index, score, document)| {
            Ok(json!({"index": index, "relevance_score": score, "document": echo(document.as_ref())?}))
        })
        .collect()
}
