//! Spec: observability conformance (the fixture-001 header is normative for the suite)
//! and conformance-adapter §5.8 / §6.3 — the observability runner's OTel part.
//!
//! Each case builds its graph with the graph-engine builder (plus the observability
//! directives of [`ext`]), runs every invocation through
//! [`OtelObserver::invoke`] on a **private** tracer provider whose simple span
//! processor feeds an in-memory exporter (and, for §7, a private logger provider
//! with an in-memory log exporter), then matches the exported spans
//! ([`spans`]) and checks the named invariants ([`invariants`]).
//!
//! Register of fixture-shaped conventions (see ARCHITECTURE.md *Adapter register*):
//!
//! - O1 `detached_subgraphs` names subgraph *identities* (the `subgraphs:` keys); the
//!   observer is configured with the subgraph nodes that run them, and told each
//!   subgraph node's identity (`openarmature.subgraph.name`; the name of the subgraph
//!   span at the root of a detached trace).
//! - O2 OBS 007 case `three_attempts_third_succeeds` expects the failed attempt spans to
//!   carry `openarmature.error.category: provider_rate_limit`, the retried error's own
//!   category; §5.2 and the engine report the §4 category (`node_exception`) there, as
//!   OBS 003 / 008 / 119 expect (FIXTURE-QUIRKS Q1). That one attribute is checked for
//!   presence only.
//! - O3 `no_langfuse_observations_emitted` holds by construction: this implementation
//!   has no Langfuse backend yet.
//! - O4 `condition: {if_field, ...}` edges compile without destination hints (see
//!   [`ext`]).
//! - O5 OBS 058 case `detached_subgraph_attribution_propagates_to_child_trace_invocation_span`
//!   lists only `dispatch` under the parent invocation span although the graph also runs
//!   `after`; its `traces` children lists are matched as subsets (elsewhere children
//!   lists are exhaustive).

mod ext;
mod invariants;
mod spans;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use openarmature_graph::{DynState, InvokeOptions, State};
use openarmature_observability::{attributes as a, InvokeError, OtelObserver};
use opentelemetry::logs::AnyValue;
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::Value;

use self::ext::{EmittedLog, ObsExtension};
use self::spans::{attr_str, match_list, value_matches, Binder, Forest, MatchOpts};
use crate::ge::build::Builder;
use crate::ge::harness::{lock, Harness};
use crate::yaml::Y;
use crate::AdapterError;

/// Keys a case may carry.
const CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "state",
    "entry",
    "nodes",
    "edges",
    "middleware",
    "initial_state",
    "expected",
    "expected_error",
    "subgraph",
    "subgraphs",
    "caller_correlation_id",
    "caller_metadata",
    "detached_subgraphs",
    "detached_fan_outs",
    "invocations",
];

/// File-level keys of a `cases:` fixture.
const FILE_KEYS: &[&str] = &[
    "cases",
    "subgraph",
    "subgraphs",
    "description",
    "conformance_version",
];

const EXPECTED_KEYS: &[&str] = &[
    "span_tree",
    "traces",
    "parent_trace",
    "detached_trace_count",
    "invariants",
    "no_edge_spans",
    "log_records",
    "invocation_count",
    "determinism_check",
    "invoke_rejects_at_api_boundary",
    "no_spans_emitted",
    "no_langfuse_observations_emitted",
    "final_state",
];

fn err(e: AdapterError) -> String {
    e.to_string()
}

/// How one invocation ended.
enum Outcome {
    Completed(Value),
    Rejected,
    Failed { category: String, node: String },
}

/// An exported log record, as fixtures assert it.
pub(crate) struct LogView {
    pub(crate) body: String,
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) attributes: BTreeMap<String, Value>,
}

/// Everything a case's assertions read.
pub(crate) struct Run<'a> {
    pub(crate) forest: &'a Forest,
    pub(crate) logs: Vec<LogView>,
    pub(crate) emitted: Vec<EmittedLog>,
    case: &'a Y<'a>,
    invocation_ids: Vec<String>,
}

