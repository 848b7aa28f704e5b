//! Spec: retrieval-provider §3 / §5 (`embed()` / `rerank()`: pre-send validation, the
//! exception-flow contract) and graph-engine §6 (the typed embedding and rerank
//! events).
//!
//! One call: validate, send once, and — when the call runs inside a node with
//! observers — dispatch exactly one success or failure event before returning. The
//! error (from validation or the provider) still propagates to the caller.

use std::time::Instant;

use openarmature_graph::{
    EmbeddingEvent, EmbeddingFailedEvent, EmbeddingOutcome, EmbeddingRequestSummary, LlmCallSite,
    LlmFailure, NodeCtx, ObserverEvent, RerankEvent, RerankFailedEvent, RerankOutcome,
    RerankRequestSummary,
};

use crate::embedding::{self, EmbeddingProvider, EmbeddingRequest, EmbeddingResponse};
use crate::error::{register_category_probe, RetrievalError};
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

/// The node to report to: only one whose invocation has observers.
fn observed(node: Option<&NodeCtx>) -> Option<&NodeCtx> {
    node.filter(|ctx| ctx.has_observers())
}

/// An `embed()` call.
pub(crate) async fn embed<P: EmbeddingProvider + ?Sized>(
    provider: &P,
    request: &EmbeddingRequest,
) -> Result<EmbeddingResponse, RetrievalError> {
    register_category_probe();
    let started = Instant::now();
    // Built where the call is made, so the prompt context in force is captured.
    let report = observed(request.node.as_ref()).map(|ctx| {
        (
            ctx,
            LlmCallSite::from_ctx(ctx),
            EmbeddingRequestSummary::new(
                provider.provider_name(),
                provider.model(),
                call_id(),
                request.input.clone(),
                request.config.request_params(),
                request.config.extras.clone(),
            ),
        )
    });
    let result = match embedding::validate(request) {
        Ok(()) => provider.send(&request.input, &request.config).await,
        Err(e) => Err(e),
    };
    if let Some((ctx, site, summary)) = report {
        let event = match &result {
            Ok(r) => ObserverEvent::Embedding(EmbeddingEvent::new(
                site,
                summary,
                EmbeddingOutcome::new(
                    Some(r.model.clone()),
                    r.response_id.clone(),
                    r.usage,
                    u64::try_from(r.dimensions).ok(),
                    r.vectors.clone(),
                ),
                millis(started),
            )),
            Err(e) => ObserverEvent::EmbeddingFailed(EmbeddingFailedEvent::new(
                site,
                summary,
                failure(e),
                millis(started),
            )),
        };
        ctx.dispatch_event(event);
    }
    result
}

/// A `rerank()` call.
pub(crate) async fn rerank<P: RerankProvider + ?Sized>(
    provider: &P,
    request: &RerankRequest,
) -> Result<RerankResponse, RetrievalError> {
    register_category_probe();
    let started = Instant::now();
    let report = observed(request.node.as_ref()).map(|ctx| {
        (
            ctx,
            LlmCallSite::from_ctx(ctx),
            RerankRequestSummary::new(
                provider.provider_name(),
                provider.model(),
                call_id(),
                request.query.clone(),
                request.documents.clone(),
                request.config.request_params(),
                request.config.extras.clone(),
            )
            .with_top_k(request.top_k),
        )
    });
    let result = match rerank::validate(request) {
        Ok(()) => provider.send(request).await,
        Err(e) => Err(e),
    };
    if let Some((ctx, site, summary)) = report {
        let event = match &result {
            Ok(r) => ObserverEvent::Rerank(RerankEvent::new(
                site,
                summary,
                RerankOutcome::new(
                    Some(r.model.clone()),
                    r.response_id.clone(),
                    r.usage,
                    r.results.clone(),
                ),
                millis(started),
            )),
            Err(e) => ObserverEvent::RerankFailed(RerankFailedEvent::new(
                site,
                summary,
                failure(e),
                millis(started),
            )),
        };
        ctx.dispatch_event(event);
    }
    result
}
