//! Spec: observability conformance header (fixture 001) and conformance-adapter §5.8 /
//! §5.10 — the exported span forest and the `span_tree` matcher.
//!
//! Matching (FIXTURE-QUIRKS Q2): a span matches on its name, status, a subset of its
//! attributes and the other listed keys; children lists are exhaustive and matched as
//! a multiset by backtracking, so sibling order never matters and a match is never
//! ambiguous. `<trace_id_X>` / `<span_id_X>` tokens bind on first use for the whole
//! case; the other §5.10 tokens (`<uuid>`, `<any-string>`, …) match by shape.

use std::collections::{BTreeMap, HashMap};

use opentelemetry::trace::{SpanId, Status, TraceId};
use opentelemetry::{Array, Value as OtelValue};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use crate::failure::{Check, Failure};
use crate::matchers::{check, Bindings};
use crate::yaml::Y;

/// Every exported span, indexed.
pub(crate) struct Forest {
    pub(crate) spans: Vec<SpanData>,
    by_id: HashMap<SpanId, usize>,
    children: HashMap<SpanId, Vec<usize>>,
    /// Each span's position in export order: the simple processor exports a span
    /// when it ends, so this is the order the spans closed in.
    ended: HashMap<SpanId, usize>,
}

impl Forest {
    pub(crate) fn new(mut spans: Vec<SpanData>) -> Forest {
        let ended = spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_context.span_id(), i))
            .collect();
        spans.sort_by_key(|s| s.start_time);
        let by_id: HashMap<SpanId, usize> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_context.span_id(), i))
            .collect();
        let mut children: HashMap<SpanId, Vec<usize>> = HashMap::new();
        for (i, s) in spans.iter().enumerate() {
            if by_id.contains_key(&s.parent_span_id) {
                children.entry(s.parent_span_id).or_default().push(i);
            }
        }
        Forest {
            spans,
            by_id,
            children,
            ended,
        }
    }

    /// The span's position in the order spans closed (exported) in.
    pub(crate) fn close_rank(&self, span: &SpanData) -> usize {
        self.ended
            .get(&span.span_context.span_id())
            .copied()
            .unwrap_or(usize::MAX)
    }

    /// Spans with no exported parent, in start order.
    pub(crate) fn roots(&self) -> Vec<&SpanData> {
        self.spans
            .iter()
            .filter(|s| !self.by_id.contains_key(&s.parent_span_id))
            .collect()
    }

    pub(crate) fn children(&self, span: &SpanData) -> Vec<&SpanData> {
        self.children
            .get(&span.span_context.span_id())
            .map(|c| c.iter().map(|i| &self.spans[*i]).collect())
            .unwrap_or_default()
    }

    pub(crate) fn parent(&self, span: &SpanData) -> Option<&SpanData> {
        self.by_id
            .get(&span.parent_span_id)
            .map(|i| &self.spans[*i])
    }

    /// Trace ids in order of their first span.
    pub(crate) fn trace_ids(&self) -> Vec<TraceId> {
        let mut ids = Vec::new();
        for s in &self.spans {
            let t = s.span_context.trace_id();
            if !ids.contains(&t) {
                ids.push(t);
            }
        }
        ids
    }

    pub(crate) fn roots_of(&self, trace: TraceId) -> Vec<&SpanData> {
        self.roots()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect()
    }

    pub(crate) fn in_trace(&self, trace: TraceId) -> Vec<&SpanData> {
        self.spans
            .iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect()
    }

    /// The trace ids some span links to.
    pub(crate) fn linked_traces(&self) -> Vec<TraceId> {
        self.spans
            .iter()
            .flat_map(|s| s.links.links.iter().map(|l| l.span_context.trace_id()))
            .collect()
    }

    /// The traces no link targets (the invocations' own traces), in order.
    pub(crate) fn parent_traces(&self) -> Vec<TraceId> {
        let linked = self.linked_traces();
        self.trace_ids()
            .into_iter()
            .filter(|t| !linked.contains(t))
            .collect()
    }
}