impl Run<'_> {
    /// Each invocation's spans (all its traces), in invocation order.
    pub(crate) fn per_invocation(&self) -> Vec<Vec<&SpanData>> {
        self.invocation_ids
            .iter()
            .map(|id| {
                let mut spans = Vec::new();
                for trace in self.forest.trace_ids() {
                    let mine = self
                        .forest
                        .roots_of(trace)
                        .iter()
                        .any(|r| attr_str(r, a::INVOCATION_ID).as_deref() == Some(id.as_str()));
                    if mine {
                        spans.extend(self.forest.in_trace(trace));
                    }
                }
                spans
            })
            .collect()
    }

    /// The branch names declared by the case's parallel-branches nodes.
    pub(crate) fn declared_branches(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (_, node) in self
            .case
            .get("nodes")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            if let Some(branches) = node
                .get("parallel_branches")
                .and_then(|p| p.get("branches"))
            {
                out.extend(
                    branches
                        .entries()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, _)| k),
                );
            }
        }
        out
    }
}

/// Every `(subgraph node, subgraph identity)` pair in the case's graph definitions.
fn subgraph_nodes(graphs: &[Y<'_>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for g in graphs {
        for (name, spec) in g
            .get("nodes")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            if let Some(id) = spec.get("subgraph").and_then(|s| s.str().ok()) {
                out.push((name, id.to_owned()));
            }
        }
    }
    out
}

/// The case's graph definitions: the case itself and every subgraph definition.
fn graph_defs<'a>(doc: &Y<'a>, case: &Y<'a>) -> Vec<Y<'a>> {
    let mut out = vec![case.clone()];
    for holder in [doc, case] {
        if let Some(one) = holder.get("subgraph") {
            out.push(one);
        }
        if let Some(many) = holder.get("subgraphs") {
            out.extend(
                many.entries()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(_, d)| d),
            );
        }
    }
    out
}

