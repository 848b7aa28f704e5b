//! Spec: observability conformance (the fixture-001 header is normative for the suite)
//! and conformance-adapter §5.8 / §6.3 — the observability runner.
//!
//! Each case builds its graph with the graph-engine builder (plus the observability
//! directives of [`ext`] and the LLM directives of [`llm`]), runs every invocation
//! through [`OtelObserver::invoke`] on a **private** tracer provider whose simple span
//! processor feeds an in-memory exporter (and, for §7, a private logger provider with
//! an in-memory log exporter), then matches the exported spans ([`spans`]), the typed
//! observers' storage ([`typed`]) and the named invariants ([`invariants`],
//! [`llm_invariants`]). Besides the fixture's `typed_observers`, an implicit recorder
//! keeps every event of the invocation (the invariants read it).
//!
//! Cases that call an LLM run on their own unpaused runtime in a dedicated thread
//! (real sockets to the 127.0.0.1 mock provider do not mix with a paused clock).
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
//! - O6 bound model (FIXTURE-QUIRKS Q3): `calls_llm.model`, else the first 2xx
//!   `mock_llm` body's model when it is exactly `gpt-test` or `test-model`, else
//!   `test-model`. A case-level `expected_error.category` is compared with the §4
//!   category of the graph error, except when the failure's cause chain carries an
//!   `LlmError` (an LLM call raised through the node): then with that error's
//!   llm-provider §7 category, which is what 069–073 name ("the exception propagates
//!   out of `provider.complete()`"); 007 still sees `node_exception`.
//!   `node_completed_event_carries_error.error_category` is the §6.4 derived category
//!   (FIXTURE-QUIRKS Q1).
//! - O7 `inner_subgraphs` (054 / 055) is shorthand for `subgraphs` whose state is
//!   implied: each gets `input: dict` (the fan-out item) and one `any` field per
//!   `stores_response_in`. `fan_out: {items_field, inner_subgraph}` fans the items
//!   into `input` (an undeclared items field is declared `list<any>`) and collects
//!   the stored reply into a synthesized outer `__collected: list<any>` (the
//!   fixtures assert events only);
//!   `parallel_branches: {branches: [names]}` runs the same-named inner subgraphs.
//!   `final_state` is compared over the declared (and expected) fields only, so the
//!   synthesized fields do not count.
//! - O8 `calls_llm.tools` in the OpenAI wire shape (`{type: function, function:
//!   {...}}`, 061) is read as the §4 tool record it describes.
//! - O9 `prompt_backend.type: filesystem` with inline `prompts` (064 / 066) is served
//!   by the in-memory prompt backend with each prompt's `version` and
//!   `template_hash` taken verbatim (see [`prompts`]).
//! - O10 `metrics:` (§5.8, observability §11) reads an aggregating in-memory reader,
//!   so entries naming the same instrument and dimension set are matched together:
//!   their count is the point's observation count (histograms) and their values add
//!   up to its sum (histograms) or value (counters). Each named instrument's list is
//!   exhaustive; instruments the list does not name are not constrained by it (131
//!   lists only the budget instruments beside the token / duration ones it records).
//!   See [`metrics`].
//! - O11 §3.4 / §9 harness directives (see [`meta`]): a queryable-observer read first
//!   waits for the delivery of the events emitted so far (`NodeCtx::drain_events`,
//!   the §9.2 stability gate), so 049's `captured_bucket_is_non_empty` is
//!   deterministic; an inner subgraph node's `capture_invocation_metadata_into: f`
//!   (044) gives the inner state an `any` field `f` that the fan-out collects into
//!   the outer field `f`; `augment_metadata` / capture directives run at the top of
//!   the node body, in document order.
//! - O12 `calls_llm.response: <text>` (038) gives the node its own mock provider
//!   answering every call with one synthesized 200 completion of that text (see
//!   [`canned`]).
//! - O13 `calls_llm_from_wrapper: {phase, messages}` (133 / 152 / 153) is an
//!   innermost node middleware making one real call on the node's context before
//!   (`pre`) or after (`post`) `next`; its calls are recorded as wrapper-made, which
//!   is how the orphan invariants pick their spans. A `post` call is not an orphan
//!   here (§6 `completed` follows the merge, so the node span is still open; no
//!   fixture uses `post`). See [`wrapper_llm`].
//! - O14 invariant readings ([`usage_invariants`], [`lineage_invariants`],
//!   [`orphan_invariants`]): a provider span is paired with its call's
//!   `LlmCompletionEvent` and `mock_llm` body by response id; span lineage is read
//!   from instance / dispatch spans; "closes in order" is export order (the simple
//!   processor exports at end) with non-decreasing end times; `fan_out_index_range`
//!   holds per fan-out node span (132 nests one inner fan-out per outer instance);
//!   "sibling of the calling node" compares delivery order of events, not span times
//!   (the per-attempt LLM signal carries no timestamp).
//! - O15 `observers: [{behavior: record}]` (119) is served by the implicit recorder;
//!   other behaviours are refused (see [`attempts`]).

