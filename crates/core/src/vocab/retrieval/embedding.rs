//! The typed embedding events' payloads (graph-engine §6 *Typed embedding event* /
//! *Typed embedding failure event*, observability §5.5.9, retrieval-provider §3 / §4).
//!
//! `openarmature-retrieval` builds and dispatches them when an `embed()` call runs
//! inside a node: exactly one [`EmbeddingEvent`](super::EmbeddingEvent) or
//! [`EmbeddingFailedEvent`](super::EmbeddingFailedEvent) per call, never both. Payload
//! fields (`input_strings`, `request_extras`, `output_vectors`) are always populated;
//! renderers gate them (§5.5.4).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::vocab::prompt::PromptContext;

/// An embedding usage record (retrieval-provider §4 `EmbeddingUsage`): the tokens
/// billed for the call. A call whose provider reported no (or a malformed) figure has
/// no record at all (`usage = None`), never a zero.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct EmbeddingUsage {
    /// Tokens billed for the embedding call.
    pub input_tokens: u64,
}

/// The request side of an `embed()` call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EmbeddingRequestSummary {
    /// The provider identifier (`gen_ai.system`, e.g. `openai`).
    pub provider: String,
    /// The bound model the request was made against.
    pub model: String,
    /// Minted per `embed()` call.
    pub call_id: String,
    /// The input strings, verbatim (payload).
    pub input_strings: Arc<[String]>,
    /// The declared config fields the caller set (`dimensions`, `input_type`).
    pub request_params: Map<String, Value>,
    /// The config's extras pass-through bag (payload).
    pub request_extras: Map<String, Value>,
    /// The prompt-context binding active when the call was made.
    pub prompt_context: PromptContext,
}

impl EmbeddingRequestSummary {
    /// A request summary with an empty prompt context (see
    /// [`EmbeddingRequestSummary::with_prompt_context`]).
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        call_id: impl Into<String>,
        input_strings: Vec<String>,
        request_params: Map<String, Value>,
        request_extras: Map<String, Value>,
    ) -> Self {
        EmbeddingRequestSummary {
            provider: provider.into(),
            model: model.into(),
            call_id: call_id.into(),
            input_strings: input_strings.into(),
            request_params,
            request_extras,
            prompt_context: PromptContext::default(),
        }
    }

    /// The number of input strings (`input_count`).
    pub fn input_count(&self) -> usize {
        self.input_strings.len()
    }

    /// Sets the prompt context bound where the call was made.
    pub fn with_prompt_context(mut self, prompt_context: PromptContext) -> Self {
        self.prompt_context = prompt_context;
        self
    }
}

/// What a successful `embed()` call returned, as the event carries it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EmbeddingOutcome {
    /// The model the provider reported, if any.
    pub response_model: Option<String>,
    /// The provider's response id, if present (never empty).
    pub response_id: Option<String>,
    /// The usage record, when the provider reported one.
    pub usage: Option<EmbeddingUsage>,
    /// The vectors' dimensionality.
    pub dimensions: Option<u64>,
    /// The returned vectors (payload).
    pub output_vectors: Arc<[Vec<f64>]>,
}

impl EmbeddingOutcome {
    /// An outcome record.
    pub fn new(
        response_model: Option<String>,
        response_id: Option<String>,
        usage: Option<EmbeddingUsage>,
        dimensions: Option<u64>,
        output_vectors: Vec<Vec<f64>>,
    ) -> Self {
        EmbeddingOutcome {
            response_model,
            response_id,
            usage,
            dimensions,
            output_vectors: output_vectors.into(),
        }
    }
}