/// Runs one observability case.
pub(crate) async fn run_case<'a>(doc: &Y<'a>, case: &Y<'a>) -> Result<(), String> {
    if case.value == doc.value {
        let mut keys = CASE_KEYS.to_vec();
        keys.push("conformance_version");
        case.check_keys(&keys).map_err(err)?;
    } else {
        doc.check_keys(FILE_KEYS).map_err(err)?;
        case.check_keys(CASE_KEYS).map_err(err)?;
    }

    let span_exporter = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(span_exporter.clone())
        .build();
    let log_exporter = InMemoryLogExporter::default();
    let logger_provider = SdkLoggerProvider::builder()
        .with_simple_exporter(log_exporter.clone())
        .build();

    let defs = graph_defs(doc, case);
    let sub_nodes = subgraph_nodes(&defs);
    let mut ob = OtelObserver::builder(&tracer_provider).logger_provider(&logger_provider);
    for (node, identity) in &sub_nodes {
        ob = ob.subgraph_name(node, identity);
    }
    if let Some(list) = case.get("detached_subgraphs") {
        for identity in list.strings().map_err(err)? {
            let nodes: Vec<&String> = sub_nodes
                .iter()
                .filter(|(_, id)| *id == identity)
                .map(|(n, _)| n)
                .collect();
            if nodes.is_empty() {
                return Err(err(
                    list.invalid(format!("no node runs subgraph `{identity}`"))
                ));
            }
            for n in nodes {
                ob = ob.detach_subgraph(n);
            }
        }
    }
    if let Some(list) = case.get("detached_fan_outs") {
        for node in list.strings().map_err(err)? {
            ob = ob.detach_fan_out(node);
        }
    }
    let observer = ob.build();

    let harness = Arc::new(Harness::default());
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.extension = Some(Arc::new(ObsExtension {
        observer: observer.clone(),
        logs: Arc::clone(&emitted),
    }));
    builder.collect_defs(doc).map_err(err)?;
    if case.value != doc.value {
        builder.collect_defs(case).map_err(err)?;
    }
    let initial = match case.get("initial_state") {
        None => Value::Null,
        Some(y) if y.is_null() || y.value.is_mapping() => y.json().map_err(err)?,
        Some(y) => return Err(err(y.invalid("initial_state must be a mapping"))),
    };
    let extra: Vec<String> = initial
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let graph = builder
        .graph(case, true, &extra)
        .map_err(err)?
        .map_err(|e| format!("unexpected compile error: {e}"))?;

    let count = match case.get("invocations") {
        Some(n) => usize::try_from(n.i64().map_err(err)?)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| err(n.invalid("invocations must be a positive integer")))?,
        None => 1,
    };
    let correlation_id = case
        .get("caller_correlation_id")
        .map(|c| c.str().map(str::to_owned))
        .transpose()
        .map_err(err)?;
    let metadata = match case.get("caller_metadata") {
        Some(m) => match m.json().map_err(err)? {
            Value::Object(map) => map,
            _ => return Err(err(m.invalid("caller_metadata must be a mapping"))),
        },
        None => serde_json::Map::new(),
    };

    let mut outcomes = Vec::new();
    let mut invocation_ids = Vec::new();
    for _ in 0..count {
        let state: DynState = graph
            .defaults()
            .schema()
            .state_from_json(&initial)
            .map_err(|e| format!("initial_state: {e}"))?;
        let options = InvokeOptions {
            correlation_id: correlation_id.clone(),
            metadata: metadata.clone(),
            ..InvokeOptions::default()
        };
        outcomes.push(match observer.invoke(&graph, state, options).await {
            Ok(done) => {
                invocation_ids.push(done.invocation_id);
                Outcome::Completed(State::to_json(&done.state))
            }
            Err(InvokeError::Graph(e)) => {
                invocation_ids.push(e.invocation_id().to_owned());
                Outcome::Failed {
                    category: e.category_name().to_owned(),
                    node: e.node().to_owned(),
                }
            }
            Err(_) => Outcome::Rejected,
        });
    }
    graph.drain(None).await;
    observer.close_all();
    let spans = span_exporter
        .get_finished_spans()
        .map_err(|e| format!("in-memory exporter: {e}"))?;
    let forest = Forest::new(spans);
    let logs = log_views(&log_exporter)?;
    let run = Run {
        forest: &forest,
        logs,
        emitted: lock(&emitted).clone(),
        case,
        invocation_ids,
    };

    if let Some(e) = case.get("expected_error") {
        expected_error(&e, &outcomes).map_err(|m| format!("expected_error: {m}"))?;
    }
    let expected = case.req("expected").map_err(err)?;
    assert_expected(&expected, &run, &outcomes, &harness)
}

fn log_views(exporter: &InMemoryLogExporter) -> Result<Vec<LogView>, String> {
    let mut logs = exporter
        .get_emitted_logs()
        .map_err(|e| format!("in-memory log exporter: {e}"))?;
    logs.sort_by_key(|l| l.record.timestamp());
    Ok(logs
        .into_iter()
        .map(|l| {
            let r = &l.record;
            let (trace_id, span_id) = r
                .trace_context()
                .map(|t| (t.trace_id.to_string(), t.span_id.to_string()))
                .unwrap_or_default();
            LogView {
                body: r
                    .body()
                    .map(any_json)
                    .map_or_else(String::new, |v| match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }),
                trace_id,
                span_id,
                attributes: r
                    .attributes_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), any_json(v)))
                    .collect(),
            }
        })
        .collect())
}

fn any_json(v: &AnyValue) -> Value {
    match v {
        AnyValue::Int(i) => Value::from(*i),
        AnyValue::Double(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        AnyValue::String(s) => Value::String(s.as_str().to_owned()),
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::ListAny(items) => Value::Array(items.iter().map(any_json).collect()),
        AnyValue::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_owned(), any_json(v)))
                .collect(),
        ),
        _ => Value::Null,
    }
}

