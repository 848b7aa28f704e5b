//! Spec: graph-engine §6 (typed LLM events, node events), observability §5.5.7 and the
//! observability fixture headers of 050 (`typed_observers`, observer-introspection
//! expectations), 062 (`fields_absent_keys`), 067 (`event_count`), 071
//! (`event_counts`) and 111 (`contains_events_in_order`).
//!
//! A `typed_event_collector` is a real observer attached to the invocation: it keeps
//! the spec events it receives (optionally only one type, `filter_event_type`) in
//! delivery order, as fixture-facing JSON records. It never sees the per-attempt span
//! signal or the invocation lifecycle events (neither is part of the spec's event
//! union); it subscribes to the lifecycle events only to snapshot the caller metadata
//! for `include_caller_metadata` (graph-engine §6 `caller_invocation_metadata`, a
//! per-observer opt-in).
//!
//! Records carry the spec field names. `active_prompt`, `active_prompt_group` and
//! `token_budget` come from the prompt context the request captured at call time
//! (null outside any prompt binding).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_core::vocab::llm::{LlmRequestSummary, LlmResponseSummary};
use openarmature_core::vocab::prompt::{PromptGroupIdentity, PromptIdentity};
use openarmature_graph::{BoxError, CallSite, Observer, ObserverEvent, Registration};
use serde_json::{json, Map, Value};

use crate::failure::{Check, Failure};
use crate::matchers::{check, each_pair, Bindings};
use crate::shared::lock;
use crate::yaml::Y;
use crate::AdapterError;

/// Event type names a collector filter or an expectation may use.
const EVENT_TYPES: &[&str] = &[
    "NodeEvent",
    "LlmCompletionEvent",
    "LlmFailedEvent",
    "FailureIsolationEvent",
    "ToolCallEvent",
    "ToolCallFailedEvent",
    "EmbeddingEvent",
    "EmbeddingFailedEvent",
    "RerankEvent",
    "RerankFailedEvent",
    "LlmTokenEvent",
    // A type the spec rules out (the token event is unpaired, 114): a valid name
    // that is never emitted, so a count of zero can be asserted.
    "LlmTokenFailedEvent",
];

fn unknown(y: &Y<'_>, what: String) -> AdapterError {
    AdapterError::DirectiveUnknown {
        file: y.file.to_path_buf(),
        directive: what,
        location: y.location().to_owned(),
    }
}

fn event_type(y: &Y<'_>) -> Result<String, AdapterError> {
    let name = y.str()?;
    if EVENT_TYPES.contains(&name) {
        Ok(name.to_owned())
    } else {
        Err(unknown(y, format!("event type `{name}`")))
    }
}

/// A `typed_event_collector`.
pub(crate) struct Collector {
    pub(crate) name: String,
    filter: Option<String>,
    include_caller_metadata: bool,
    metadata: Mutex<HashMap<String, Arc<Map<String, Value>>>>,
    pub(crate) records: Mutex<Vec<Value>>,
}

impl Collector {
    /// Parses one `typed_observers` entry.
    pub(crate) fn parse(y: &Y<'_>) -> Result<Collector, AdapterError> {
        y.check_keys(&[
            "name",
            "kind",
            "filter_event_type",
            "include_caller_metadata",
            "retains_arrival_order",
        ])?;
        let kind = y.req("kind")?;
        if kind.str()? != "typed_event_collector" {
            return Err(unknown(
                &kind,
                format!("typed observer kind `{}`", kind.str()?),
            ));
        }
        if let Some(r) = y.get("retains_arrival_order") {
            // Records are always kept in delivery order.
            r.bool()?;
        }
        Ok(Collector {
            name: y.req("name")?.str()?.to_owned(),
            filter: y
                .get("filter_event_type")
                .map(|t| event_type(&t))
                .transpose()?,
            include_caller_metadata: y
                .get("include_caller_metadata")
                .map(|b| b.bool())
                .transpose()?
                .unwrap_or(false),
            metadata: Mutex::new(HashMap::new()),
            records: Mutex::new(Vec::new()),
        })
    }

    /// Whether the collector opted into `caller_invocation_metadata`.
    pub(crate) fn includes_caller_metadata(&self) -> bool {
        self.include_caller_metadata
    }