mod attempts;
mod canned;
mod ext;
mod invariants;
mod lineage_invariants;
mod llm;
mod llm_invariants;
mod meta;
mod metric_invariants;
mod metrics;
mod orphan_invariants;
mod prompts;
mod spans;
mod typed;
mod usage_invariants;
mod wrapper_llm;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use openarmature_graph::{
    observer_fn, DynState, InvokeOptions, ObserverEvent, Registration, State,
};
use openarmature_llm::LlmError;
use openarmature_observability::{attributes as a, InvokeError, OtelObserver};
use opentelemetry::logs::AnyValue;
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::Value;

use self::ext::{EmittedLog, ObsExtension};
use self::llm::{CallRecord, LlmHarness};
use self::prompts::PromptHarness;
use self::spans::{attr, attr_str, match_list, value_matches, Binder, Forest, MatchOpts};
use self::typed::Collector;

/// An OpenTelemetry attribute value as JSON (shared with the llm-provider runner).
pub(crate) use self::spans::json_of as attribute_json;
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
    "inner_subgraphs",
    "caller_correlation_id",
    "caller_metadata",
    "detached_subgraphs",
    "detached_fan_outs",
    "invocations",
    "mock_llm",
    "provider",
    "typed_observers",
    "disable_llm_spans",
    "disable_provider_payload",
    "disable_genai_semconv",
    "caller_global_otel_active",
    "prompt_backend",
    "render_variables",
    "caller_invocation_id",
    "queryable_observers",
    "direct_call",
    "observers",
    SYNTHESIZED,
    "enable_metrics",
];

/// File-level keys of a `cases:` fixture.
const FILE_KEYS: &[&str] = &[
    "cases",
    "subgraph",
    "subgraphs",
    "description",
    "conformance_version",
    "sequential_invocations",
    "queryable_observers",
    "informative",
];

const EXPECTED_KEYS: &[&str] = &[
    "span_tree",
    "span_tree_private",
    "span_tree_global",
    "no_openarmature_spans_on_global",
    "traces",
    "parent_trace",
    "detached_trace_count",
    "invariants",
    "no_edge_spans",
    "no_llm_provider_span",
    "llm_span_attributes",
    "llm_span_attributes_absent",
    "response_usage",
    "observers",
    "node_completed_event_carries_error",
    "log_records",
    "invocation_count",
    "determinism_check",
    "invoke_rejects_at_api_boundary",
    "no_spans_emitted",
    "no_langfuse_observations_emitted",
    "final_state",
    "metrics",
    "augment_rejects_at_call_site",
    "final_state_bounds",
    "per_invocation",
    "invocation_id",
    "observer_event_invariants",
];

fn err(e: AdapterError) -> String {
    e.to_string()
}

/// How one invocation ended.
enum Outcome {
    Completed(Value),
    Rejected,
    Failed {
        category: String,
        node: String,
        /// The §7 category of the `LlmError` in the cause chain, if any.
        llm: Option<String>,
    },
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
    /// Every event of every invocation, in delivery order (the implicit recorder).
    pub(crate) events: Vec<Arc<ObserverEvent>>,
    /// The fixture's typed observers.
    pub(crate) collectors: Vec<Arc<Collector>>,
    /// Every LLM call the nodes made, in completion order.
    pub(crate) calls: Vec<CallRecord>,
    /// Whether each invocation failed, and the §7 category it raised (if an LLM call).
    pub(crate) failures: Vec<Option<Option<String>>>,
    /// What the §3.4 / §9 directives recorded, and the final states.
    pub(crate) meta: Arc<meta::MetaHarness>,
    /// The §6.9 metric capture's points.
    pub(crate) metrics: Vec<metrics::Point>,
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

