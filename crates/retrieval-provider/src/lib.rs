//! OpenArmature retrieval-provider capability: embedding and rerank providers.
//!
//! Two sibling protocols, each bound to one model per instance (retrieval-provider
//! §3 / §5): [`EmbeddingProvider`] turns a list of strings into vectors
//! ([`EmbeddingResponse`]), [`RerankProvider`] scores documents against a query
//! ([`RerankResponse`], most relevant first). Providers are stateless and never retry;
//! failures are [`RetrievalError`]s carrying one of the §7 categories.
//!
//! Wire mappings: [`OpenAiEmbeddings`] (§8.3, OpenAI-compatible `/v1/embeddings`,
//! with batch chunking and base64 decoding) and [`CohereRerank`] (§8.4
//! `/v2/rerank`).
//!
//! A call made with [`EmbeddingRequest::in_node`] / [`RerankRequest::in_node`] reports
//! exactly one typed event to the node's observers (graph-engine §6
//! `EmbeddingEvent` / `EmbeddingFailedEvent`, `RerankEvent` / `RerankFailedEvent`),
//! which `openarmature-observability` renders as spans, metrics and Langfuse
//! observations.
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
mod call;
pub mod cohere;
mod embedding;
mod error;
mod http;
pub mod openai;
mod rerank;
mod wire;

pub use cohere::{CohereRerank, CohereRerankBuilder};
pub use embedding::{
    EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage,
};
pub use error::{RetrievalCategory, RetrievalError};
pub use openai::{OpenAiEmbeddings, OpenAiEmbeddingsBuilder};
pub use rerank::{
    RerankConfig, RerankProvider, RerankRequest, RerankResponse, RerankUsage, ScoredDocument,
};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "retrieval-provider";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";
