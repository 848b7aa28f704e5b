//! Spec: retrieval-provider §8.2 (Jina AI).
//!
//! Two hosted-endpoint providers, one model each, reporting `gen_ai.system` `jina`:
//! [`JinaEmbeddings`] (`POST /v1/embeddings`) and [`JinaRerank`]
//! (`POST /v1/rerank`), with the key sent as `Authorization: Bearer <key>` and
//! `base_url` defaulting to `https://api.jina.ai`.
//!
//! Both send their fail-loud truncation flag as `false` (`truncate` on embeddings,
//! `truncation` on rerank — Jina's names differ); an extras value for it other than
//! `false` is rejected before sending. Jina batches server-side, so embeddings are
//! never chunked. Jina has no model catalog, so `ready()` is a minimal one-input
//! request through the same wire (it surfaces exactly the categories a real call
//! would).
//!
//! # Examples
//!
//! ```no_run
//! use openarmature_retrieval::{EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, JinaEmbeddings};
//!
//! # async fn demo() -> Result<(), openarmature_retrieval::RetrievalError> {
//! let embedder = JinaEmbeddings::builder("jina-embeddings-v3")
//!     .api_key("jina_...")
//!     .build()?;
//! let request = EmbeddingRequest::new(["how tall is the eiffel tower?"])
//!     .config(EmbeddingConfig::new().input_type("query"));
//! let response = embedder.embed(&request).await?;
//! assert_eq!(response.vectors.len(), 1);
//! # Ok(())
//! # }
//! ```

mod embed;
mod rerank;

pub use embed::{JinaEmbeddings, JinaEmbeddingsBuilder};
pub use rerank::{JinaRerank, JinaRerankBuilder};

/// The hosted origin both builders start from.
const DEFAULT_ORIGIN: &str = "https://api.jina.ai";

/// The `gen_ai.system` both providers report.
const SYSTEM: &str = "jina";