/// An attribute's value as JSON (ints stay ints, arrays stay arrays).
pub(crate) fn json_of(v: &OtelValue) -> Value {
    match v {
        OtelValue::Bool(b) => Value::Bool(*b),
        OtelValue::I64(i) => Value::from(*i),
        OtelValue::F64(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        OtelValue::String(s) => Value::String(s.as_str().to_owned()),
        OtelValue::Array(a) => Value::Array(match a {
            Array::Bool(v) => v.iter().map(|x| Value::Bool(*x)).collect(),
            Array::I64(v) => v.iter().map(|x| Value::from(*x)).collect(),
            Array::F64(v) => v
                .iter()
                .map(|x| serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number))
                .collect(),
            Array::String(v) => v
                .iter()
                .map(|x| Value::String(x.as_str().to_owned()))
                .collect(),
            _ => Vec::new(),
        }),
        _ => Value::String(v.as_str().into_owned()),
    }
}

/// A span attribute as JSON.
pub(crate) fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| json_of(&kv.value))
}

pub(crate) fn attr_str(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).and_then(|v| v.as_str().map(str::to_owned))
}

pub(crate) fn has_exception(span: &SpanData) -> bool {
    span.events.events.iter().any(|e| e.name == "exception")
}

pub(crate) fn is_error(span: &SpanData) -> bool {
    matches!(span.status, Status::Error { .. })
}

/// Case-wide bindings of `<trace_id_X>` / `<span_id_X>` tokens.
#[derive(Debug, Clone, Default)]
pub(crate) struct Binder(BTreeMap<String, String>);

impl Binder {
    /// Binds (or checks) `token` to `actual`. Non-token strings compare literally.
    pub(crate) fn bind(&mut self, token: &str, actual: &str) -> Check {
        if !(token.starts_with('<') && token.ends_with('>')) {
            return if token == actual {
                Ok(())
            } else {
                Err(format!("expected {token}, got {actual}").into())
            };
        }
        match self.0.get(token) {
            Some(bound) if bound == actual => Ok(()),
            Some(bound) => Err(format!("{token} is bound to {bound}, got {actual}").into()),
            None => {
                if self.0.values().any(|v| v == actual) {
                    return Err(
                        format!("{actual} is already bound to another token than {token}").into(),
                    );
                }
                self.0.insert(token.to_owned(), actual.to_owned());
                Ok(())
            }
        }
    }
}

/// Whether `v` is a binding token (`<trace_id_X>`, `<span_id_X>`).
fn binding_token(v: &Value) -> Option<&str> {
    v.as_str()
        .filter(|s| s.starts_with("<trace_id") || s.starts_with("<span_id"))
}

/// The value of `harness_parameterized: implementation_name` for this port.
const IMPLEMENTATION_NAME: &str = openarmature_observability::attributes::IMPLEMENTATION;

/// A §5.10 matcher object (`{non_empty_string: true, harness_parameterized: …}`),
/// if `expected` is one: every key must hold.
fn matcher_object(expected: &Value, actual: &Value, path: &str) -> Option<Check> {
    let map = expected.as_object()?;
    let known = ["non_empty_string", "harness_parameterized"];
    if map.is_empty() || !map.keys().all(|k| known.contains(&k.as_str())) {
        return None;
    }
    let fail = |m: String| Some(Err(format!("{path}: {m}").into()));
    for (key, want) in map {
        match (key.as_str(), want) {
            ("non_empty_string", Value::Bool(true)) => {
                if actual.as_str().is_none_or(str::is_empty) {
                    return fail(format!("{actual} is not a non-empty string"));
                }
            }
            ("harness_parameterized", Value::String(p)) if p == "implementation_name" => {
                if actual.as_str() != Some(IMPLEMENTATION_NAME) {
                    return fail(format!("{actual} is not `{IMPLEMENTATION_NAME}`"));
                }
            }
            _ => {
                return Some(Err(Failure::unsupported(format!(
                    "{path}: fixture_directive_unknown: matcher {key}: {want}"
                ))))
            }
        }
    }
    Some(Ok(()))
}