    /// The case's caller metadata.
    pub(crate) fn caller_metadata(&self) -> serde_json::Map<String, Value> {
        match self.case.get("caller_metadata").and_then(|m| m.json().ok()) {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }

    /// The `config` each `calls_llm` node declares, by node name.
    pub(crate) fn call_configs(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for (name, node) in self
            .case
            .get("nodes")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            if let Some(call) = node.get("calls_llm") {
                let config = call
                    .get("config")
                    .and_then(|c| c.json().ok())
                    .unwrap_or(Value::Null);
                out.push((name, config));
            }
        }
        out
    }

    /// The LLM provider spans.
    pub(crate) fn llm_spans(&self) -> Vec<&SpanData> {
        self.forest
            .spans
            .iter()
            .filter(|s| s.name == a::LLM_SPAN)
            .collect()
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

/// Whether a YAML value mentions `key` anywhere.
fn mentions(v: &serde_norway::Value, key: &str) -> bool {
    match v {
        serde_norway::Value::Mapping(m) => m
            .iter()
            .any(|(k, v)| k.as_str() == Some(key) || mentions(v, key)),
        serde_norway::Value::Sequence(items) => items.iter().any(|i| mentions(i, key)),
        serde_norway::Value::Tagged(t) => mentions(&t.value, key),
        _ => false,
    }
}

/// Runs one observability case; cases that call an LLM get their own unpaused
/// runtime with I/O, in a dedicated thread.
pub(crate) async fn run_case<'a>(doc: &Y<'a>, case: &Y<'a>) -> Result<(), String> {
    if case.get("direct_call").is_some() {
        return meta::expect::direct_call(case);
    }
    let needs_llm = case.get("mock_llm").is_some() || mentions(case.value, "calls_llm");
    let desugared = llm_desugar(case).map_err(err)?;
    if !needs_llm {
        let case = desugared
            .as_ref()
            .map_or_else(|| case.clone(), |v| Y::root(v, case.file));
        return run_inner(doc, &case, false).await;
    }
    let file = case.file.to_path_buf();
    let single = std::ptr::eq(doc.value, case.value);
    let doc_value = doc.value.clone();
    let case_value = desugared.unwrap_or_else(|| case.value.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("observability-llm-case".into())
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(async {
                    let doc = Y::root(&doc_value, &file);
                    let case = if single {
                        doc.clone()
                    } else {
                        Y::root(&case_value, &file)
                    };
                    run_inner(&doc, &case, true).await
                }),
                Err(e) => Err(format!("cannot start a runtime: {e}")),
            };
            let _ = tx.send(result);
        })
        .map_err(|e| format!("cannot start the case thread: {e}"))?;
    rx.await
        .map_err(|_| "the observability case thread panicked".to_owned())?
}

