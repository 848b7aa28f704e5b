//! Spec: conformance-adapter §5.15 (call directives, response mocks), graph-engine §2
//! / §6 — runs one retrieval case: the case's graph, its calling node, the mocks, and
//! everything the assertions read afterwards ([`Run`]).
//!
//! Register V3: the calling node makes its call inside the node (`in_node`, so the
//! typed events reach the invocation's observers), stores the response record
//! (`vectors, dimensions, model, usage, response_id, raw` / `results, model, usage,
//! response_id, raw`, results with an explicit `document`) in `stores_response_in`,
//! and returns a failed call as the node's error. Every case also carries an
//! unnamed recorder of the retrieval events, which the event invariants read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use openarmature_graph::{
    observer_fn, BoxError, DynSchema, DynState, DynUpdate, FieldType, GraphBuilder, InvokeOptions,
    NodeCtx, NodeError, ObserverEvent, Registration, END,
};
use openarmature_retrieval::{
    EmbeddingConfig, EmbeddingRequest, EmbeddingResponse, RerankConfig, RerankRequest,
    RerankResponse, RetrievalCategory, RetrievalError,
};
use serde_json::{json, Map, Value};

use super::model::{Case, EmbedCall, Fixture, MockEntry, RerankCall};
use super::providers::{self, Bound, Kind, Mapping, Want};
use crate::failure::{Check, Failure};
use crate::http_mock::{Captured, MockServer, Reply};

/// The retrieval call of the case's calling node.
#[derive(Clone, Copy)]
pub(super) enum Call<'a> {
    Embed(&'a EmbedCall),
    Rerank(&'a RerankCall),
}

impl Call<'_> {
    pub(super) fn kind(self) -> Kind {
        match self {
            Call::Embed(_) => Kind::Embed,
            Call::Rerank(_) => Kind::Rerank,
        }
    }

    fn stores_in(self) -> Option<String> {
        match self {
            Call::Embed(c) => c.stores_response_in.clone(),
            Call::Rerank(c) => c.stores_response_in.clone(),
        }
    }

    /// The request this call makes; `strip` drops the knob the byte-identity probes
    /// remove (`input_type` / `return_documents`).
    fn prepare(self, strip: bool) -> Prepared {
        match self {
            Call::Embed(c) => Prepared::Embed(embed_request(c, strip)),
            Call::Rerank(c) => Prepared::Rerank(rerank_request(c, strip)),
        }
    }
}

/// A built request, owned (the node body is `'static`).
#[derive(Clone)]
enum Prepared {
    Embed(EmbeddingRequest),
    Rerank(RerankRequest),
}

/// A failed call, as the assertions see it.
#[derive(Debug, Clone)]
pub(super) struct CallError {
    pub(super) category: RetrievalCategory,
    pub(super) message: String,
}

/// A failed invocation.
#[derive(Debug, Clone)]
pub(super) struct RunFailure {
    /// The node the engine reports.
    pub(super) node: String,
    /// The §7 category of the `RetrievalError` in the cause chain, if any.
    pub(super) category: Option<String>,
    /// The recoverable state's fields.
    pub(super) state: Map<String, Value>,
}

/// Everything a case produced.
pub(super) struct Run<'a> {
    pub(super) case: &'a Case,
    pub(super) node: &'a str,
    pub(super) call: Call<'a>,
    pub(super) bound: Arc<Bound>,
    /// The requests the call's mock received, in arrival order.
    pub(super) requests: Vec<Captured>,
    /// Requests that arrived after the script ran out.
    pub(super) overruns: Vec<String>,
    /// The call's own outcome (`None`: the node never ran).
    pub(super) result: Option<Result<Value, CallError>>,
    /// The final state's fields, or the failure.
    pub(super) graph: Result<Map<String, Value>, RunFailure>,
    /// The retrieval events of the invocation, as spec-named records.
    pub(super) events: Vec<Value>,
    /// The records each `typed_observers` collector received.
    pub(super) collectors: BTreeMap<String, Vec<Value>>,
    /// The body of the same call with its knob removed, when an invariant asks.
    pub(super) probe: Option<Check<Vec<u8>>>,
}

