//! Spec: retrieval-provider §3 / §5 (`ready()`, the wire exchange of one call, the
//! per-instance model binding) and §8 (a wire mapping: a JSON POST of a mapped body to
//! one route, its answer read back).
//!
//! Every vendor's provider is a wire mapping: [`EmbeddingWire`] / [`RerankWire`] say
//! only what differs between vendors (the system name, the route, the readiness
//! probe, the body, the decoding, the chunk cap), and one blanket impl per kind turns
//! a mapping into an [`EmbeddingProvider`] / [`RerankProvider`]. The traits are
//! crate-internal: the public surface is the providers and the two protocols.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::embedding::{EmbeddingConfig, EmbeddingProvider, EmbeddingResponse};
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::rerank::{RerankProvider, RerankRequest, RerankResponse, RerankUsage};
use crate::scored::{self, ResultShape};
use crate::stitch::{self, Chunk};
use crate::wire;

/// How a mapping's `ready()` checks its bound model.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ready {
    /// `GET /v1/models/{model}` (a wire with a model catalog).
    Model,
    /// `GET` this route (e.g. TEI's `/info`).
    Path(&'static str),
    /// A minimal real call through the same wire (a vendor without a catalog: it
    /// surfaces exactly the categories a real call would).
    Call,
}

/// What identifies a mapping's wire: the `gen_ai.system` it reports, the route it
/// POSTs to, and its readiness probe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wire {
    system: &'static str,
    route: &'static str,
    ready: Ready,
}

impl Wire {
    /// `system` POSTing to `route`, ready by the model probe.
    pub(crate) const fn new(system: &'static str, route: &'static str) -> Self {
        Wire {
            system,
            route,
            ready: Ready::Model,
        }
    }

    /// The route the wire POSTs to.
    pub(crate) const fn route(self) -> &'static str {
        self.route
    }

    /// The same wire with another readiness probe.
    pub(crate) const fn ready(self, ready: Ready) -> Self {
        Wire { ready, ..self }
    }
}

/// An embedding wire mapping; every implementor is an [`EmbeddingProvider`].
pub(crate) trait EmbeddingWire: Send + Sync {
    /// The system name, route and readiness probe.
    const WIRE: Wire;

    /// The endpoint (bound model, origin, client).
    fn endpoint(&self) -> &Endpoint;

    /// The per-request input cap (`None`: one request, the vendor batches
    /// server-side).
    fn chunk_cap(&self) -> Option<usize> {
        None
    }

    /// The wire body for one chunk.
    ///
    /// # Errors
    /// `provider_invalid_request` for what the mapping rejects before sending.
    fn body(&self, input: &[String], config: &EmbeddingConfig) -> Result<Value, RetrievalError>;

    /// One chunk's answer, read.
    ///
    /// # Errors
    /// `provider_invalid_response` when the answer cannot be read.
    fn decode(&self, raw: Value) -> Result<Chunk, RetrievalError>;
}

/// One chunk's exchange: post the body, decode the answer.
async fn post_chunk<W: EmbeddingWire>(
    wire: &W,
    input: &[String],
    config: &EmbeddingConfig,
) -> Result<Chunk, RetrievalError> {
    let body = wire.body(input, config)?;
    let raw = wire.endpoint().post(W::WIRE.route, &body).await?;
    wire.decode(raw)
}

/// The readiness probe of `endpoint` (`call`: the minimal real call, for
/// [`Ready::Call`]).
async fn probe<F>(endpoint: &Endpoint, ready: Ready, call: F) -> Result<(), RetrievalError>
where
    F: std::future::Future<Output = Result<(), RetrievalError>>,
{
    match ready {
        Ready::Model => endpoint.probe_model().await,
        Ready::Path(route) => endpoint.probe(route).await,
        Ready::Call => call.await,
    }
}

impl<W: EmbeddingWire> EmbeddingProvider for W {
    fn model(&self) -> &str {
        &self.endpoint().model
    }

    fn provider_name(&self) -> &str {
        W::WIRE.system
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>> {
        Box::pin(async move {
            let input = ["ready".to_owned()];
            let config = EmbeddingConfig::new();
            let call = async { post_chunk(self, &input, &config).await.map(|_| ()) };
            probe(self.endpoint(), W::WIRE.ready, call).await
        })
    }

    fn send<'a>(
        &'a self,
        input: &'a [String],
        config: &'a EmbeddingConfig,
    ) -> BoxFuture<'a, Result<EmbeddingResponse, RetrievalError>> {
        Box::pin(stitch::embed_in_chunks(
            input,
            self.chunk_cap().unwrap_or(input.len()),
            &self.endpoint().model,
            move |chunk| post_chunk(self, chunk, config),
        ))
    }
}

/// A rerank wire mapping; every implementor is a [`RerankProvider`]. The default
/// exchange is a hosted one: one POST of the whole call, the answer's `results`
/// read by [`RerankWire::SHAPE`], the echoed model (else the bound one) and the
/// top-level `id`.
pub(crate) trait RerankWire: Send + Sync {
    /// The system name, route and readiness probe.
    const WIRE: Wire;

    /// Where the result entries keep their score and echo.
    const SHAPE: ResultShape;

    /// The endpoint (bound model, origin, client).
    fn endpoint(&self) -> &Endpoint;

    /// The wire body scoring `documents` (the request's own, or one chunk of them on a
    /// chunking wire) against the request's query.
    ///
    /// # Errors
    /// `provider_invalid_request` for what the mapping rejects before sending.
    fn body(&self, request: &RerankRequest, documents: &[String]) -> Result<Value, RetrievalError>;

    /// The usage record an answer reports (default: none).
    fn usage(&self, _raw: &Value) -> Option<RerankUsage> {
        None
    }

    /// The exchange of one validated call (default: the hosted exchange).
    fn call<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>>
    where
        Self: Sized,
    {
        Box::pin(hosted(self, request))
    }
}

/// The hosted exchange (see [`RerankWire`]).
async fn hosted<W: RerankWire>(
    wire: &W,
    request: &RerankRequest,
) -> Result<RerankResponse, RetrievalError> {
    let body = wire.body(request, &request.documents)?;
    let raw = wire.endpoint().post(W::WIRE.route, &body).await?;
    let results = scored::parse(raw.get("results"), W::SHAPE)?;
    RerankResponse::checked(
        results,
        request.documents.len(),
        request.top_k,
        wire::model(raw.get("model")).unwrap_or_else(|| wire.endpoint().model.clone()),
        wire.usage(&raw),
        wire::identifier(raw.get("id")),
        raw,
    )
}

impl<W: RerankWire> RerankProvider for W {
    fn model(&self) -> &str {
        &self.endpoint().model
    }

    fn provider_name(&self) -> &str {
        W::WIRE.system
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>> {
        Box::pin(async move {
            let request = RerankRequest::new("ready", ["ready"]);
            let call = async { self.call(&request).await.map(|_| ()) };
            probe(self.endpoint(), W::WIRE.ready, call).await
        })
    }

    fn send<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>> {
        self.call(request)
    }
}