/// Register O7: rewrites `inner_subgraphs` shorthand into `subgraphs`, or `None`.
fn llm_desugar(case: &Y<'_>) -> Result<Option<serde_norway::Value>, AdapterError> {
    use serde_norway::{Mapping, Value as Yv};
    let Some(inner) = case.get("inner_subgraphs") else {
        return Ok(None);
    };
    let k = |s: &str| Yv::String(s.to_owned());
    let field = |ty: &str| {
        let mut m = Mapping::new();
        m.insert(k("type"), k(ty));
        Yv::Mapping(m)
    };
    let mut subgraphs = Mapping::new();
    let mut stored: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    // Register O11: an inner `capture_invocation_metadata_into: f` (044) names the
    // outer list the reads are collected into.
    let mut captured: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (name, def) in inner.entries()? {
        def.check_keys(&["entry", "nodes", "edges"])?;
        let Yv::Mapping(mut m) = def.value.clone() else {
            return Err(def.invalid("an inner subgraph is a mapping"));
        };
        let mut fields = Mapping::new();
        fields.insert(k("input"), field("dict"));
        for (_, node) in def.req("nodes")?.entries()? {
            if let Some(target) = node
                .get("calls_llm")
                .and_then(|c| c.get("stores_response_in"))
            {
                let target = target.str()?.to_owned();
                fields.insert(k(&target), field("any"));
                stored.insert(name.clone(), target);
            }
            if let Some(target) = node.get("capture_invocation_metadata_into") {
                let target = target.str()?.to_owned();
                fields.insert(k(&target), field("any"));
                captured.insert(name.clone(), target);
            }
        }
        let mut state = Mapping::new();
        state.insert(k("fields"), Yv::Mapping(fields));
        m.insert(k("state"), Yv::Mapping(state));
        subgraphs.insert(k(&name), Yv::Mapping(m));
    }
    let Yv::Mapping(mut out) = case.value.clone() else {
        return Err(case.invalid("a case is a mapping"));
    };
    out.remove("inner_subgraphs");
    out.insert(k("subgraphs"), Yv::Mapping(subgraphs));
    let mut collects = false;
    let mut item_lists = Vec::new();
    if let Some(Yv::Mapping(nodes)) = out.get_mut("nodes") {
        for (_, node) in nodes.iter_mut() {
            let Yv::Mapping(node) = node else { continue };
            if let Some(Yv::Mapping(f)) = node.get_mut("fan_out") {
                if let Some(Yv::String(items)) = f.get("items_field") {
                    item_lists.push(items.clone());
                }
                if let Some(Yv::String(sub)) = f.remove("inner_subgraph") {
                    f.insert(k("subgraph"), k(&sub));
                    f.insert(k("item_field"), k("input"));
                    if let Some(target) = captured.get(&sub) {
                        f.insert(k("collect_field"), k(target));
                        f.insert(k("target_field"), k(target));
                    } else {
                        let collect = stored.get(&sub).cloned().unwrap_or_else(|| "input".into());
                        f.insert(k("collect_field"), k(&collect));
                        f.insert(k("target_field"), k("__collected"));
                        collects = true;
                    }
                }
            }
            if let Some(Yv::Mapping(p)) = node.get_mut("parallel_branches") {
                if let Some(Yv::Sequence(names)) = p.get("branches").cloned() {
                    let mut branches = Mapping::new();
                    for n in names {
                        let mut b = Mapping::new();
                        b.insert(k("subgraph"), n.clone());
                        branches.insert(n, Yv::Mapping(b));
                    }
                    p.insert(k("branches"), Yv::Mapping(branches));
                }
            }
        }
    }
    let mut synthesized = Vec::new();
    if let Some(Yv::Mapping(state)) = out.get_mut("state") {
        if let Some(Yv::Mapping(fields)) = state.get_mut("fields") {
            if collects {
                fields.insert(k("__collected"), field("list<any>"));
                synthesized.push(k("__collected"));
            }
            for items in item_lists {
                if !fields.contains_key(items.as_str()) {
                    fields.insert(k(&items), field("list<any>"));
                    synthesized.push(k(&items));
                }
            }
        }
    }
    // Remembered so `final_state` can leave them out.
    out.insert(k(SYNTHESIZED), Yv::Sequence(synthesized));
    Ok(Some(Yv::Mapping(out)))
}

/// The case's global-provider exporter (005 `caller_global_otel_active`): installed
/// for the case, under a process-wide lock, and replaced by a no-op provider after.
struct GlobalOtel {
    exporter: InMemorySpanExporter,
    _guard: std::sync::MutexGuard<'static, ()>,
}

static GLOBAL_OTEL: Mutex<()> = Mutex::new(());

impl GlobalOtel {
    fn install() -> GlobalOtel {
        let guard = GLOBAL_OTEL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        opentelemetry::global::set_tracer_provider(provider);
        GlobalOtel {
            exporter,
            _guard: guard,
        }
    }
}

impl Drop for GlobalOtel {
    fn drop(&mut self) {
        opentelemetry::global::set_tracer_provider(
            opentelemetry::trace::noop::NoopTracerProvider::new(),
        );
    }
}

fn flag(case: &Y<'_>, key: &str) -> Result<Option<bool>, String> {
    case.get(key).map(|f| f.bool()).transpose().map_err(err)
}