impl Run<'_> {
    /// The call's response record, when it succeeded.
    pub(super) fn record(&self) -> Option<&Value> {
        self.result.as_ref()?.as_ref().ok()
    }

    /// The call's error, when it failed.
    pub(super) fn error(&self) -> Option<&CallError> {
        self.result.as_ref()?.as_ref().err()
    }

    /// The request bodies, parsed.
    pub(super) fn bodies(&self) -> Vec<&Value> {
        self.requests
            .iter()
            .filter_map(|r| r.json.as_ref())
            .collect()
    }
}

/// The mock replies of a script (a `raises` entry is served as an OpenAI-style
/// error body with its literal type and message).
fn replies(script: &[MockEntry]) -> Vec<Reply> {
    script
        .iter()
        .map(|e| {
            let body = match &e.raises {
                Some(r) => Some(json!({"error": {"type": r.error_type, "message": r.message}})),
                None => e.body.clone(),
            };
            Reply::Http {
                status: e.status,
                headers: Vec::new(),
                body,
            }
        })
        .collect()
}

/// The first 2xx body's `model` (register V2).
fn first_ok_model(script: &[MockEntry]) -> Option<String> {
    script
        .iter()
        .filter(|e| (200..300).contains(&e.status))
        .find_map(|e| e.body.as_ref()?.get("model")?.as_str().map(str::to_owned))
}

/// The request a call declares (see [`Call::prepare`]).
fn embed_request(call: &EmbedCall, strip: bool) -> EmbeddingRequest {
    let mut config = EmbeddingConfig::new();
    if let Some(d) = call.config.dimensions {
        config = config.dimensions(d);
    }
    if let (Some(t), false) = (&call.config.input_type, strip) {
        config = config.input_type(t.clone());
    }
    for (k, v) in &call.config.extras {
        config = config.extra(k.clone(), v.clone());
    }
    EmbeddingRequest::new(call.input.clone()).config(config)
}

/// See [`embed_request`].
fn rerank_request(call: &RerankCall, strip: bool) -> RerankRequest {
    let mut config = RerankConfig::new();
    if let (Some(r), false) = (call.config.return_documents, strip) {
        config = config.return_documents(r);
    }
    for (k, v) in &call.config.extras {
        config = config.extra(k.clone(), v.clone());
    }
    let mut request = RerankRequest::new(call.query.clone(), call.documents.clone()).config(config);
    request.top_k = call.top_k;
    request
}

fn embedding_record(r: &EmbeddingResponse) -> Value {
    json!({
        "vectors": r.vectors,
        "dimensions": r.dimensions,
        "model": r.model,
        "usage": r.usage,
        "response_id": r.response_id,
        "raw": r.raw,
    })
}

fn rerank_record(r: &RerankResponse) -> Value {
    let results: Vec<Value> = r
        .results
        .iter()
        .map(|d| json!({"index": d.index, "relevance_score": d.relevance_score, "document": d.document}))
        .collect();
    json!({
        "results": results,
        "model": r.model,
        "usage": r.usage,
        "response_id": r.response_id,
        "raw": r.raw,
    })
}

fn summary(e: &RetrievalError) -> CallError {
    CallError {
        category: e.category(),
        message: e.message().to_owned(),
    }
}

type Slot = Arc<Mutex<Option<Result<Value, CallError>>>>;
type Log = Arc<Mutex<Vec<Value>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An observer keeping the retrieval events as spec-named records.
fn recorder(name: &str) -> (Registration, Log) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let registration = Registration::new(
        name,
        observer_fn(move |event: Arc<ObserverEvent>| {
            if let Some(record) = crate::obs::retrieval_records::record(&event, Value::Null) {
                lock(&sink).push(record);
            }
            std::future::ready(Ok::<(), BoxError>(()))
        }),
    );
    (registration, log)
}