/// Compares one expected value with an actual one (tokens and matcher objects
/// honoured).
pub(crate) fn value_matches(
    expected: &Value,
    actual: &Value,
    binder: &mut Binder,
    path: &str,
) -> Check {
    if let (Some(token), Some(a)) = (binding_token(expected), actual.as_str()) {
        return binder
            .bind(token, a)
            .map_err(|m| m.context(format!("{path}: ")));
    }
    if let Some(verdict) = matcher_object(expected, actual, path) {
        return verdict;
    }
    check(expected, actual, &mut Bindings::default(), path)
}

/// Matching options.
#[derive(Debug, Default, Clone)]
pub(crate) struct MatchOpts {
    /// Attributes checked for presence only (adapter register O2).
    pub(crate) presence_only: &'static [&'static str],
    /// Children lists name a subset of the actual children (adapter register O5).
    pub(crate) subset_children: bool,
    /// Payload context: the case's synthesized base64 blobs (015).
    pub(crate) blobs: Vec<String>,
    /// Payload context: the untruncated serializations the implementation would emit
    /// for the LLM calls' input messages (014).
    pub(crate) full_serializations: Vec<String>,
}

const SPAN_KEYS: &[&str] = &[
    "name",
    "status",
    "status_description",
    "exception_recorded",
    "attributes",
    "attributes_absent",
    "attributes_present",
    "attribute_parses_as_messages",
    "attribute_parses_as_object",
    "attribute_does_not_contain",
    "attribute_truncation",
    "links",
    "link_count",
    "children",
];