/// The adapter's own canonical JSON (sorted keys, no whitespace): what §5.5.1 says
/// the implementation emits, computed independently.
fn canonical_json(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}

/// Runs one case (on the current runtime).
async fn run_inner<'a>(doc: &Y<'a>, case: &Y<'a>, needs_llm: bool) -> Result<(), String> {
    if case.value == doc.value {
        let mut keys = CASE_KEYS.to_vec();
        keys.push("conformance_version");
        case.check_keys(&keys).map_err(err)?;
    } else {
        doc.check_keys(FILE_KEYS).map_err(err)?;
        case.check_keys(CASE_KEYS).map_err(err)?;
    }

    attempts::check_observers(case).map_err(err)?;
    let global = match flag(case, "caller_global_otel_active")? {
        Some(true) => Some(GlobalOtel::install()),
        _ => None,
    };
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
    if let Some(b) = flag(case, "disable_llm_spans")? {
        ob = ob.disable_llm_spans(b);
    }
    if let Some(b) = flag(case, "disable_provider_payload")? {
        ob = ob.disable_provider_payload(b);
    }
    if let Some(b) = flag(case, "disable_genai_semconv")? {
        ob = ob.disable_genai_semconv(b);
    }
    // §6.9: the observer's meter comes from a private provider read in memory.
    let meters = metrics::Capture::new();
    ob = ob
        .meter_provider(&meters.provider)
        .enable_metrics(flag(case, "enable_metrics")?.unwrap_or(false));
    let observer = ob.build();

    let llm = if needs_llm {
        Some(Arc::new(LlmHarness::start(case).await?))
    } else {
        None
    };
    let collectors: Vec<Arc<Collector>> = match case.get("typed_observers") {
        Some(list) => list
            .seq()
            .map_err(err)?
            .iter()
            .map(|o| Collector::parse(o).map(Arc::new))
            .collect::<Result<_, _>>()
            .map_err(err)?,
        None => Vec::new(),
    };
    let recorded: Arc<Mutex<Vec<Arc<ObserverEvent>>>> = Arc::default();
    let sink = Arc::clone(&recorded);
    let recorder = Registration::new(
        "__implicit_recorder",
        observer_fn(move |e: Arc<ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                lock(&sink).push(e);
                Ok(())
            }
        }),
    );

    let meta = Arc::new(meta::MetaHarness::from_case(doc, case).map_err(err)?);
    let harness = Arc::new(Harness::default());
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.extension = Some(Arc::new(ObsExtension {
        observer: observer.clone(),
        logs: Arc::clone(&emitted),
        llm: llm.clone(),
        prompts: PromptHarness::from_case(case).map_err(err)?.map(Arc::new),
        meta: Arc::clone(&meta),
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
    // 049 `sequential_invocations`: one invocation per entry, with its id.
    let count = if meta.sequence.is_empty() {
        count
    } else {
        meta.sequence.len()
    };
    let caller_invocation_id = case
        .get("caller_invocation_id")
        .map(|c| c.str().map(str::to_owned))
        .transpose()
        .map_err(err)?;
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
    for i in 0..count {
        let state: DynState = graph
            .defaults()
            .schema()
            .state_from_json(&initial)
            .map_err(|e| format!("initial_state: {e}"))?;
        let mut options = InvokeOptions {
            correlation_id: correlation_id.clone(),
            metadata: metadata.clone(),
            ..InvokeOptions::default()
        };
        options = options.observer(recorder.clone());
        options.invocation_id = meta
            .sequence
            .get(i)
            .map(|(_, id)| id.clone())
            .or_else(|| caller_invocation_id.clone());
        for q in &meta.observers {
            options = options.observer(q.registration());
        }
        for c in &collectors {
            options = options.observer(c.registration());
        }
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
                    llm: LlmError::find_in(e.cause()).map(|l| l.category().as_str().to_owned()),
                }
            }
            Err(_) => Outcome::Rejected,
        });
    }
    graph.drain(None).await;
    *lock(&meta.finals) = outcomes
        .iter()
        .map(|o| match o {
            Outcome::Completed(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    observer.close_all();
    let metric_points = meters.finish()?;
    let spans = span_exporter
        .get_finished_spans()
        .map_err(|e| format!("in-memory exporter: {e}"))?;
    let global_spans = match &global {
        Some(g) => Some(
            g.exporter
                .get_finished_spans()
                .map_err(|e| format!("global in-memory exporter: {e}"))?,
        ),
        None => None,
    };
    drop(global);
    if let Some(h) = &llm {
        let overruns = h.overruns();
        if !overruns.is_empty() {
            return Err(format!("mock provider exhausted: {}", overruns.join("; ")));
        }
    }
    let forest = Forest::new(spans);
    let global_forest = global_spans.map(Forest::new);
    let logs = log_views(&log_exporter)?;
    let events = lock(&recorded).clone();
    let mut opts = MatchOpts::default();
    if let Some(h) = &llm {
        opts.blobs = lock(&h.blobs).clone();
    }
    for e in &events {
        if let ObserverEvent::LlmAttempt(a) = &**e {
            opts.full_serializations.push(canonical_json(&Value::Array(
                a.request.input_messages.to_vec(),
            )));
        }
    }
    let run = Run {
        forest: &forest,
        logs,
        emitted: lock(&emitted).clone(),
        case,
        invocation_ids,
        events,
        collectors,
        calls: llm
            .as_ref()
            .map(|h| lock(&h.calls).clone())
            .unwrap_or_default(),
        meta: Arc::clone(&meta),
        failures: outcomes
            .iter()
            .map(|o| match o {
                Outcome::Failed { llm, .. } => Some(llm.clone()),
                _ => None,
            })
            .collect(),
        metrics: metric_points,
    };

    if let Some(e) = case.get("expected_error") {
        expected_error(&e, &outcomes).map_err(|m| format!("expected_error: {m}"))?;
    }
    let expected = case.req("expected").map_err(err)?;
    assert_expected(
        &expected,
        &run,
        &outcomes,
        &harness,
        &opts,
        global_forest.as_ref(),
    )?;
    meta::expect::check_expected(&expected, &run, &outcomes)?;
    attempts::check_expected(&expected, &run)
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
    let Some(Outcome::Failed {
        category,
        node,
        llm,
        ..
    }) = outcomes.first()
    else {
        return Err("the invocation did not fail".into());
    };
    if let Some(want) = e.get("category") {
        let want = want.str().map_err(err)?;
        // Register O6: an LLM error raised through the node is named by its §7 category.
        let got = llm.as_deref().unwrap_or(category);
        if want != got {
            return Err(format!("category {got}, expected {want}"));
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
    base: &MatchOpts,
    global: Option<&Forest>,
) -> Result<(), String> {
    expected.check_keys(EXPECTED_KEYS).map_err(err)?;
    let forest = run.forest;
    let mut binder = Binder::default();
    for key in ["span_tree", "span_tree_private"] {
        let Some(tree) = expected.get(key) else {
            continue;
        };
        let want = tree.seq().map_err(err)?;
        let mut opts = base.clone();
        if run.case.get("name").and_then(|n| n.str().ok()) == Some(O2_CASE) {
            opts.presence_only = &[a::ERROR_CATEGORY];
        }
        binder = match_list(&want, &forest.roots(), forest, &binder, &opts, key)?;
    }
    if let Some(tree) = expected.get("span_tree_global") {
        let global = global.ok_or("span_tree_global: no global provider was installed")?;
        let want = tree.seq().map_err(err)?;
        binder = match_list(
            &want,
            &global.roots(),
            global,
            &binder,
            base,
            "span_tree_global",
        )?;
    }
    if let Some(flag) = expected.get("no_openarmature_spans_on_global") {
        truthy(&flag)?;
        let global = global.ok_or("no_openarmature_spans_on_global: no global provider")?;
        if let Some(s) = global.spans.iter().find(|s| {
            s.name.starts_with("openarmature")
                || s.instrumentation_scope.name()
                    == openarmature_observability::INSTRUMENTATION_SCOPE
                || s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str().starts_with("openarmature."))
        }) {
            return Err(format!(
                "no_openarmature_spans_on_global: `{}` reached the global provider",
                s.name
            ));
        }
    }
    if let Some(flag) = expected.get("no_llm_provider_span") {
        truthy(&flag)?;
        let n = run.llm_spans().len();
        if n != 0 {
            return Err(format!("no_llm_provider_span: {n} LLM spans"));
        }
    }
    for key in ["llm_span_attributes", "llm_span_attributes_absent"] {
        let Some(block) = expected.get(key) else {
            continue;
        };
        let spans = run.llm_spans();
        if spans.is_empty() {
            return Err(format!("{key}: no LLM span"));
        }
        for span in spans {
            if key == "llm_span_attributes" {
                for (k, want) in block.entries().map_err(err)? {
                    let want = want.json().map_err(err)?;
                    let got = attr(span, &k).ok_or_else(|| format!("{key}: `{k}` is missing"))?;
                    value_matches(&want, &got, &mut binder, &format!("{key}.{k}"))?;
                }
            } else {
                for k in block.strings().map_err(err)? {
                    if let Some(v) = attr(span, &k) {
                        return Err(format!("{key}: `{k}` is present ({v})"));
                    }
                }
            }
        }
    }
    if let Some(usage) = expected.get("response_usage") {
        let want = usage.json().map_err(err)?;
        let [call] = run.calls.as_slice() else {
            return Err(format!(
                "response_usage: {} LLM calls, expected one",
                run.calls.len()
            ));
        };
        let response = call
            .result
            .as_ref()
            .map_err(|e| format!("response_usage: the call raised {e}"))?;
        crate::matchers::check(
            &want,
            &typed::usage_json(&response.usage),
            &mut crate::matchers::Bindings::default(),
            "response_usage",
        )?;
    }
    if let Some(observers) = expected.get("observers") {
        for (name, block) in observers.entries().map_err(err)? {
            let collector = run
                .collectors
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| format!("observers: no typed observer named `{name}`"))?;
            typed::expectations(&block, &collector.records())
                .map_err(|m| format!("observers.{name}: {m}"))?;
        }
    }
    if let Some(e) = expected.get("node_completed_event_carries_error") {
        node_completed_error(&e, run)?;
    }
    if let Some(traces) = expected.get("traces") {
        let opts = MatchOpts {
            subset_children: run.case.get("name").and_then(|n| n.str().ok()) == Some(O5_CASE),
            ..base.clone()
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
            base,
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
                &declared_only(got, run.case, &want),
                &mut crate::matchers::Bindings::default(),
                "final_state",
            )?,
            _ => return Err("final_state: the invocation did not complete".into()),
        }
    }
    if let Some(list) = expected.get("metrics") {
        metrics::check(&list, &run.metrics)?;
    }
    if let Some(inv) = expected.get("invariants") {
        invariants::check_all(&inv, run)?;
    }
    Ok(())
}

/// The case key under which [`llm_desugar`] lists the fields it synthesized.
const SYNTHESIZED: &str = "__synthesized_fields";

/// Register O7: the fields the runner synthesized (an undeclared items field,
/// `__collected`) are not part of `final_state` unless it names them.
fn declared_only(got: &Value, case: &Y<'_>, want: &Value) -> Value {
    let synthesized = case
        .get(SYNTHESIZED)
        .and_then(|s| s.strings().ok())
        .unwrap_or_default();
    match got {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !synthesized.contains(k) || want.get(k.as_str()).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
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

/// `node_completed_event_carries_error: {node_name, error_category}` (053): a
/// completed node event of that node whose error's §6.4 derived category (register
/// O6) is the one named.
fn node_completed_error(y: &Y<'_>, run: &Run<'_>) -> Result<(), String> {
    y.check_keys(&["node_name", "error_category"])
        .map_err(err)?;
    let node = y.req("node_name").and_then(|n| n.str()).map_err(err)?;
    let want = y.req("error_category").and_then(|c| c.str()).map_err(err)?;
    let found: Vec<Option<String>> = run
        .events
        .iter()
        .filter_map(|e| e.as_node())
        .filter(|n| &*n.node_name == node && n.phase == openarmature_graph::Phase::Completed)
        .filter_map(|n| n.error.as_ref())
        .map(openarmature_graph::EventError::derived_category)
        .collect();
    if found.iter().any(|c| c.as_deref() == Some(want)) {
        Ok(())
    } else {
        Err(format!(
            "node_completed_event_carries_error: `{node}` completed with error categories {found:?}, expected {want}"
        ))
    }
}
