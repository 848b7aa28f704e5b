//! Executes one call of an extension case: directly (like the upstream runner) or,
//! with `in_graph: true`, inside a one-node graph with real middleware and the
//! usage aggregator registered as an observer.

use std::sync::{Arc, Mutex};

use openarmature_graph::{
    observer_fn, DynSchema, DynState, DynUpdate, ExtensionEvent, FieldType, GraphBuilder,
    InvokeOptions, NodeCtx, NodeError, ObserverEvent, Registration, END,
};
use openarmature_llm::resilience::accounting::InvocationUsage;
use openarmature_llm::resilience::UsageAggregator;
use openarmature_llm::{
    AttemptObserver, AttemptRecord, CompletionRequest, ErrorCategory, LlmError, LlmRetryConfig,
    Message, Provider, Response,
};
use openarmature_observability::{InvokeError, OtelObserver};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{json, Value};

use super::setup::{retry_record, EndpointSetup, Extensions};
use super::{push, take, Sleeps};
use crate::failure::{Check, Failure};
use crate::http_mock::MockServer;
use crate::llm::{
    build_request, retry_extras, span_views, AttemptInfo, CallRun, CallSpec, Mapping, RetrySpec,
    SpanView, NODE,
};

/// What every call of a case shares.
pub(super) struct Ctx<'a> {
    pub(super) provider: &'a Arc<dyn Provider>,
    pub(super) server: &'a MockServer,
    pub(super) model: &'a str,
    pub(super) scripted: usize,
    pub(super) ext: &'a Extensions,
    pub(super) endpoint: Option<&'a EndpointSetup>,
}

/// What one call produced.
pub(super) struct Outcome {
    /// The upstream-shaped record (for the upstream assertions).
    pub(super) run: CallRun,
    /// The usage of the call's invocation (or of the direct call).
    pub(super) usage: Option<InvocationUsage>,
    /// `in_graph` + `failure_isolation`: the node degraded.
    pub(super) degraded: bool,
    /// Breaker transitions during the call: `(from, to, reason)`.
    pub(super) transitions: Vec<(String, String, String)>,
    /// Extension events observers received (`in_graph`).
    pub(super) events: Vec<ExtensionEvent>,
}

