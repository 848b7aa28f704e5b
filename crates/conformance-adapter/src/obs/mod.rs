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
//! Register of fixture-shaped conventions (see the crate's REGISTER.md):
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
//! - O21 `inner_subgraphs` with an explicit `state` (039) keep it, plus the implied
//!   fields; an inner subgraph's fan-out over a field it does not declare reads that
//!   key of the enclosing instance's item (see [`item_spread`]); a branch's
//!   `augment_metadata_from_outer_item` reads the instance item projected into the
//!   branch's `input`; `subgraph_call: {subgraph, inputs, outputs}` is a subgraph node
//!   that (without `inputs`) projects in the items fields its fan-outs do not declare,
//!   with its output targets typed `any`; initial-state fields the case graph does
//!   not declare are declared `any` (see [`desugar`]).
//! - O22 `checkpointer: in_memory` / `resume: {from_first_run}` /
//!   `first_run_expected(_error)` (037's resume case) run a resume of the first
//!   invocation after it (see [`resume`]).
//! - O20 streaming (111–118): the bound model is `gpt-test` when `mock_llm_stream` is
//!   used (O6); a `{error: {status}}` chunk marker is an HTTP answer of that status
//!   when it opens a wire attempt (116), else an OpenAI-style mid-stream error chunk
//!   (`{error: {code: status}}`, 114) — see [`llm`]; `LlmTokenFailedEvent` is an
//!   accepted event-type name that never occurs (the spec rules the variant out).

mod attempts;
mod canned;
mod case;
mod desugar;
mod expected;
mod ext;
mod invariants;
mod item_spread;
mod langfuse;
mod lineage_invariants;
mod llm;
mod llm_invariants;
mod logs;
mod meta;
mod metric_invariants;
mod metrics;
mod orphan_invariants;
mod prompts;
mod resume;
mod retrieval;
mod retrieval_invariants;
pub(crate) mod retrieval_records;
mod setup;
pub(crate) mod spans;
mod tool_invariants;
mod tools;
mod traces;
mod typed;
mod usage_invariants;
mod wrapper_llm;

pub(crate) use attempts::EVENT_TABLE_NAMES as OBSERVER_EVENT_INVARIANT_NAMES;
pub(crate) use attempts::TABLE_NAMES as ATTEMPT_INVARIANT_NAMES;
pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
pub(crate) use langfuse::{
    INVARIANT_NAMES as LANGFUSE_INVARIANT_NAMES,
    NESTED_INVARIANT_NAMES as LANGFUSE_NESTED_INVARIANT_NAMES,
    SESSION_INVARIANT_NAMES as LANGFUSE_SESSION_INVARIANT_NAMES,
    STREAM_INVARIANT_NAMES as LANGFUSE_STREAM_INVARIANT_NAMES,
};
pub(crate) use lineage_invariants::TABLE_NAMES as LINEAGE_INVARIANT_NAMES;
pub(crate) use llm_invariants::{
    CALL_NAMES as LLM_CALL_INVARIANT_NAMES, EVENT_NAMES as LLM_EVENT_INVARIANT_NAMES,
    SPAN_NAMES as LLM_SPAN_INVARIANT_NAMES, STREAM_NAMES as LLM_STREAM_INVARIANT_NAMES,
};
pub(crate) use meta::checks::TABLE_NAMES as META_INVARIANT_NAMES;
pub(crate) use meta::expect::DIRECT_CALL_NAMES as DIRECT_CALL_INVARIANT_NAMES;
pub(crate) use meta::query_checks::TABLE_NAMES as QUERY_INVARIANT_NAMES;
pub(crate) use metric_invariants::TABLE_NAMES as METRIC_INVARIANT_NAMES;
pub(crate) use orphan_invariants::TABLE_NAMES as ORPHAN_INVARIANT_NAMES;
pub(crate) use prompts::TABLE_NAMES as PROMPT_INVARIANT_NAMES;
pub(crate) use resume::TABLE_NAMES as RESUME_INVARIANT_NAMES;
pub(crate) use retrieval_invariants::TABLE_NAMES as RETRIEVAL_INVARIANT_NAMES;
pub(crate) use tool_invariants::TABLE_NAMES as TOOL_INVARIANT_NAMES;
pub(crate) use usage_invariants::TABLE_NAMES as USAGE_INVARIANT_NAMES;

use std::collections::BTreeMap;
use std::sync::Arc;

use openarmature_graph::ObserverEvent;
use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use self::desugar::SYNTHESIZED;
use self::ext::EmittedLog;
use self::llm::CallRecord;
use self::spans::{attr_str, Forest};
use self::typed::Collector;

pub(crate) use self::case::run_case;
/// An OpenTelemetry attribute value as JSON (shared with the llm-provider runner).
pub(crate) use self::spans::json_of as attribute_json;
use crate::yaml::Y;

/// Keys a case may carry besides `INLINE_GRAPH_CASE_KEYS`.
const CASE_KEYS: &[&str] = &[
    "middleware",
    "initial_state",
    "expected",
    "expected_error",
    "inner_subgraphs",
    "caller_correlation_id",
    "caller_metadata",
    "detached_subgraphs",
    "detached_fan_outs",
    "invocations",
    "mock_llm",
    "mock_llm_stream",
    "mock_embedding",
    "mock_rerank",
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
    "langfuse_observer",
    "langfuse_observer_config",
    "langfuse_client",
    "caller_invocation_label",
    "session_id",
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
    pub(crate) invocation_ids: Vec<String>,
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
    /// The recorded Langfuse traces, when the case ran a Langfuse observer.
    pub(crate) langfuse: Option<Vec<openarmature_observability::langfuse::LangfuseTrace>>,
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

    /// A string-valued top-level key of the case (e.g. `session_id`).
    pub(crate) fn case_str(&self, key: &str) -> Option<&str> {
        self.case.get(key).and_then(|y| y.value.as_str())
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
