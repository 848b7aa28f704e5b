//! Spec: observability §8.3 (the invocation is the Trace, every other span an
//! observation; call-level retry collapses to one terminal Generation), §8.4.1
//! (trace-level mapping), §8.5 (detached traces) and §8.6 (trace name) — the spans of
//! one invocation as Langfuse traces.

use std::collections::{HashMap, HashSet};

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};

use super::attrs::{count, string};
use super::ids::{hex, is_uuid, trace_id_for};
use super::model::{LangfuseTrace, Observation};
use super::observation::{caller_metadata, observation_of};
use crate::attributes as a;

/// What the trace needs besides the spans: the caller's label and session, and the
/// resolved `trace.input` / `trace.output` (§8.4.1).
#[derive(Debug, Default, Clone)]
pub(crate) struct TraceExtras {
    /// Fan-out node → the subgraph identity its instances run.
    pub(crate) fan_out_subgraphs: HashMap<String, String>,
    pub(crate) name: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) input: Option<Value>,
    pub(crate) output: Option<Value>,
}

/// §8.4.1: invocation span attribute → top-level `trace.metadata` key.
const TRACE_KEYS: &[(&str, &str)] = &[
    (a::CORRELATION_ID, "correlation_id"),
    (a::GRAPH_ENTRY_NODE, "entry_node"),
    (a::GRAPH_SPEC_VERSION, "spec_version"),
    (a::IMPLEMENTATION_NAME, "implementation_name"),
    (a::IMPLEMENTATION_VERSION, "implementation_version"),
];

/// Whether `span` roots a trace (an invocation span without a parent).
pub(crate) fn is_root(span: &SpanData) -> bool {
    span.name == a::INVOCATION_SPAN && span.parent_span_id == SpanId::INVALID
}

/// Maps every span of the traces of `invocation_id` (the invocation's own trace and
/// its detached children) to Langfuse traces, the invocation's own first.
pub(crate) fn build_traces(
    spans: &[SpanData],
    invocation_id: &str,
    extras: &TraceExtras,
) -> Vec<LangfuseTrace> {
    let roots: Vec<&SpanData> = spans.iter().filter(|s| is_root(s)).collect();
    // A trace some span links to is a detached child (§4.4); the rest is the
    // invocation's own trace.
    let linked: HashSet<TraceId> = spans
        .iter()
        .flat_map(|s| s.links.iter().map(|l| l.span_context.trace_id()))
        .collect();
    let mut ids: HashMap<TraceId, String> = HashMap::new();
    for root in &roots {
        let t = root.span_context.trace_id();
        let id = if linked.contains(&t) {
            hex(&t.to_bytes())
        } else {
            trace_id_for(invocation_id)
        };
        ids.insert(t, id);
    }
    let mut children: HashMap<SpanId, Vec<&SpanData>> = HashMap::new();
    for s in spans {
        if s.parent_span_id != SpanId::INVALID {
            children.entry(s.parent_span_id).or_default().push(s);
        }
    }
    let mut out: Vec<LangfuseTrace> = roots
        .iter()
        .map(|root| {
            let t = root.span_context.trace_id();
            let detached = linked.contains(&t);
            let mut trace = trace_of(
                root,
                ids.get(&t).cloned().unwrap_or_default(),
                invocation_id,
                detached,
                extras,
            );
            let cx = Cx {
                children: &children,
                ids: &ids,
                fan_out_subgraphs: &extras.fan_out_subgraphs,
            };
            trace.observations = tree(root.span_context.span_id(), &cx, None);
            trace
        })
        .collect();
    out.sort_by_key(|t| t.metadata.contains_key("detached_from_invocation_id"));
    out
}

fn trace_of(
    root: &SpanData,
    id: String,
    invocation_id: &str,
    detached: bool,
    extras: &TraceExtras,
) -> LangfuseTrace {
    let mut metadata = Map::new();
    for (attr, key) in TRACE_KEYS {
        if let Some(v) = super::attrs::get(root, attr) {
            metadata.insert((*key).to_owned(), v);
        }
    }
    if !is_uuid(invocation_id) {
        metadata.insert(
            "invocation_id".into(),
            Value::String(invocation_id.to_owned()),
        );
    }
    if detached {
        metadata.insert(
            "detached_from_invocation_id".into(),
            Value::String(invocation_id.to_owned()),
        );
    }
    caller_metadata(root, &mut metadata);
    let user_id = metadata.get("userId").map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let entry = string(root, a::GRAPH_ENTRY_NODE).unwrap_or_default();
    LangfuseTrace {
        id,
        name: if detached {
            entry
        } else {
            extras.name.clone().unwrap_or(entry)
        },
        user_id,
        session_id: string(root, a::SESSION_ID).or_else(|| extras.session_id.clone()),
        metadata,
        input: if detached { None } else { extras.input.clone() },
        output: if detached {
            None
        } else {
            extras.output.clone()
        },
        start_time: root.start_time,
        end_time: root.end_time,
        observations: Vec::new(),
    }
}