    /// Whether the collector keeps only one event type.
    pub(crate) fn filter(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// The registration attaching it (with the lifecycle events, for the metadata).
    pub(crate) fn registration(self: &Arc<Self>) -> Registration {
        Registration::shared(self.name.clone(), Arc::clone(self) as Arc<dyn Observer>)
            .with_invocation_events()
    }

    pub(crate) fn records(&self) -> Vec<Value> {
        lock(&self.records).clone()
    }
}

impl Observer for Collector {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        if let ObserverEvent::InvocationStarted(e) = &*event {
            lock(&self.metadata).insert(e.invocation_id.to_string(), Arc::clone(&e.metadata));
        }
        let snapshot = if self.include_caller_metadata {
            lock(&self.metadata).get(event.invocation_id()).cloned()
        } else {
            None
        };
        if let Some(record) = record(&event, snapshot.as_deref()) {
            let keep = self
                .filter
                .as_deref()
                .is_none_or(|t| record.get("event_type").and_then(Value::as_str) == Some(t));
            if keep {
                lock(&self.records).push(record);
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

pub(crate) fn site_fields(m: &mut Map<String, Value>, site: &CallSite) {
    let l = &site.lineage;
    m.insert("invocation_id".into(), json!(&*site.invocation_id));
    m.insert(
        "correlation_id".into(),
        json!(site.correlation_id.as_deref()),
    );
    m.insert("node_name".into(), json!(&*site.node_name));
    m.insert("namespace".into(), json!(&*l.namespace));
    m.insert("attempt_index".into(), json!(l.attempt_index));
    m.insert("fan_out_index".into(), json!(l.fan_out_index));
    m.insert("branch_name".into(), json!(l.branch_name));
    m.insert("fan_out_index_chain".into(), json!(&*l.fan_out_index_chain));
    m.insert("branch_name_chain".into(), json!(&*l.branch_name_chain));
}

fn tool_fields(m: &mut Map<String, Value>, call: &openarmature_llm::ToolCallRecord) {
    site_fields(m, &call.site);
    m.insert("call_id".into(), json!(&*call.call_id));
    m.insert("tool_name".into(), json!(call.tool_name));
    m.insert("tool_call_id".into(), json!(call.tool_call_id));
    m.insert(
        "arguments".into(),
        call.arguments.clone().unwrap_or(Value::Null),
    );
    m.insert("latency_ms".into(), json!(call.latency_ms));
}

/// The identity every typed request summary (LLM, embedding, rerank) opens with.
pub(super) fn request_identity(
    m: &mut Map<String, Value>,
    provider: Value,
    model: Value,
    call_id: Value,
) {
    m.insert("provider".into(), provider);
    m.insert("model".into(), model);
    m.insert("call_id".into(), call_id);
}

/// What every typed request summary carries after its own fields: the parameters,
/// the extras and the active prompt (and group).
pub(super) fn request_context(
    m: &mut Map<String, Value>,
    params: &Map<String, Value>,
    extras: &Map<String, Value>,
    prompt: Option<&PromptIdentity>,
    group: Option<&PromptGroupIdentity>,
) {
    m.insert("request_params".into(), Value::Object(params.clone()));
    m.insert("request_extras".into(), Value::Object(extras.clone()));
    m.insert(
        "active_prompt".into(),
        prompt.map_or(Value::Null, |p| {
            json!({
                "name": p.name,
                "version": p.version,
                "label": p.label,
                "template_hash": p.template_hash,
                "rendered_hash": p.rendered_hash,
            })
        }),
    );
    m.insert(
        "active_prompt_group".into(),
        group.map_or(Value::Null, |g| json!({"group_name": g.group_name})),
    );
}

fn request_fields(m: &mut Map<String, Value>, r: &LlmRequestSummary) {
    request_identity(m, json!(&*r.provider), json!(&*r.model), json!(&*r.call_id));
    m.insert("input_messages".into(), json!(&*r.input_messages));
    request_context(
        m,
        r.request_params.get(),
        &r.request_extras,
        r.active_prompt(),
        r.active_prompt_group(),
    );
    m.insert(
        "token_budget".into(),
        r.token_budget().map_or(Value::Null, |b| {
            json!({
                "input_max_tokens": b.input_max_tokens,
                "total_max_tokens": b.total_max_tokens,
            })
        }),
    );
}

/// The usage record with every counter present (`null` when not reported).
pub(crate) fn usage_json(u: &openarmature_core::vocab::llm::LlmUsage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
        "cached_tokens": u.cached_tokens,
        "cache_creation_tokens": u.cache_creation_tokens,
    })
}

/// The usage record as the event carries it: the three counters, plus the cache
/// counters when populated.
fn event_usage(u: &openarmature_core::vocab::llm::LlmUsage) -> Value {
    serde_json::to_value(u).unwrap_or(Value::Null)
}

fn response_fields(m: &mut Map<String, Value>, r: Option<&LlmResponseSummary>) {
    m.insert(
        "response_model".into(),
        json!(r.and_then(|r| r.response_model.clone())),
    );
    m.insert(
        "response_id".into(),
        json!(r.and_then(|r| r.response_id.clone())),
    );
    m.insert(
        "usage".into(),
        r.map_or(Value::Null, |r| event_usage(&r.usage)),
    );
    m.insert(
        "finish_reason".into(),
        json!(r.and_then(|r| r.finish_reason.clone())),
    );
    m.insert(
        "output_content".into(),
        json!(r.and_then(|r| r.output_content.clone())),
    );
}

/// The fixture-facing record of a spec event (`None` for the per-attempt span signal
/// and the invocation lifecycle events).
pub(crate) fn record(
    event: &ObserverEvent,
    metadata: Option<&Map<String, Value>>,
) -> Option<Value> {
    let meta = || metadata.map_or(Value::Null, |m| Value::Object(m.clone()));
    let mut m = Map::new();
    match event {
        ObserverEvent::Node(e) => {
            m.insert("event_type".into(), json!("NodeEvent"));
            m.insert("phase".into(), json!(e.phase.as_str()));
            m.insert("node_name".into(), json!(&*e.node_name));
            m.insert("namespace".into(), json!(&*e.namespace));
            m.insert("step".into(), json!(e.step));
            m.insert("attempt_index".into(), json!(e.attempt_index));
            m.insert("fan_out_index".into(), json!(e.fan_out_index));
            m.insert("branch_name".into(), json!(e.branch_name));
            m.insert("fan_out_index_chain".into(), json!(&*e.fan_out_index_chain));
            m.insert("branch_name_chain".into(), json!(&*e.branch_name_chain));
            m.insert("invocation_id".into(), json!(&*e.invocation_id));
            m.insert("correlation_id".into(), json!(e.correlation_id.as_deref()));
            m.insert(
                "error".into(),
                e.error.as_ref().map_or(
                    Value::Null,
                    |x| json!({"category": x.category, "message": x.message}),
                ),
            );
        }
        ObserverEvent::LlmCompletion(e) => {
            m.insert("event_type".into(), json!("LlmCompletionEvent"));
            site_fields(&mut m, &e.site);
            request_fields(&mut m, &e.request);
            response_fields(&mut m, Some(&e.response));
            m.insert(
                "output_tool_calls".into(),
                json!(e.response.output_tool_calls),
            );
            m.insert("latency_ms".into(), json!(e.latency_ms));
            m.insert("caller_invocation_metadata".into(), meta());
        }
        ObserverEvent::LlmFailed(e) => {
            m.insert("event_type".into(), json!("LlmFailedEvent"));
            site_fields(&mut m, &e.site);
            request_fields(&mut m, &e.request);
            response_fields(&mut m, e.response.as_ref());
            m.insert("error_category".into(), json!(e.failure.error_category));
            m.insert("error_type".into(), json!(e.failure.error_type));
            m.insert("error_message".into(), json!(e.failure.error_message));
            m.insert("latency_ms".into(), json!(e.latency_ms));
            m.insert("caller_invocation_metadata".into(), meta());
        }
        ObserverEvent::LlmToken(e) => {
            m.insert("event_type".into(), json!("LlmTokenEvent"));
            site_fields(&mut m, &e.site);
            m.insert("provider".into(), json!(e.provider));
            m.insert("model".into(), json!(e.model));
            m.insert("call_id".into(), json!(e.call_id));
            m.insert("chunk_index".into(), json!(e.chunk_index));
            m.insert("delta_kind".into(), json!(e.delta_kind.as_str()));
            m.insert("delta".into(), json!(e.delta));
            m.insert("caller_invocation_metadata".into(), meta());
        }
        ObserverEvent::ToolCall(e) => {
            m.insert("event_type".into(), json!("ToolCallEvent"));
            tool_fields(&mut m, &e.call);
            m.insert("result".into(), e.result.clone());
            m.insert("caller_invocation_metadata".into(), meta());
        }
        ObserverEvent::ToolCallFailed(e) => {
            m.insert("event_type".into(), json!("ToolCallFailedEvent"));
            tool_fields(&mut m, &e.call);
            m.insert("error_type".into(), json!(e.error_type));
            m.insert("error_message".into(), json!(e.error_message));
            m.insert("caller_invocation_metadata".into(), meta());
        }
        ObserverEvent::Embedding(_)
        | ObserverEvent::EmbeddingFailed(_)
        | ObserverEvent::Rerank(_)
        | ObserverEvent::RerankFailed(_) => {
            return super::retrieval_records::record(event, meta());
        }
        ObserverEvent::FailureIsolation(e) => {
            m.insert("event_type".into(), json!("FailureIsolationEvent"));
            m.insert("event_name".into(), json!(e.event_name));
            m.insert("node_name".into(), json!(e.lineage.namespace.last()));
            m.insert("namespace".into(), json!(&*e.lineage.namespace));
            m.insert("invocation_id".into(), json!(&*e.invocation_id));
        }
        _ => return None,
    }
    Some(Value::Object(m))
}

fn type_of(record: &Value) -> &str {
    record
        .get("event_type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn of_type<'r>(records: &'r [Value], t: &str) -> Vec<&'r Value> {
    records.iter().filter(|r| type_of(r) == t).collect()
}

/// Whether `record` matches every `field: value` of `fields` (§5.10 tokens honoured).
fn fields_match(fields: &Map<String, Value>, record: &Value, path: &str) -> Check {
    let mut b = Bindings::default();
    for (k, want) in fields {
        let got = record
            .get(k)
            .ok_or_else(|| format!("{path}: the event has no field `{k}`"))?;
        check(want, got, &mut b, &format!("{path}.{k}"))?;
    }
    Ok(())
}

fn count(y: &Y<'_>) -> Check<usize> {
    usize::try_from(y.i64()?).map_err(|_| Failure::from(y.invalid("a count")))
}

fn type_and_count(y: &Y<'_>) -> Check<(String, usize)> {
    y.check_keys(&["event_type", "count"])?;
    Ok((event_type(&y.req("event_type")?)?, count(&y.req("count")?)?))
}

fn exact_count(records: &[Value], t: &str, want: usize, what: &str) -> Check {
    let got = of_type(records, t).len();
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: {got} {t}, expected {want}").into())
    }
}

/// Checks one `expected.observers.<name>` block against a collector's records.
pub(crate) fn expectations(y: &Y<'_>, records: &[Value]) -> Check {
    for (key, v) in y.entries()? {
        match key.as_str() {
            "contains_event" => contains_event(&v, records)?,
            "event_count" | "contains_exactly_n_events_of_type" => {
                let (t, n) = type_and_count(&v)?;
                exact_count(records, &t, n, &key)?;
            }
            "event_counts" => {
                for item in v.seq()? {
                    let (t, n) = type_and_count(&item)?;
                    exact_count(records, &t, n, &key)?;
                }
            }
            "contains_exactly_one_event_of_type" => {
                exact_count(records, &event_type(&v)?, 1, &key)?;
            }
            "contains_event_of_type" => {
                let t = event_type(&v)?;
                if of_type(records, &t).is_empty() {
                    return Err(format!("{key}: no {t} among {} events", records.len()).into());
                }
            }
            "does_not_contain_event_of_type" => {
                exact_count(records, &event_type(&v)?, 0, &key)?;
            }
            "captured_event_field_values_cover" => {
                v.check_keys(&["field", "values"])?;
                let field = v.req("field").and_then(|f| f.str())?;
                let want = v.req("values").and_then(|w| w.seq())?;
                let got: Vec<Value> = records
                    .iter()
                    .map(|r| r.get(field).cloned().unwrap_or(Value::Null))
                    .collect();
                for w in want {
                    let w = w.json()?;
                    if !got.iter().any(|g| crate::matchers::json_eq(g, &w)) {
                        return Err(
                            format!("{key}: no event has {field} = {w} (values {got:?})").into(),
                        );
                    }
                }
            }
            "every_captured_event_has" => {
                let Value::Object(fields) = v.json()? else {
                    return Err(Failure::from(v.invalid("a field mapping")));
                };
                if records.is_empty() {
                    return Err(format!("{key}: no captured event").into());
                }
                for (i, r) in records.iter().enumerate() {
                    fields_match(&fields, r, &format!("{key}[{i}]"))?;
                }
            }
            "sentinel_node_event_emission_is_impl_defined" => {
                // Documentation flag: this implementation emits no sentinel node event
                // (LLM calls surface only as typed events), which the fixture allows.
                if !v.bool()? {
                    return Err(Failure::from(v.invalid("only `true` is meaningful")));
                }
            }
            "relative_order_of_events_matching" => relative_order(&v, records)?,
            "contains_events_in_order" => in_order(&v, records)?,
            _ => {
                return Err(Failure::from(unknown(
                    &v,
                    format!("observer expectation `{key}`"),
                )))
            }
        }
    }
    Ok(())
}

fn contains_event(y: &Y<'_>, records: &[Value]) -> Check {
    y.check_keys(&["event_type", "fields", "fields_absent_keys"])?;
    let t = event_type(&y.req("event_type")?)?;
    let fields = match y.get("fields").map(|f| f.json()).transpose()? {
        Some(Value::Object(m)) => m,
        None => Map::new(),
        Some(other) => return Err(format!("contains_event.fields: not a mapping: {other}").into()),
    };
    let absent: Vec<(String, Vec<String>)> = match y.get("fields_absent_keys") {
        Some(a) => a
            .entries()?
            .into_iter()
            .map(|(k, keys)| Ok((k, keys.strings()?)))
            .collect::<Check<_>>()?,
        None => Vec::new(),
    };
    let candidates = of_type(records, &t);
    let mut last = Failure::mismatch(format!(
        "contains_event: no {t} among {} events",
        records.len()
    ));
    for (i, r) in candidates.iter().enumerate() {
        let verdict =
            fields_match(&fields, r, &format!("contains_event[{t} #{i}]")).and_then(|()| {
                for (field, keys) in &absent {
                    let Some(Value::Object(map)) = r.get(field) else {
                        return Err(
                            format!("fields_absent_keys: `{field}` is not a mapping").into()
                        );
                    };
                    if let Some(k) = keys.iter().find(|k| map.contains_key(*k)) {
                        return Err(format!("fields_absent_keys: `{field}` carries `{k}`").into());
                    }
                }
                Ok(())
            });
        match verdict {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The typed-event records of `run` of type `event_type`, in emission order.
pub(super) fn records(run: &super::Run<'_>, event_type: &str) -> Vec<Value> {
    run.events
        .iter()
        .filter_map(|e| record(e, None))
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some(event_type))
        .collect()
}

/// One entry of an ordered expectation: `{event_type, <field>: <value>...}`.
fn entry_matches(entry: &Map<String, Value>, record: &Value) -> bool {
    entry.iter().all(|(k, want)| {
        let got = if k == "event_type" {
            Some(Value::from(type_of(record)))
        } else {
            record.get(k).cloned()
        };
        got.is_some_and(|g| check(want, &g, &mut Bindings::default(), "$").is_ok())
    })
}

fn relative_order(y: &Y<'_>, records: &[Value]) -> Check {
    y.check_keys(&["filter", "expected_order"])?;
    let filter = match y.req("filter").and_then(|f| f.json())? {
        Value::Object(m) => m,
        other => return Err(format!("relative_order: filter is not a mapping: {other}").into()),
    };
    let order: Vec<Map<String, Value>> = y
        .req("expected_order")
        .and_then(|o| o.seq())?
        .iter()
        .map(|e| -> Check<Map<String, Value>> {
            match e.json()? {
                Value::Object(m) => Ok(m),
                other => Err(format!("relative_order: entry is not a mapping: {other}").into()),
            }
        })
        .collect::<Result<_, _>>()?;
    let filtered: Vec<&Value> = records
        .iter()
        .filter(|r| entry_matches(&filter, r))
        .collect();
    // Every expected entry matches exactly one filtered event, at increasing positions.
    let mut last: Option<usize> = None;
    for (i, want) in order.iter().enumerate() {
        let hits: Vec<usize> = filtered
            .iter()
            .enumerate()
            .filter(|(_, r)| entry_matches(want, r))
            .map(|(p, _)| p)
            .collect();
        let [p] = hits.as_slice() else {
            return Err(format!(
                "relative_order: entry {i} {want:?} matches {} events",
                hits.len()
            )
            .into());
        };
        if last.is_some_and(|l| *p <= l) {
            return Err(format!("relative_order: entry {i} {want:?} arrived out of order").into());
        }
        last = Some(*p);
    }
    Ok(())
}

fn in_order(y: &Y<'_>, records: &[Value]) -> Check {
    y.check_keys(&["event_type", "events"])?;
    let t = event_type(&y.req("event_type")?)?;
    let want = y.req("events").and_then(|e| e.seq())?;
    let got = of_type(records, &t);
    each_pair(
        &want,
        &got,
        || {
            format!(
                "contains_events_in_order: {} {t}, expected {}",
                got.len(),
                want.len()
            )
        },
        |i, w, g| {
            let Value::Object(fields) = w.json()? else {
                return Err(format!("contains_events_in_order[{i}]: not a mapping").into());
            };
            fields_match(&fields, g, &format!("contains_events_in_order[{i}]"))?;
            Ok(())
        },
    )?;
    Ok(())
}