/// The case's one calling node.
fn calling_node(case: &Case) -> Check<(&str, Call<'_>)> {
    let mut calls = Vec::new();
    for (name, node) in &case.nodes {
        match (&node.calls_embed, &node.calls_rerank) {
            (Some(c), None) => calls.push((name.as_str(), Call::Embed(c))),
            (None, Some(c)) => calls.push((name.as_str(), Call::Rerank(c))),
            (None, None) => {}
            (Some(_), Some(_)) => {
                return Err(Failure::fixture(format!(
                "fixture_schema_invalid: node `{name}` declares both calls_embed and calls_rerank"
            )))
            }
        }
    }
    match calls.as_slice() {
        [one] => Ok(*one),
        _ => Err(Failure::unsupported(format!(
            "harness_primitive_missing: the retrieval runner asserts one calling node, the case has {}",
            calls.len()
        ))),
    }
}

fn schema(case: &Case) -> Check<Arc<DynSchema>> {
    let mut b = DynSchema::builder();
    for (name, f) in &case.state.fields {
        let ty = FieldType::parse(&f.ty).map_err(|m| {
            Failure::fixture(format!("fixture_schema_invalid: state.fields.{name}: {m}"))
        })?;
        b = b.field(name.clone(), ty, f.default.clone());
    }
    Ok(b.build())
}

/// Starts the call's mock and binds its provider.
async fn bind(
    fixture: &Fixture,
    mapping: Mapping,
    case: &Case,
    call: Call<'_>,
) -> Check<(MockServer, Bound)> {
    let (script, call_model, fallback) = match call {
        Call::Embed(c) => (
            case.mock_embedding.clone(),
            c.model.as_deref(),
            "text-embedding-test",
        ),
        Call::Rerank(c) => (case.mock_rerank.clone(), c.model.as_deref(), "rerank-test"),
    };
    let script = script.unwrap_or_default();
    let server = MockServer::start(replies(&script), None)
        .await
        .map_err(|e| format!("cannot start the mock provider: {e}"))?;
    let want = Want {
        kind: call.kind(),
        call_model,
        standin_model: first_ok_model(&script).unwrap_or_else(|| fallback.to_owned()),
    };
    let bound = providers::build(fixture, mapping, &want, &server)?;
    Ok((server, bound))
}

/// Makes the call; the record on success.
async fn call_once(
    bound: &Bound,
    prepared: &Prepared,
    ctx: Option<&NodeCtx>,
) -> Check<Result<Value, RetrievalError>> {
    Ok(match prepared.clone() {
        Prepared::Embed(mut request) => {
            let provider = bound.embed.as_ref().ok_or("no embedding provider bound")?;
            if let Some(ctx) = ctx {
                request = request.in_node(ctx);
            }
            provider.embed(&request).await.map(|r| embedding_record(&r))
        }
        Prepared::Rerank(mut request) => {
            let provider = bound.rerank.as_ref().ok_or("no rerank provider bound")?;
            if let Some(ctx) = ctx {
                request = request.in_node(ctx);
            }
            provider.rerank(&request).await.map(|r| rerank_record(&r))
        }
    })
}

