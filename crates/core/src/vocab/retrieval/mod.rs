//! Spec: graph-engine §6 *Typed embedding event* / *Typed rerank event* and their
//! failure events (retrieval-provider §3–§6, observability §5.5.9 / §5.5.14): what
//! `openarmature-retrieval` reports about its `embed()` and `rerank()` calls (and
//! re-exports).
//!
//! Both protocols' events share one shape — the calling node, the request summary,
//! the outcome or the failure, the latency and the end time — written once as
//! [`RetrievalEvent`] and [`RetrievalFailedEvent`]; [`EmbeddingEvent`],
//! [`RerankEvent`] and their failure events name the instances.

mod embedding;
mod rerank;

use std::time::SystemTime;

pub use embedding::{EmbeddingOutcome, EmbeddingRequestSummary, EmbeddingUsage};
pub use rerank::{RerankOutcome, RerankRequestSummary, RerankUsage, ScoredDocument};

use crate::vocab::llm::LlmFailure;
use crate::CallSite;

/// A retrieval call that returned (`R`: its request summary, `O`: its outcome).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetrievalEvent<R, O> {
    /// The calling node.
    pub site: CallSite,
    /// The request.
    pub request: R,
    /// The response side.
    pub outcome: O,
    /// Wall-clock latency of the call, in milliseconds.
    pub latency_ms: Option<f64>,
    /// When the call ended (span builders stamp the span from this).
    pub at: SystemTime,
}

impl<R, O> RetrievalEvent<R, O> {
    /// A success event, stamped now.
    pub fn new(site: CallSite, request: R, outcome: O, latency_ms: Option<f64>) -> Self {
        RetrievalEvent {
            site,
            request,
            outcome,
            latency_ms,
            at: SystemTime::now(),
        }
    }
}

/// A retrieval call that raised (`R`: its request summary).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetrievalFailedEvent<R> {
    /// The calling node.
    pub site: CallSite,
    /// The request.
    pub request: R,
    /// The raised error's category, type and message.
    pub failure: LlmFailure,
    /// Latency from the call's entry to the failure, in milliseconds.
    pub latency_ms: Option<f64>,
    /// When the call failed.
    pub at: SystemTime,
}

impl<R> RetrievalFailedEvent<R> {
    /// A failure event, stamped now.
    pub fn new(site: CallSite, request: R, failure: LlmFailure, latency_ms: Option<f64>) -> Self {
        RetrievalFailedEvent {
            site,
            request,
            failure,
            latency_ms,
            at: SystemTime::now(),
        }
    }
}

/// Typed embedding event (graph-engine §6): one per successful `embed()` call.
pub type EmbeddingEvent = RetrievalEvent<EmbeddingRequestSummary, EmbeddingOutcome>;

/// Typed embedding failure event (graph-engine §6): one per `embed()` call that raised.
pub type EmbeddingFailedEvent = RetrievalFailedEvent<EmbeddingRequestSummary>;

/// Typed rerank event (graph-engine §6): one per successful `rerank()` call.
pub type RerankEvent = RetrievalEvent<RerankRequestSummary, RerankOutcome>;

/// Typed rerank failure event (graph-engine §6): one per `rerank()` call that raised.
pub type RerankFailedEvent = RetrievalFailedEvent<RerankRequestSummary>;