fn expected_error(e: &Y<'_>, outcomes: &[Outcome]) -> Result<(), String> {
    e.check_keys(&["category", "raised_from"]).map_err(err)?;
    let Some(Outcome::Failed { category, node }) = outcomes.first() else {
        return Err("the invocation did not fail".into());
    };
    if let Some(want) = e.get("category") {
        let want = want.str().map_err(err)?;
        if want != category {
            return Err(format!("category {category}, expected {want}"));
        }
    }
    if let Some(want) = e.get("raised_from") {
        let want = want.str().map_err(err)?;
        if want != node {
            return Err(format!("raised from {node}, expected {want}"));
        }
    }
    Ok(())
}

fn truthy(y: &Y<'_>) -> Result<(), String> {
    if y.bool().map_err(err)? {
        Ok(())
    } else {
        Err(format!("{}: only `true` is supported", y.location()))
    }
}

fn assert_expected(
    expected: &Y<'_>,
    run: &Run<'_>,
    outcomes: &[Outcome],
    harness: &Harness,
) -> Result<(), String> {
    expected.check_keys(EXPECTED_KEYS).map_err(err)?;
    let forest = run.forest;
    let mut binder = Binder::default();
    if let Some(tree) = expected.get("span_tree") {
        let want = tree.seq().map_err(err)?;
        let opts = if run.case.get("name").and_then(|n| n.str().ok()) == Some(O2_CASE) {
            MatchOpts {
                presence_only: &[a::ERROR_CATEGORY],
                ..MatchOpts::default()
            }
        } else {
            MatchOpts::default()
        };
        binder = match_list(&want, &forest.roots(), forest, &binder, &opts, "span_tree")?;
    }
    if let Some(traces) = expected.get("traces") {
        let opts = MatchOpts {
            subset_children: run.case.get("name").and_then(|n| n.str().ok()) == Some(O5_CASE),
            ..MatchOpts::default()
        };
        binder = match_traces(&traces.seq().map_err(err)?, forest, &binder, &opts)?;
    }
    if let Some(parent) = expected.get("parent_trace") {
        parent.check_keys(&["span_tree"]).map_err(err)?;
        let parents = forest.parent_traces();
        let [trace] = parents.as_slice() else {
            return Err(format!("parent_trace: {} parent traces", parents.len()));
        };
        let want = parent.req("span_tree").and_then(|t| t.seq()).map_err(err)?;
        binder = match_list(
            &want,
            &forest.roots_of(*trace),
            forest,
            &binder,
            &MatchOpts::default(),
            "parent_trace",
        )?;
    }
    if let Some(n) = expected.get("detached_trace_count") {
        let want = n.i64().map_err(err)?;
        let got = forest
            .trace_ids()
            .len()
            .saturating_sub(forest.parent_traces().len());
        if i64::try_from(got).ok() != Some(want) {
            return Err(format!("detached_trace_count: {got}, expected {want}"));
        }
    }
    if let Some(records) = expected.get("log_records") {
        check_logs(&records.seq().map_err(err)?, &run.logs, &mut binder)?;
    }
    if let Some(n) = expected.get("invocation_count") {
        let want = n.i64().map_err(err)?;
        let roots = forest
            .parent_traces()
            .into_iter()
            .flat_map(|t| forest.roots_of(t))
            .filter(|r| r.name == a::INVOCATION_SPAN)
            .count();
        if i64::try_from(outcomes.len()).ok() != Some(want)
            || i64::try_from(roots).ok() != Some(want)
        {
            return Err(format!(
                "invocation_count: {} invocations, {roots} invocation spans, expected {want}",
                outcomes.len()
            ));
        }
    }
    if let Some(d) = expected.get("determinism_check") {
        determinism(&d, run)?;
    }
    if let Some(flag) = expected.get("invoke_rejects_at_api_boundary") {
        truthy(&flag)?;
        if !outcomes.iter().all(|o| matches!(o, Outcome::Rejected)) {
            return Err("invoke_rejects_at_api_boundary: the invocation was not rejected".into());
        }
        if !lock(&harness.order).is_empty() {
            return Err("invoke_rejects_at_api_boundary: a node ran".into());
        }
    }
    if let Some(flag) = expected.get("no_spans_emitted") {
        truthy(&flag)?;
        if !forest.spans.is_empty() {
            return Err(format!("no_spans_emitted: {} spans", forest.spans.len()));
        }
    }
    if let Some(flag) = expected.get("no_langfuse_observations_emitted") {
        // Register O3: there is no Langfuse backend to emit anything.
        truthy(&flag)?;
    }
    if let Some(flag) = expected.get("no_edge_spans") {
        truthy(&flag)?;
        no_edge_spans(run)?;
    }
    if let Some(state) = expected.get("final_state") {
        let want = state.json().map_err(err)?;
        match outcomes.first() {
            Some(Outcome::Completed(got)) => crate::matchers::check(
                &want,
                got,
                &mut crate::matchers::Bindings::default(),
                "final_state",
            )?,
            _ => return Err("final_state: the invocation did not complete".into()),
        }
    }
    if let Some(inv) = expected.get("invariants") {
        invariants::check_all(&inv, run)?;
    }
    Ok(())
}