/// The error a graph run (or a node-level retry loop) ended with, as an
/// [`LlmError`] of its derived category: the typed error itself when the chain's
/// category is its own, else one rebuilt from the category (e.g. the node-level
/// lane's `retry_budget_exhausted`).
fn as_llm_error(error: &(dyn std::error::Error + 'static)) -> LlmError {
    let c = openarmature_pipeline::classify(error);
    let derived = c.category.clone();
    if let Some(typed) = LlmError::find_in(error) {
        if derived
            .as_deref()
            .is_none_or(|d| d == typed.category().as_str())
        {
            return typed.clone();
        }
    }
    let category = ErrorCategory::ALL
        .iter()
        .chain(ErrorCategory::EXTENSIONS.iter())
        .find(|k| derived.as_deref() == Some(k.as_str()));
    match category {
        Some(k) => LlmError::new(*k, c.message.clone()),
        None => LlmError::unavailable(format!("uncategorized error: {error}")),
    }
}

fn llm_retry(
    ctx: &Ctx<'_>,
    spec: &CallSpec<'_>,
    sleeps: &Sleeps,
    corrections: &Arc<Mutex<Vec<String>>>,
) -> Check<Option<(LlmRetryConfig, RetrySpec)>> {
    let Some(r) = spec.call.get("retry") else {
        return Ok(None);
    };
    r.check_keys_of(&[crate::llm::RETRY_KEYS, &["budget"]])?;
    let retry = LlmRetryConfig::from(retry_record(&r, ctx.ext, sleeps, ctx.endpoint)?);
    let (retry, shape) = retry_extras(&r, retry, corrections)?;
    Ok(Some((retry, shape)))
}

/// Runs one call.
pub(super) async fn call(ctx: &Ctx<'_>, spec: &CallSpec<'_>) -> Check<Outcome> {
    if let Some(op) = spec.get("operation") {
        if op.str()? != "complete" {
            return Err("extension cases run `complete` calls only".into());
        }
    }
    let flag = |key: &str| -> Check<bool> {
        spec.call
            .get(key)
            .map(|y| y.bool().map_err(Failure::from))
            .transpose()
            .map(|b| b.unwrap_or(false))
    };
    let in_graph = flag("in_graph")?;
    let isolate = flag("failure_isolation")?;
    if isolate && !in_graph {
        return Err("`failure_isolation` needs `in_graph: true`".into());
    }
    let before = ctx.server.captured().len();
    let remaining_before = ctx.server.remaining();
    if let Some(e) = ctx.endpoint {
        take(&e.transitions);
    }
    let sleeps: Sleeps = Arc::default();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let corrections = Arc::new(Mutex::new(Vec::new()));
    let usage = UsageAggregator::new();

    let mut request = match build_request(spec)? {
        Ok(r) => r,
        Err(e) => return Err(format!("the request could not be built: {e}").into()),
    };
    let caller_messages = Value::Array(request.messages.iter().map(Message::to_json).collect());
    let caller_config = request.config.clone();
    let response_schema = request.response_schema.clone();
    let mut shape = None;
    if let Some((retry, s)) = llm_retry(ctx, spec, &sleeps, &corrections)? {
        request = request.retry(retry);
        shape = Some(s);
    }
    let log = Arc::clone(&attempts);
    let direct_usage = (!in_graph).then(|| usage.clone());
    request = request.on_attempt(move |record: &AttemptRecord<'_>| {
        push(&log, AttemptInfo::of(record));
        if let Some(u) = &direct_usage {
            u.on_attempt(record);
        }
    });
    let node_retry = match spec.get("retry_middleware") {
        None => None,
        Some(mw) => {
            mw.check_keys(&["max_attempts", "classifier", "backoff", "budget"])?;
            let config = retry_record(&mw, ctx.ext, &sleeps, ctx.endpoint)?;
            shape = Some(RetrySpec {
                max_attempts: config.max_attempts.max(1),
                ..RetrySpec::default()
            });
            Some(config)
        }
    };

    let mut degraded = false;
    let mut events = Vec::new();
    let mut spans = Vec::new();
    let result: Result<Option<Response>, LlmError> = if in_graph {
        let (r, d, e, s) =
            in_graph_run(ctx.provider, request.clone(), node_retry, isolate, &usage).await?;
        degraded = d;
        events = e;
        spans = s;
        r
    } else {
        match node_retry {
            None => ctx.provider.complete(&request).await.map(Some),
            Some(config) => {
                let (provider, request) = (ctx.provider, &request);
                config
                    .run(None, |_| async move {
                        provider.complete(request).await.map_err(NodeError::from)
                    })
                    .await
                    .map(Some)
                    .map_err(|boxed| as_llm_error(&*boxed))
            }
        }
    };

    let requests = ctx
        .server
        .captured()
        .into_iter()
        .skip(before)
        .filter(|c| !c.health)
        .collect();
    let report = usage.report();
    let run = CallRun {
        result,
        attempts: take(&attempts),
        // LLM spans are collected only by the upstream runner's synthetic node.
        spans,
        requests,
        sleeps: take(&sleeps),
        corrections: take(&corrections),
        caller_messages: Some(caller_messages.clone()),
        caller_messages_after: Some(Value::Array(
            request.messages.iter().map(Message::to_json).collect(),
        )),
        caller_config,
        caller_config_after: request.config.clone(),
        retry: shape,
        consumed: remaining_before.saturating_sub(ctx.server.remaining()),
        scripted: ctx.scripted,
        bound_model: ctx.model.to_owned(),
        response_schema,
        mapping: Mapping::OpenAi,
        streamed: false,
        tokens: Vec::new(),
    };
    Ok(Outcome {
        run,
        usage: report.into_iter().next(),
        degraded,
        transitions: ctx
            .endpoint
            .map(|e| take(&e.transitions))
            .unwrap_or_default(),
        events,
    })
}

