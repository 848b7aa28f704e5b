//! Spec: retrieval-provider §8.1 (HuggingFace Text Embeddings Inference).
//!
//! TEI hosts one model per instance, so an embedding deployment and a reranker
//! deployment are two providers with their own `base_url`: [`TeiEmbeddings`]
//! (`POST /embed`) and [`TeiRerank`] (`POST /rerank`). Both report `gen_ai.system`
//! `tei`, answer with bare JSON arrays (kept verbatim on `raw`), report no usage
//! (`usage` is `None`, never a fabricated zero) and no response id, and split a call
//! over the instance's `max-client-batch-size` ([`DEFAULT_CHUNK_SIZE`], 32) into
//! consecutive chunks.
//!
//! `truncate` is managed on both endpoints (fail-loud): `/rerank` sends
//! `truncate: false`, `/embed` relies on TEI's `false` default and leaves it off the
//! wire; an extras `truncate` other than `false` is rejected before sending, an
//! extras `false` is absorbed. `ready()` reads TEI's `GET /info`.
//!
//! # Examples
//!
//! ```no_run
//! use openarmature_retrieval::{RerankProvider, RerankRequest, TeiRerank};
//!
//! # async fn demo() -> Result<(), openarmature_retrieval::RetrievalError> {
//! let reranker = TeiRerank::builder("BAAI/bge-reranker-base")
//!     .base_url("http://127.0.0.1:8081")
//!     .build()?;
//! let ranked = reranker
//!     .rerank(&RerankRequest::new("capital of france", ["berlin", "paris"]).top_k(1))
//!     .await?;
//! assert_eq!(ranked.results.len(), 1);
//! # Ok(())
//! # }
//! ```

mod embed;
mod rerank;

pub use embed::{TeiEmbeddings, TeiEmbeddingsBuilder};
pub use rerank::{TeiRerank, TeiRerankBuilder};

/// TEI's default `max-client-batch-size`: the default chunk size of both providers.
pub const DEFAULT_CHUNK_SIZE: usize = 32;

/// The origin both builders start from (a local TEI on its default port).
const DEFAULT_ORIGIN: &str = "http://127.0.0.1:8080";

/// The `gen_ai.system` both providers report.
const SYSTEM: &str = "tei";

/// The managed fail-loud flag's wire key.
const TRUNCATE: &str = "truncate";
