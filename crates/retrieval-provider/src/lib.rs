//! OpenArmature retrieval-provider capability: embedding and rerank providers.
//!
//! Two sibling protocols, each bound to one model per instance (retrieval-provider
//! §3 / §5): [`EmbeddingProvider`] turns a list of strings into vectors
//! ([`EmbeddingResponse`]), [`RerankProvider`] scores documents against a query
//! ([`RerankResponse`], most relevant first). Providers are stateless and never retry;
//! failures are [`RetrievalError`]s carrying one of the §7 categories.
//!
//! Wire mappings:
//!
//! | Provider | Spec | Wire |
//! |---|---|---|
//! | [`TeiEmbeddings`] | §8.1 | TEI `/embed` (`prompt_name` from `input_type`, chunked at 32) |
//! | [`TeiRerank`] | §8.1 | TEI `/rerank` (`truncate: false`, chunk-and-stitch at 32) |
//! | [`JinaEmbeddings`] | §8.2 | Jina `/v1/embeddings` (`task` from `input_type`) |
//! | [`JinaRerank`] | §8.2 | Jina `/v1/rerank` (`return_documents` sent explicitly) |
//! | [`OpenAiEmbeddings`] | §8.3 | OpenAI-compatible `/v1/embeddings` (chunked at 2048, base64) |
//! | [`CohereRerank`] | §8.4 | Cohere `/v2/rerank` |
//! | [`CohereEmbeddings`] | §8.4 | Cohere `/v2/embed` (mandatory `input_type`, chunked at 96) |
//!
//! Every mapping shares one transport (a JSON POST under a body-size cap, the §7
//! status → category table) and one pre-send rule for extras that collide with a
//! field the mapping manages (a conflicting value is `provider_invalid_request`).
//!
//! A call made with [`EmbeddingRequest::in_node`] / [`RerankRequest::in_node`] reports
//! exactly one typed event to the node's observers (graph-engine §6
//! `EmbeddingEvent` / `EmbeddingFailedEvent`, `RerankEvent` / `RerankFailedEvent`),
//! which `openarmature-observability` renders as spans, metrics and Langfuse
//! observations.
//!
//! [`FromEnv::from_env`]`(model)` configures the hosted providers from their vendors' variables:
//! [`OpenAiEmbeddings`] from `OPENAI_API_KEY` / `OPENAI_BASE_URL`, [`CohereEmbeddings`]
//! and [`CohereRerank`] from `CO_API_KEY` / `CO_API_URL` (the Cohere SDK's),
//! [`JinaEmbeddings`] and [`JinaRerank`] from `JINA_API_KEY`; a missing key is an
//! [`EnvError`] naming it (`provider_authentication`). `from_vars(model, lookup)` reads
//! through a function instead of the process environment.
//!
//! # Examples
//!
//! ```no_run
//! use openarmature_retrieval::{EmbeddingProvider, EmbeddingRequest, OpenAiEmbeddings};
//!
//! # async fn demo() -> Result<(), openarmature_retrieval::RetrievalError> {
//! let provider = OpenAiEmbeddings::builder("text-embedding-3-small")
//!     .api_key("sk-...")
//!     .build()?;
//! let response = provider.embed(&EmbeddingRequest::new(["hello", "world"])).await?;
//! assert_eq!(response.vectors.len(), 2);
//! # Ok(())
//! # }
//! ```

mod base64;
mod builder;
mod call;
pub mod cohere;
mod embedding;
mod endpoint;
mod env;
mod error;
mod extras;
mod http;
pub mod jina;
mod mapping;
pub mod openai;
mod rerank;
mod scored;
mod stitch;
pub mod tei;
mod vectors;
mod wire;

pub use builder::ProviderBuilder;
pub use cohere::{CohereEmbeddings, CohereEmbeddingsBuilder, CohereRerank, CohereRerankBuilder};
pub use embedding::{
    EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage,
};
pub use env::FromEnv;
pub use error::{RetrievalCategory, RetrievalError};
pub use http::DEFAULT_MAX_RESPONSE_BYTES;
pub use jina::{JinaEmbeddings, JinaEmbeddingsBuilder, JinaRerank, JinaRerankBuilder};
pub use openai::{OpenAiEmbeddings, OpenAiEmbeddingsBuilder};
/// The typed embedding and rerank events this crate dispatches (graph-engine §6), from
/// `openarmature_core::vocab::retrieval`.
pub use openarmature_core::vocab::retrieval::{
    EmbeddingEvent, EmbeddingFailedEvent, EmbeddingOutcome, EmbeddingRequestSummary, RerankEvent,
    RerankFailedEvent, RerankOutcome, RerankRequestSummary, RetrievalEvent, RetrievalFailedEvent,
};
pub use openarmature_http::{EnvError, Transport};
pub use rerank::{
    RerankConfig, RerankProvider, RerankRequest, RerankResponse, RerankUsage, ScoredDocument,
};
pub use tei::{TeiEmbeddings, TeiEmbeddingsBuilder, TeiRerank, TeiRerankBuilder};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "retrieval-provider";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
