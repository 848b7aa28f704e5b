//! The typed rerank events' payloads (graph-engine §6 *Typed rerank event* / *Typed
//! rerank failure event*, observability §5.5.14, retrieval-provider §5 / §6).
//!
//! `openarmature-retrieval` builds and dispatches them when a `rerank()` call runs
//! inside a node: exactly one [`RerankEvent`](super::RerankEvent) or
//! [`RerankFailedEvent`](super::RerankFailedEvent) per call. Payload fields (`query`,
//! `documents`, `request_extras`, `output_results`) are always populated; renderers
//! gate them (§5.5.4).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::vocab::prompt::PromptContext;

/// A rerank usage record (retrieval-provider §6 `RerankUsage`): present only when the
/// provider reported at least one figure; each figure individually optional.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct RerankUsage {
    /// Search units billed (e.g. Cohere), if reported.
    pub search_units: Option<u64>,
    /// Input tokens billed, if reported.
    pub input_tokens: Option<u64>,
}

/// One rerank result (retrieval-provider §6 `ScoredDocument`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScoredDocument {
    /// The document's 0-based position in the caller's `documents` list.
    pub index: usize,
    /// The provider-assigned relevance score (provider-specific scale).
    pub relevance_score: f64,
    /// The echoed document text when the provider returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
}

impl ScoredDocument {
    /// A result without a document echo.
    pub fn new(index: usize, relevance_score: f64) -> Self {
        ScoredDocument {
            index,
            relevance_score,
            document: None,
        }
    }

    /// Sets the document echo.
    pub fn with_document(mut self, document: Option<String>) -> Self {
        self.document = document;
        self
    }
}

/// The request side of a `rerank()` call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RerankRequestSummary {
    /// The provider identifier (`gen_ai.system`, e.g. `cohere`).
    pub provider: String,
    /// The bound model the request was made against.
    pub model: String,
    /// Minted per `rerank()` call.
    pub call_id: String,
    /// The query (payload).
    pub query: String,
    /// The candidate documents (payload).
    pub documents: Arc<[String]>,
    /// The caller's `top_k` (`None`: all).
    pub top_k: Option<u32>,
    /// The declared config fields the caller set (`return_documents`).
    pub request_params: Map<String, Value>,
    /// The config's extras pass-through bag (payload).
    pub request_extras: Map<String, Value>,
    /// The prompt-context binding active when the call was made.
    pub prompt_context: PromptContext,
}

impl RerankRequestSummary {
    /// A request summary without `top_k` (see [`RerankRequestSummary::with_top_k`])
    /// and with an empty prompt context (see
    /// [`RerankRequestSummary::with_prompt_context`]).
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        call_id: impl Into<String>,
        query: impl Into<String>,
        documents: Vec<String>,
        request_params: Map<String, Value>,
        request_extras: Map<String, Value>,
    ) -> Self {
        RerankRequestSummary {
            provider: provider.into(),
            model: model.into(),
            call_id: call_id.into(),
            query: query.into(),
            documents: documents.into(),
            top_k: None,
            request_params,
            request_extras,
            prompt_context: PromptContext::default(),
        }
    }

    /// Sets the caller's `top_k`.
    pub fn with_top_k(mut self, top_k: Option<u32>) -> Self {
        self.top_k = top_k;
        self
    }

    /// The number of input documents (`document_count`).
    pub fn document_count(&self) -> usize {
        self.documents.len()
    }

    /// The query's UTF-8 byte length (`openarmature.rerank.query_length`).
    pub fn query_length(&self) -> usize {
        self.query.len()
    }

    /// Sets the prompt context bound where the call was made.
    pub fn with_prompt_context(mut self, prompt_context: PromptContext) -> Self {
        self.prompt_context = prompt_context;
        self
    }
}

/// What a successful `rerank()` call returned, as the event carries it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RerankOutcome {
    /// The model the provider reported (or the bound one when it echoes none).
    pub response_model: Option<String>,
    /// The provider's response id, if present (never empty).
    pub response_id: Option<String>,
    /// The usage record, when the provider reported any figure.
    pub usage: Option<RerankUsage>,
    /// The sorted results (payload: the document echoes).
    pub output_results: Vec<ScoredDocument>,
}

impl RerankOutcome {
    /// An outcome record.
    pub fn new(
        response_model: Option<String>,
        response_id: Option<String>,
        usage: Option<RerankUsage>,
        output_results: Vec<ScoredDocument>,
    ) -> Self {
        RerankOutcome {
            response_model,
            response_id,
            usage,
            output_results,
        }
    }

    /// The number of results (`result_count`).
    pub fn result_count(&self) -> usize {
        self.output_results.len()
    }
}