/// Matches an expected list against actual spans, exhaustively and in any order.
pub(crate) fn match_list(
    expected: &[Y<'_>],
    actual: &[&SpanData],
    forest: &Forest,
    binder: &Binder,
    opts: &MatchOpts,
    path: &str,
) -> Check<Binder> {
    let sized = if opts.subset_children && !expected.is_empty() {
        expected.len() <= actual.len()
    } else {
        expected.len() == actual.len()
    };
    if !sized {
        let names: Vec<&str> = actual.iter().map(|s| s.name.as_ref()).collect();
        return Err(format!(
            "{path}: expected {} spans, got {}: {names:?}",
            expected.len(),
            actual.len()
        )
        .into());
    }
    assign(
        expected,
        actual,
        &mut vec![false; actual.len()],
        forest,
        binder,
        opts,
        path,
    )
}

fn assign(
    expected: &[Y<'_>],
    actual: &[&SpanData],
    used: &mut Vec<bool>,
    forest: &Forest,
    binder: &Binder,
    opts: &MatchOpts,
    path: &str,
) -> Check<Binder> {
    let Some((first, rest)) = expected.split_first() else {
        return Ok(binder.clone());
    };
    let index = used.iter().filter(|u| **u).count();
    let mut first_error = None;
    for (i, span) in actual.iter().enumerate() {
        if used[i] {
            continue;
        }
        let here = format!("{path}[{index}]");
        match match_span(first, span, forest, binder, opts, &here) {
            Ok(bound) => {
                used[i] = true;
                match assign(rest, actual, used, forest, &bound, opts, path) {
                    Ok(done) => return Ok(done),
                    Err(e) => {
                        used[i] = false;
                        first_error.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                // Prefer the diagnosis of a same-named candidate.
                let same_name = first
                    .get("name")
                    .and_then(|n| n.str().ok())
                    .is_some_and(|n| n == span.name);
                if same_name || first_error.is_none() {
                    first_error = Some(e);
                }
            }
        }
    }
    Err(first_error.unwrap_or_else(|| Failure::mismatch(format!("{path}: no span left to match"))))
}

/// Matches one expected span entry against `span`.
pub(crate) fn match_span(
    e: &Y<'_>,
    span: &SpanData,
    forest: &Forest,
    binder: &Binder,
    opts: &MatchOpts,
    path: &str,
) -> Check<Binder> {
    e.check_keys(SPAN_KEYS)?;
    let mut binder = binder.clone();
    let path = format!("{path}({})", span.name);
    let err = |m: Failure| m.context(format!("{path}: "));
    if let Some(name) = e.get("name") {
        let name = name.str()?;
        if name != span.name {
            return Err(err(format!("name `{}` is not `{name}`", span.name).into()));
        }
    }
    if let Some(status) = e.get("status") {
        let want = status.str()?;
        let ok = match (want, &span.status) {
            ("OK", Status::Ok) | ("ERROR", Status::Error { .. }) | ("UNSET", Status::Unset) => true,
            ("OK" | "ERROR" | "UNSET", _) => false,
            (other, _) => return Err(err(format!("unknown status `{other}`").into())),
        };
        if !ok {
            return Err(err(format!("status {:?} is not {want}", span.status).into()));
        }
    }
    if let Some(d) = e.get("status_description") {
        let want = d.str()?;
        match &span.status {
            Status::Error { description } if description == want => {}
            other => {
                return Err(err(format!(
                    "status {other:?} has not description `{want}`"
                )
                .into()))
            }
        }
    }
    if let Some(x) = e.get("exception_recorded") {
        let want = x.bool()?;
        if has_exception(span) != want {
            return Err(err(format!("exception_recorded is not {want}").into()));
        }
    }
    if let Some(attrs) = e.get("attributes") {
        for (key, want) in attrs.entries()? {
            let want = want.json()?;
            let Some(actual) = attr(span, &key) else {
                return Err(err(format!("attribute `{key}` is missing").into()));
            };
            if opts.presence_only.contains(&key.as_str()) {
                continue;
            }
            value_matches(&want, &actual, &mut binder, &format!("{path}.{key}"))?;
        }
    }
    if let Some(absent) = e.get("attributes_absent") {
        for key in absent.strings()? {
            if attr(span, &key).is_some() {
                return Err(err(format!("attribute `{key}` must be absent").into()));
            }
        }
    }
    if let Some(present) = e.get("attributes_present") {
        for key in present.strings()? {
            if attr(span, &key).is_none() {
                return Err(err(format!("attribute `{key}` must be present").into()));
            }
        }
    }
    payload_checks(e, span, opts).map_err(err)?;
    let links = &span.links.links;
    if let Some(n) = e.get("link_count") {
        let want = n.i64()?;
        if i64::try_from(links.len()).ok() != Some(want) {
            return Err(err(format!("{} links, expected {want}", links.len()).into()));
        }
    }
    if let Some(list) = e.get("links") {
        let want = list.seq()?;
        if want.len() != links.len() {
            return Err(err(format!(
                "{} links, expected {}",
                links.len(),
                want.len()
            )
            .into()));
        }
        for (w, l) in want.iter().zip(links) {
            w.check_keys(&["target_trace_id"])?;
            let token = w
                .req("target_trace_id")
                .and_then(|t| t.str().map(str::to_owned));
            let token = token?;
            binder
                .bind(&token, &l.span_context.trace_id().to_string())
                .map_err(err)?;
        }
    }
    if let Some(children) = e.get("children") {
        let want = children.seq()?;
        binder = match_list(
            &want,
            &forest.children(span),
            forest,
            &binder,
            opts,
            &format!("{path}.children"),
        )?;
    }
    Ok(binder)
}

fn string_attr(span: &SpanData, key: &str) -> Check<String> {
    match attr(span, key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("attribute `{key}` is not a string: {other}").into()),
        None => Err(format!("attribute `{key}` is missing").into()),
    }
}

/// The payload assertions of fixtures 013–015 / 018 (observability §5.5.1, §5.5.5).
fn payload_checks(e: &Y<'_>, span: &SpanData, opts: &MatchOpts) -> Check {
    let x = |e: crate::AdapterError| e.to_string();
    for key in ["attribute_parses_as_messages", "attribute_parses_as_object"] {
        let Some(block) = e.get(key) else { continue };
        for (attribute, want) in block.entries().map_err(x)? {
            let want = want.json().map_err(x)?;
            let text = string_attr(span, &attribute)?;
            let parsed: Value = serde_json::from_str(&text)
                .map_err(|m| format!("{key}: `{attribute}` is not JSON ({m}): {text}"))?;
            let shape_ok = if key == "attribute_parses_as_messages" {
                parsed.is_array()
            } else {
                parsed.is_object()
            };
            if !shape_ok {
                return Err(format!("{key}: `{attribute}` parses to {parsed}").into());
            }
            check(
                &want,
                &parsed,
                &mut Bindings::default(),
                &format!("{key}.{attribute}"),
            )?;
        }
    }
    if let Some(block) = e.get("attribute_does_not_contain") {
        for (attribute, spec) in block.entries().map_err(x)? {
            spec.check_keys(&["forbidden_substring_kind"]).map_err(x)?;
            let kind = spec
                .req("forbidden_substring_kind")
                .and_then(|k| k.str())
                .map_err(x)?;
            if kind != "synthetic_base64_prefix" {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: forbidden_substring_kind `{kind}`"
                )));
            }
            if opts.blobs.is_empty() {
                return Err(
                    "attribute_does_not_contain: the case synthesized no base64 data".into(),
                );
            }
            let text = string_attr(span, &attribute)?;
            for blob in &opts.blobs {
                let prefix: String = blob.chars().take(16).collect();
                if text.contains(&prefix) {
                    return Err(format!(
                        "attribute_does_not_contain: `{attribute}` carries the synthetic base64 data"
                    ).into());
                }
            }
        }
    }
    if let Some(block) = e.get("attribute_truncation") {
        for (attribute, spec) in block.entries().map_err(x)? {
            truncation(&attribute, &spec, span, opts)?;
        }
    }
    Ok(())
}