struct Cx<'a> {
    children: &'a HashMap<SpanId, Vec<&'a SpanData>>,
    ids: &'a HashMap<TraceId, String>,
    fan_out_subgraphs: &'a HashMap<String, String>,
}

/// The observations under `parent`, in start order, each call-level retry collapsed
/// to its terminal attempt (§8.4.3). `branch` is the enclosing branch's name, which
/// every observation inside a branch carries (§8.4.8).
fn tree(parent: SpanId, cx: &Cx<'_>, branch: Option<&Value>) -> Vec<Observation> {
    let Some(list) = cx.children.get(&parent) else {
        return Vec::new();
    };
    let mut list: Vec<&SpanData> = list.clone();
    list.sort_by_key(|s| s.start_time);
    let terminal = terminal_attempts(&list);
    list.into_iter()
        .filter(|s| s.name != a::LLM_SPAN || terminal.contains(&s.span_context.span_id()))
        .map(|s| {
            let mut o = observation_of(s, cx.ids);
            let m = &mut o.metadata;
            if let (Some(b), false) = (branch, m.contains_key("branch_name")) {
                m.insert("branch_name".into(), b.clone());
            }
            // §8.3 row 5: a fan-out instance is the subgraph wrapper of its instance.
            if let Some(Value::String(node)) = m.get("fan_out_parent_node_name").cloned() {
                if let Some(id) = cx.fan_out_subgraphs.get(&node) {
                    m.entry("subgraph_name")
                        .or_insert_with(|| Value::String(id.clone()));
                }
            }
            let inherited = m.get("branch_name").cloned();
            o.children = tree(s.span_context.span_id(), cx, inherited.as_ref());
            wrapper_position(&mut o);
            o
        })
        .collect()
}

/// §8.4.2: a subgraph wrapper (a subgraph node's observation) takes the node position
/// of the node it stands for — its namespace, the step and attempt of its first inner
/// node — which its OA span does not carry.
fn wrapper_position(o: &mut Observation) {
    let m = &o.metadata;
    if !m.contains_key("subgraph_name")
        || m.contains_key("namespace")
        || m.contains_key("fan_out_parent_node_name")
    {
        return;
    }
    let Some(first) = o
        .children
        .iter()
        .find(|c| c.metadata.contains_key("namespace"))
    else {
        return;
    };
    let Some(Value::Array(ns)) = first.metadata.get("namespace") else {
        return;
    };
    let outer = ns[..ns.len().saturating_sub(1)].to_vec();
    let step = first.metadata.get("step").cloned();
    let attempt = first.metadata.get("attempt_index").cloned();
    o.metadata.insert("namespace".into(), Value::Array(outer));
    if let Some(step) = step {
        o.metadata.insert("step".into(), step);
    }
    if let Some(attempt) = attempt {
        o.metadata.insert("attempt_index".into(), attempt);
    }
}

/// The LLM spans that end their logical call: the highest attempt index per
/// `openarmature.llm.logical_call_id` (a span without one stands alone).
fn terminal_attempts(siblings: &[&SpanData]) -> HashSet<SpanId> {
    let mut best: HashMap<String, (u64, SpanId)> = HashMap::new();
    let mut out = HashSet::new();
    for s in siblings.iter().filter(|s| s.name == a::LLM_SPAN) {
        let id = s.span_context.span_id();
        let Some(call) = string(s, a::LLM_LOGICAL_CALL_ID) else {
            out.insert(id);
            continue;
        };
        let attempt = count(s, a::LLM_ATTEMPT_INDEX).unwrap_or(0);
        let slot = best.entry(call).or_insert((attempt, id));
        if attempt >= slot.0 {
            *slot = (attempt, id);
        }
    }
    out.extend(best.into_values().map(|(_, id)| id));
    out
}
