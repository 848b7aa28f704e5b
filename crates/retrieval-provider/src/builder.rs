//! Spec: retrieval-provider §8 (construction shared by the wire mappings: an API key, an
//! `http(s)` origin, one bound model per instance, the transport) and §8 *Batch
//! chunking* (the per-request cap a chunking mapping takes).
//!
//! One builder type serves every provider: [`ProviderBuilder<P>`] builds the provider
//! `P` ([`TeiEmbeddingsBuilder`](crate::TeiEmbeddingsBuilder), ...,
//! [`CohereRerankBuilder`](crate::CohereRerankBuilder) are its instances). The setters
//! every provider takes are written here once, and so is `chunk_size` for the chunking
//! providers (the ones marked `Chunked`); a provider's own setters (`prefixes`,
//! `prompt_name`) and its `build()` live in the provider's module. The
//! client options, the response-size cap and a caller-supplied `reqwest::Client` are
//! one [`Transport`], shared with `openarmature-llm`.

use std::marker::PhantomData;

use openarmature_http::Transport;

use crate::endpoint::Connect;
use crate::error::RetrievalError;

/// Builds the provider `P` (e.g. [`TeiEmbeddings::builder`](crate::TeiEmbeddings::builder)).
/// `Debug` never prints the API key.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use openarmature_retrieval::{OpenAiEmbeddings, Transport};
///
/// let embedder = OpenAiEmbeddings::builder("text-embedding-3-small")
///     .api_key("sk-...")
///     .base_url("http://127.0.0.1:8080")
///     .transport(Transport::default().timeout(Duration::from_secs(30)).no_proxy())
///     .chunk_size(512)
///     .build()?;
/// # let _ = embedder;
/// # Ok::<(), openarmature_retrieval::RetrievalError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ProviderBuilder<P> {
    pub(crate) conn: Connect,
    /// The per-request input / document cap (the chunking providers; 0, unused, for
    /// the others).
    pub(crate) chunk_size: usize,
    /// `input_type` → TEI prompt name (TEI embeddings).
    pub(crate) prompt_names: Vec<(String, String)>,
    /// Client-side query / document prefixes (TEI and OpenAI-compatible embeddings).
    pub(crate) prefixes: Option<(String, String)>,
    provider: PhantomData<fn() -> P>,
}

impl<P> ProviderBuilder<P> {
    /// A builder for `model` against `origin`, with the default transport (a chunking
    /// provider then sets its default `chunk_size`).
    pub(crate) fn new(model: impl Into<String>, origin: &str) -> Self {
        ProviderBuilder {
            conn: Connect::new(model.into(), origin),
            chunk_size: 0,
            prompt_names: Vec::new(),
            prefixes: None,
            provider: PhantomData,
        }
    }

    /// The API key, sent as `Authorization: Bearer <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// The server origin (default: the provider's hosted API, or a local TEI on
    /// `http://127.0.0.1:8080`); the version prefix stays in the route.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The chunk size when it is within `1..=max` (`max` `usize::MAX`: any positive
    /// size).
    ///
    /// # Errors
    /// `provider_invalid_request` for a chunk size outside the range.
    pub(crate) fn checked_chunk_size(&self, max: usize) -> Result<usize, RetrievalError> {
        match self.chunk_size {
            0 if max == usize::MAX => Err(RetrievalError::invalid_request(
                "chunk_size must be positive",
            )),
            n if (1..=max).contains(&n) => Ok(n),
            _ => Err(RetrievalError::invalid_request(format!(
                "chunk_size must be within 1..={max}"
            ))),
        }
    }

    /// How requests reach the server: timeouts, proxy use, the response-size cap
    /// (default [`DEFAULT_MAX_RESPONSE_BYTES`](crate::DEFAULT_MAX_RESPONSE_BYTES)) or a
    /// caller-configured `reqwest::Client` ([`Transport::client`]).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.conn.transport = transport;
        self
    }
}

mod sealed {
    /// A provider that splits a long call into chunks of at most its builder's
    /// `chunk_size` (implemented in this crate only).
    pub trait Chunked {}
}

pub(crate) use sealed::Chunked;

impl<P: Chunked> ProviderBuilder<P> {
    /// The per-request input (rerank: document) cap; longer calls are split into
    /// consecutive chunks and stitched. Default and maximum 2048 for
    /// [`OpenAiEmbeddings`](crate::OpenAiEmbeddings) and 96 for
    /// [`CohereEmbeddings`](crate::CohereEmbeddings) (lower for a server or gateway with
    /// a smaller batch limit); for [`TeiEmbeddings`](crate::TeiEmbeddings) and
    /// [`TeiRerank`](crate::TeiRerank) the instance's `max-client-batch-size` (default
    /// 32).
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = size;
        self
    }
}
