//! Spec: retrieval-provider §3 / §5 (`embed()` / `rerank()`: pre-send validation, the
//! exception-flow contract) and graph-engine §6 (the typed embedding and rerank
//! events).
//!
//! One call: validate, send once, and — when the call runs inside a node with
//! observers — dispatch exactly one success or failure event before returning. The
//! error (from validation or the provider) still propagates to the caller.

use std::future::Future;
use std::time::Instant;

use openarmature_core::vocab::llm::LlmFailure;
use openarmature_core::vocab::prompt::PromptContext;
use openarmature_core::vocab::retrieval::{
    EmbeddingEvent, EmbeddingFailedEvent, EmbeddingOutcome, EmbeddingRequestSummary, RerankEvent,
    RerankFailedEvent, RerankOutcome, RerankRequestSummary,
};
use openarmature_graph::{ambient, CallSite, NodeCtx, ObserverEvent};

use crate::embedding::{self, EmbeddingProvider, EmbeddingRequest, EmbeddingResponse};
use crate::error::RetrievalError;
use crate::rerank::{self, RerankProvider, RerankRequest, RerankResponse};

fn call_id() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

fn failure(e: &RetrievalError) -> LlmFailure {
    LlmFailure::new(
        e.category().as_str(),
        e.error_type().map(str::to_owned),
        e.message(),
    )
}

fn millis(started: Instant) -> Option<f64> {
    Some(started.elapsed().as_secs_f64() * 1000.0)
}

/// The prompt context bound where the call is made (prompt-management §12).
fn bound_prompt() -> PromptContext {
    ambient::get_or_default::<PromptContext>()
}

/// The node to report to: the request's, else (without an explicit context) the
/// running node's (graph-engine's ambient context); only one whose invocation has
/// observers.
fn observed(node: Option<&NodeCtx>) -> Option<NodeCtx> {
    node.cloned()
        .or_else(openarmature_graph::current_node)
        .filter(NodeCtx::has_observers)
}

/// One call of either protocol (`node`: the request's explicit context, if any):
/// builds the request summary where the call is made
/// (so the prompt context in force is captured), runs `call` (validation, then the
/// provider's send), and — inside an observed node — dispatches exactly one event,
/// `success` or `failed`, before returning the result.
async fn report<S, R, Fut>(
    node: Option<&NodeCtx>,
    summary: impl FnOnce() -> S,
    call: Fut,
    success: impl FnOnce(CallSite, S, &R, Option<f64>) -> ObserverEvent,
    failed: impl FnOnce(CallSite, S, LlmFailure, Option<f64>) -> ObserverEvent,
) -> Result<R, RetrievalError>
where
    Fut: Future<Output = Result<R, RetrievalError>>,
{
    let started = Instant::now();
    let report = observed(node).map(|ctx| {
        let site = ctx.call_site();
        (ctx, site, summary())
    });
    let result = call.await;
    if let Some((ctx, site, summary)) = report {
        let latency = millis(started);
        let event = match &result {
            Ok(r) => success(site, summary, r, latency),
            Err(e) => failed(site, summary, failure(e), latency),
        };
        ctx.dispatch_event(event);
    }
    result
}

/// An `embed()` call.
pub(crate) async fn embed<P: EmbeddingProvider + ?Sized>(
    provider: &P,
    request: &EmbeddingRequest,
) -> Result<EmbeddingResponse, RetrievalError> {
    let summary = || {
        EmbeddingRequestSummary::new(
            provider.provider_name(),
            provider.model(),
            call_id(),
            request.input.clone(),
            request.config.request_params(),
            request.config.extras.clone(),
        )
        .with_prompt_context(bound_prompt())
    };
    let call = async {
        embedding::validate(request)?;
        provider.send(&request.input, &request.config).await
    };
    report(
        request.node.as_ref(),
        summary,
        call,
        |site, summary, r: &EmbeddingResponse, latency| {
            let outcome = EmbeddingOutcome::new(
                Some(r.model.clone()),
                r.response_id.clone(),
                r.usage,
                u64::try_from(r.dimensions).ok(),
                r.vectors.clone(),
            );
            ObserverEvent::Embedding(EmbeddingEvent::new(site, summary, outcome, latency))
        },
        |site, summary, failure, latency| {
            ObserverEvent::EmbeddingFailed(EmbeddingFailedEvent::new(
                site, summary, failure, latency,
            ))
        },
    )
    .await
}

/// A `rerank()` call.
pub(crate) async fn rerank<P: RerankProvider + ?Sized>(
    provider: &P,
    request: &RerankRequest,
) -> Result<RerankResponse, RetrievalError> {
    let summary = || {
        RerankRequestSummary::new(
            provider.provider_name(),
            provider.model(),
            call_id(),
            request.query.clone(),
            request.documents.clone(),
            request.config.request_params(),
            request.config.extras.clone(),
        )
        .with_top_k(request.top_k)
        .with_prompt_context(bound_prompt())
    };
    let call = async {
        rerank::validate(request)?;
        provider.send(request).await
    };
    report(
        request.node.as_ref(),
        summary,
        call,
        |site, summary, r: &RerankResponse, latency| {
            let outcome = RerankOutcome::new(
                Some(r.model.clone()),
                r.response_id.clone(),
                r.usage,
                r.results.clone(),
            );
            ObserverEvent::Rerank(RerankEvent::new(site, summary, outcome, latency))
        },
        |site, summary, failure, latency| {
            ObserverEvent::RerankFailed(RerankFailedEvent::new(site, summary, failure, latency))
        },
    )
    .await
}