/// Runs `case` under `mapping`.
///
/// # Errors
/// A message for a case the runner cannot set up (an invalid graph, a missing
/// construction block).
pub(super) async fn run<'a>(
    fixture: &Fixture,
    mapping: Mapping,
    case: &'a Case,
    file: &Path,
) -> Check<Run<'a>> {
    let (node_name, call) = calling_node(case)?;
    let (server, bound) = bind(fixture, mapping, case, call).await?;
    let schema = schema(case)?;
    let initial = schema
        .state_from_json(&Value::Object(case.initial_state.clone()))
        .map_err(|e| Failure::fixture(format!("fixture_schema_invalid: initial_state: {e}")))?;

    let slot: Slot = Arc::default();
    let shared = Arc::new(bound);
    let stores_in = call.stores_in();
    let prepared = call.prepare(false);
    let mut builder = GraphBuilder::new(schema.defaults());
    for name in case.nodes.keys() {
        if name != node_name {
            builder = builder.add_node(name.clone(), |_s: Arc<DynState>, _c: NodeCtx| async {
                Ok::<DynUpdate, NodeError>(DynUpdate::default())
            });
            continue;
        }
        let (bound, out) = (Arc::clone(&shared), Arc::clone(&slot));
        let (stores_in, prepared) = (stores_in.clone(), prepared.clone());
        builder = builder.add_node(name.clone(), move |_s: Arc<DynState>, ctx: NodeCtx| {
            let (bound, out) = (Arc::clone(&bound), Arc::clone(&out));
            let (stores_in, prepared) = (stores_in.clone(), prepared.clone());
            async move {
                let outcome = call_once(&bound, &prepared, Some(&ctx))
                    .await
                    .map_err(|m| -> NodeError { m.message().to_owned().into() })?;
                *lock(&out) = Some(outcome.as_ref().map(Clone::clone).map_err(summary));
                let record = outcome?;
                let mut update = DynUpdate::default();
                if let Some(field) = stores_in {
                    update = update.set(field, record);
                }
                Ok(update)
            }
        });
    }
    for edge in &case.edges {
        builder = if edge.to == "END" {
            builder.add_edge(edge.from.clone(), END)
        } else {
            builder.add_edge(edge.from.clone(), edge.to.clone())
        };
    }
    let graph = builder.entry(case.entry.clone()).compile().map_err(|e| {
        Failure::fixture(format!(
            "fixture_schema_invalid: {}: the graph does not compile: {e}",
            file.display()
        ))
    })?;

    let (internal, events) = recorder("__retrieval_recorder__");
    let mut options = InvokeOptions::default().observer(internal);
    let mut collectors = Vec::new();
    for o in &case.typed_observers {
        if o.kind != "typed_event_collector" {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: {}: typed_observers kind `{}`",
                file.display(),
                o.kind
            )));
        }
        let (registration, log) = recorder(&o.name);
        options = options.observer(registration);
        collectors.push((o.name.clone(), log));
    }
    let outcome = graph.invoke_with(initial, options).await;
    graph.drain(None).await;
    let graph_result = match outcome {
        Ok(done) => Ok(fields(&schema, &done.state)),
        Err(e) => Err(RunFailure {
            node: e.node().to_owned(),
            category: RetrievalError::find_in(e.cause()).map(|r| r.category().as_str().to_owned()),
            state: fields(&schema, e.recoverable_state()),
        }),
    };
    let result = lock(&slot).take();
    let requests = server.captured();
    let overruns = server.overruns();
    let events = lock(&events).clone();
    Ok(Run {
        case,
        node: node_name,
        call,
        bound: shared,
        requests,
        overruns,
        result,
        graph: graph_result,
        events,
        collectors: collectors
            .into_iter()
            .map(|(n, log)| (n, lock(&log).clone()))
            .collect(),
        probe: None,
    })
}

/// The state's declared fields as JSON.
fn fields(schema: &DynSchema, state: &DynState) -> Map<String, Value> {
    schema
        .fields()
        .keys()
        .map(|k| (k.clone(), state.get(k).cloned().unwrap_or(Value::Null)))
        .collect()
}

/// The body the mapping sends for the same call with its knob (`input_type` /
/// `return_documents`) removed, against a fresh mock with the same script (the
/// byte-identity probes).
pub(super) async fn probe_body(
    fixture: &Fixture,
    mapping: Mapping,
    case: &Case,
    call: Call<'_>,
) -> Check<Vec<u8>> {
    let (server, bound) = bind(fixture, mapping, case, call).await?;
    call_once(&bound, &call.prepare(true), None)
        .await?
        .map_err(|e| {
            format!(
                "the probe call (knob removed) failed: {} ({})",
                e,
                e.category()
            )
        })?;
    Ok(server
        .captured()
        .into_iter()
        .next()
        .map(|c| c.body)
        .ok_or_else(|| "the probe call sent no request".to_owned())?)
}