fn truncation(attribute: &str, spec: &Y<'_>, span: &SpanData, opts: &MatchOpts) -> Check {
    let x = |e: crate::AdapterError| e.to_string();
    spec.check_keys(&[
        "max_bytes",
        "marker_pattern",
        "utf8_valid",
        "prefix_of_full_serialization",
    ])
    .map_err(x)?;
    let path = format!("attribute_truncation.{attribute}");
    let text = string_attr(span, attribute)?;
    if let Some(max) = spec.get("max_bytes") {
        let max =
            usize::try_from(max.i64().map_err(x)?).map_err(|_| format!("{path}: max_bytes"))?;
        if text.len() > max {
            return Err(format!("{path}: {} bytes, more than {max}", text.len()).into());
        }
    }
    let marker_start = match spec.get("marker_pattern") {
        Some(p) => {
            let pattern = p.str().map_err(x)?;
            let re = regex::Regex::new(pattern)
                .map_err(|m| format!("{path}: invalid marker_pattern: {m}"))?;
            let found = re
                .find(&text)
                .ok_or_else(|| format!("{path}: no marker matching `{pattern}` at the end"))?;
            Some(found.start())
        }
        None => None,
    };
    if let Some(flag) = spec.get("utf8_valid") {
        // The exported attribute is a Rust `String`: valid UTF-8 by construction;
        // check the bytes anyway, as an exporter would see them.
        if flag.bool().map_err(x)? && std::str::from_utf8(text.as_bytes()).is_err() {
            return Err(format!("{path}: invalid UTF-8").into());
        }
    }
    if let Some(flag) = spec.get("prefix_of_full_serialization") {
        if flag.bool().map_err(x)? {
            let start = marker_start.ok_or_else(|| format!("{path}: needs marker_pattern"))?;
            let (prefix, marker) = text.split_at(start);
            let total: Option<usize> = marker
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok();
            let hit = opts
                .full_serializations
                .iter()
                .any(|full| full.starts_with(prefix) && Some(full.len()) == total);
            if !hit {
                return Err(format!(
                    "{path}: the text before the marker is not a prefix of the full serialization (of {} bytes as the marker says)",
                    total.unwrap_or_default()
                ).into());
            }
        }
    }
    Ok(())
}