type GraphResult = (
    Result<Option<Response>, LlmError>,
    bool,
    Vec<ExtensionEvent>,
    Vec<SpanView>,
);

/// The call inside the synthetic node of a one-node graph (register L3's node
/// name), observed by the OTel observer on an in-memory exporter, the usage
/// aggregator and an extension-event collector.
async fn in_graph_run(
    provider: &Arc<dyn Provider>,
    request: CompletionRequest,
    node_retry: Option<openarmature_pipeline::RetryConfig>,
    isolate: bool,
    usage: &UsageAggregator,
) -> Check<GraphResult> {
    let schema = DynSchema::builder()
        .field("result", FieldType::Any, Value::Null)
        .field("degraded", FieldType::Bool, json!(false))
        .build();
    let response: Arc<Mutex<Option<Response>>> = Arc::default();
    let events: Arc<Mutex<Vec<ExtensionEvent>>> = Arc::default();
    let (p, r, slot) = (
        Arc::clone(provider),
        Arc::new(request),
        Arc::clone(&response),
    );
    let node = move |_s: Arc<DynState>, node_ctx: NodeCtx| {
        let (p, r, slot) = (Arc::clone(&p), Arc::clone(&r), Arc::clone(&slot));
        async move {
            let request = (*r).clone().in_node(&node_ctx);
            match p.complete(&request).await {
                Ok(resp) => {
                    let content = resp.content().map(str::to_owned);
                    *slot
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(resp);
                    Ok::<DynUpdate, NodeError>(DynUpdate::new().set("result", json!(content)))
                }
                Err(e) => Err(e.into()),
            }
        }
    };
    let log = Arc::clone(&events);
    let collect = observer_fn(move |event: Arc<ObserverEvent>| {
        let log = Arc::clone(&log);
        async move {
            if let ObserverEvent::Extension(e) = &*event {
                push(&log, e.clone());
            }
            Ok(())
        }
    });
    let mut builder = GraphBuilder::new(schema.defaults()).add_node(NODE, node);
    if isolate {
        builder = builder.node_middleware(
            NODE,
            Arc::new(FailureIsolationMiddleware::<DynState>::with_update(
                "llm_call_degraded",
                DynUpdate::new().set("degraded", json!(true)),
            )),
        );
    }
    if let Some(config) = node_retry {
        builder = builder.node_middleware(NODE, Arc::new(RetryMiddleware::new(config)));
    }
    let graph = builder
        .add_edge(NODE, END)
        .entry(NODE)
        .observer(Registration::new("usage", usage.clone()))
        .observer(Registration::new("extension_events", collect))
        .compile()
        .map_err(|e| Failure::setup(format!("cannot build the graph: {e}")))?;
    let exporter = InMemorySpanExporter::default();
    let tracing = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = OtelObserver::builder(&tracing).build();
    let out = otel
        .invoke(&graph, schema.defaults(), InvokeOptions::default())
        .await;
    graph.drain(None).await;
    let spans = exporter
        .get_finished_spans()
        .map_err(|e| format!("in-memory exporter: {e}"))?;
    let spans = span_views(&spans);
    let events = take(&events);
    let response = response
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    Ok(match out {
        Ok(state) => {
            let degraded = state.state.get("degraded") == Some(&json!(true));
            (
                Ok(if degraded { None } else { response }),
                degraded,
                events,
                spans,
            )
        }
        Err(InvokeError::Graph(e)) => (Err(as_llm_error(&e)), false, events, spans),
        Err(e) => return Err(format!("the graph did not run: {e}").into()),
    })
}