/// Register O2 (see the module docs).
const O2_CASE: &str = "three_attempts_third_succeeds";

/// Register O5 (see the module docs).
const O5_CASE: &str = "detached_subgraph_attribution_propagates_to_child_trace_invocation_span";

fn match_traces(
    expected: &[Y<'_>],
    forest: &Forest,
    binder: &Binder,
    opts: &MatchOpts,
) -> Result<Binder, String> {
    let actual = forest.trace_ids();
    if actual.len() != expected.len() {
        return Err(format!(
            "traces: {} traces, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    fn go(
        expected: &[Y<'_>],
        actual: &[opentelemetry::trace::TraceId],
        used: &mut Vec<bool>,
        forest: &Forest,
        binder: &Binder,
        opts: &MatchOpts,
    ) -> Result<Binder, String> {
        let Some((first, rest)) = expected.split_first() else {
            return Ok(binder.clone());
        };
        first.check_keys(&["trace_id", "span_tree"]).map_err(err)?;
        let token = first
            .req("trace_id")
            .and_then(|t| t.str().map(str::to_owned))
            .map_err(err)?;
        let tree = first.req("span_tree").and_then(|t| t.seq()).map_err(err)?;
        let mut last = None;
        for (i, trace) in actual.iter().enumerate() {
            if used[i] {
                continue;
            }
            let mut b = binder.clone();
            if let Err(e) = b.bind(&token, &trace.to_string()) {
                last = Some(e);
                continue;
            }
            match match_list(
                &tree,
                &forest.roots_of(*trace),
                forest,
                &b,
                opts,
                &format!("traces[{token}]"),
            ) {
                Ok(b) => {
                    used[i] = true;
                    match go(rest, actual, used, forest, &b, opts) {
                        Ok(done) => return Ok(done),
                        Err(e) => {
                            used[i] = false;
                            last = Some(e);
                        }
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| "traces: no trace left".into()))
    }
    go(
        expected,
        &actual,
        &mut vec![false; actual.len()],
        forest,
        binder,
        opts,
    )
}

fn check_logs(expected: &[Y<'_>], logs: &[LogView], binder: &mut Binder) -> Result<(), String> {
    if expected.len() != logs.len() {
        let bodies: Vec<&str> = logs.iter().map(|l| l.body.as_str()).collect();
        return Err(format!(
            "log_records: {} records, expected {}: {bodies:?}",
            logs.len(),
            expected.len()
        ));
    }
    for (i, (want, got)) in expected.iter().zip(logs).enumerate() {
        let path = format!("log_records[{i}]");
        want.check_keys(&["body", "attributes"]).map_err(err)?;
        if let Some(body) = want.get("body") {
            let body = body.str().map_err(err)?;
            if body != got.body {
                return Err(format!("{path}: body `{}`, expected `{body}`", got.body));
            }
        }
        if let Some(attrs) = want.get("attributes") {
            for (key, v) in attrs.entries().map_err(err)? {
                let v = v.json().map_err(err)?;
                let actual = match key.as_str() {
                    "trace_id" => Value::from(got.trace_id.clone()),
                    "span_id" => Value::from(got.span_id.clone()),
                    _ => got
                        .attributes
                        .get(&key)
                        .cloned()
                        .ok_or_else(|| format!("{path}: attribute `{key}` is missing"))?,
                };
                value_matches(&v, &actual, binder, &format!("{path}.{key}"))?;
            }
        }
    }
    Ok(())
}

fn no_edge_spans(run: &Run<'_>) -> Result<(), String> {
    let mut names: Vec<String> = vec![a::INVOCATION_SPAN.into(), a::LLM_SPAN.into()];
    for (_, node) in run
        .case
        .get("nodes")
        .and_then(|n| n.entries().ok())
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.clone(), (k, v)))
    {
        names.push(node.0);
    }
    match run
        .forest
        .spans
        .iter()
        .find(|s| !names.iter().any(|n| *n == s.name))
    {
        Some(s) => Err(format!("no_edge_spans: unexpected span `{}`", s.name)),
        None => Ok(()),
    }
}

/// A run's spans as a canonical string: names, statuses and attributes (minus the
/// ignored ones), children sorted.
fn canonical(span: &SpanData, forest: &Forest, ignore: &[String]) -> String {
    let ignored = |k: &str| {
        ignore.iter().any(|i| match i.strip_suffix('*') {
            Some(prefix) => k.starts_with(prefix),
            None => k == i,
        })
    };
    let mut attrs: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| !ignored(kv.key.as_str()))
        .map(|kv| format!("{}={}", kv.key, spans::json_of(&kv.value)))
        .collect();
    attrs.sort();
    let mut kids: Vec<String> = forest
        .children(span)
        .into_iter()
        .map(|c| canonical(c, forest, ignore))
        .collect();
    kids.sort();
    format!(
        "{}[{:?}]{{{}}}({})",
        span.name,
        span.status,
        attrs.join(","),
        kids.join(";")
    )
}

fn determinism(d: &Y<'_>, run: &Run<'_>) -> Result<(), String> {
    d.check_keys(&[
        "compare_runs",
        "ignore_attributes",
        "compare",
        "require_equal",
    ])
    .map_err(err)?;
    for aspect in d
        .get("compare")
        .map(|c| c.strings())
        .transpose()
        .map_err(err)?
        .unwrap_or_default()
    {
        if ![
            "span_tree_structure",
            "span_names",
            "span_status",
            "span_attributes_excluding_ignored",
        ]
        .contains(&aspect.as_str())
        {
            return Err(format!(
                "fixture_directive_unknown: determinism aspect `{aspect}`"
            ));
        }
    }
    let ignore = d
        .get("ignore_attributes")
        .map(|c| c.strings())
        .transpose()
        .map_err(err)?
        .unwrap_or_default();
    let runs: Vec<i64> = d
        .req("compare_runs")
        .and_then(|r| r.seq())
        .map_err(err)?
        .iter()
        .map(|r| r.i64())
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let require_equal = d
        .get("require_equal")
        .map(|r| r.bool())
        .transpose()
        .map_err(err)?
        .unwrap_or(true);
    let forms: Vec<String> = run
        .invocation_ids
        .iter()
        .map(|id| {
            let mut roots: Vec<String> = run
                .forest
                .roots()
                .into_iter()
                .filter(|r| attr_str(r, a::INVOCATION_ID).as_deref() == Some(id.as_str()))
                .map(|r| canonical(r, run.forest, &ignore))
                .collect();
            roots.sort();
            roots.join("|")
        })
        .collect();
    let picked: Vec<&String> = runs
        .iter()
        .map(|i| {
            usize::try_from(*i)
                .ok()
                .and_then(|i| forms.get(i))
                .ok_or_else(|| format!("determinism_check: no run {i}"))
        })
        .collect::<Result<_, _>>()?;
    let equal = picked.windows(2).all(|w| w[0] == w[1]);
    if equal == require_equal {
        Ok(())
    } else {
        Err(format!("determinism_check: runs differ: {picked:?}"))
    }
}
