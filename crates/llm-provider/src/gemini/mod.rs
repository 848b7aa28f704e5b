//! Spec: llm-provider §8.3 — the Google Gemini `generateContent` mapping over HTTP.
//!
//! - `POST {base_url}/models/{model}:generateContent` for `complete()`,
//!   `GET {base_url}/models/{model}` for `ready()`; `base_url` includes the API
//!   version (default [`DEFAULT_BASE_URL`], `https://generativelanguage.googleapis.com/v1beta`).
//!   The bound model is the URL path segment, never a body field. The API key
//!   travels in the `x-goog-api-key` header.
//! - Transport: reqwest with rustls, as for [`crate::OpenAiProvider`]: connection
//!   failures and timeouts are `provider_unavailable`; response bodies are capped
//!   ([`Transport::max_response_bytes`](openarmature_http::Transport::max_response_bytes)).
//! - Request bodies are byte-stable: every object's keys sorted recursively, arrays
//!   in caller order (§8 *Intra-impl wire-byte stability*).
//! - Structured output (§8.3.5): `generationConfig.responseMimeType:
//!   "application/json"` plus `responseJsonSchema`, unless the model's
//!   [`ModelCapabilities::supports_native_response_format`] is false; then the
//!   §8.3.5.1 fallback appends a directive carrying the canonical schema to
//!   `systemInstruction` ([`ProviderBuilder::fallback_directive`](crate::ProviderBuilder::fallback_directive)).
//!   [`GeminiProvider::structured_output_path`] reports the path a call takes.
//! - Managed fields (§6 *Managed-field collision*), all under `generationConfig`,
//!   where config extras are placed: `temperature`, `topP`, `maxOutputTokens`,
//!   `seed`, `frequencyPenalty`, `presencePenalty` while the declared field they
//!   realize is set (an equal extras value is a no-op, a different one
//!   `provider_invalid_request`); `stopSequences` while `stop_sequences` is set
//!   (merged, declared first, de-duplicated; anything but a list of strings is
//!   ignored); `responseMimeType` / `responseJsonSchema` on the native structured
//!   path. Every other extra rides untouched under `generationConfig`.
//! - Streaming is not mapped in the pinned specification: by default
//!   `supports_streaming()` is false and a `stream` call is rejected pre-send with
//!   `provider_invalid_request`, as §5 requires. With extension 0006 switched on
//!   ([`ProviderBuilder::stream_extension`](crate::ProviderBuilder::stream_extension))
//!   a streamed call posts the same body to `…:streamGenerateContent?alt=sse` and
//!   consumes the event stream (see `stream.rs`): the same token events, and a
//!   response assembled like an atomic one.
//! - The provider never retries; `complete()` retries only under a request's
//!   call-level retry config.
//!
//! # Examples
//! ```no_run
//! use openarmature_llm::{CompletionRequest, GeminiProvider, Message, Provider};
//! # async fn demo() -> Result<(), openarmature_llm::LlmError> {
//! let provider = GeminiProvider::builder("gemini-2.5-flash")
//!     .api_key("AIza...")
//!     .build()?;
//! let request = CompletionRequest::new(vec![Message::user("Hello")]);
//! let response = provider.complete(&request).await?;
//! println!("{:?}", response.content());
//! # Ok(())
//! # }
//! ```

mod builder;
mod errors;
mod request;
mod response;
mod stream;

use futures::future::BoxFuture;

use openarmature_http::Reply;

use crate::error::LlmError;
use crate::openai::StructuredOutputPath;
use crate::provider::{ModelCapabilities, Provider, WireRequest};
use crate::response::Response;
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate;
use crate::wire_client::{success, Endpoint, WireClient};

pub use builder::{GeminiBuilder, DEFAULT_BASE_URL};

/// The header carrying the API key.
pub(super) const API_KEY_HEADER: &str = "x-goog-api-key";

/// A provider speaking the Gemini `generateContent` API (§8.3). Cheap to clone;
/// concurrent calls go to the wire concurrently (§8.3.4). `Debug` never prints the
/// API key.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    pub(super) client: WireClient,
    pub(super) generate_url: Endpoint,
    /// `…:streamGenerateContent?alt=sse` (extension 0006).
    pub(super) stream_url: Endpoint,
    /// Extension 0006 switched on.
    pub(super) streaming: bool,
    pub(super) model_url: Endpoint,
    pub(super) model: std::sync::Arc<str>,
    pub(super) capabilities: ModelCapabilities,
    pub(super) provider_name: std::sync::Arc<str>,
    pub(super) fallback_directive: String,
}

impl GeminiProvider {
    /// The bound model's capabilities.
    pub fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
    }

    /// The URL `complete()` posts to.
    pub fn generate_url(&self) -> &str {
        self.generate_url.as_str()
    }

    /// Which structured-output path a `response_schema` call takes.
    pub fn structured_output_path(&self) -> StructuredOutputPath {
        if self.capabilities.supports_native_response_format {
            StructuredOutputPath::Native
        } else {
            StructuredOutputPath::PromptFallback
        }
    }

    /// The exact request body bytes `complete()` would send for `request` (after
    /// validation): for inspection, logging and cache-key computation.
    ///
    /// # Errors
    /// The pre-send validation error, if any.
    pub fn request_body(&self, request: &WireRequest<'_>) -> Result<Vec<u8>, LlmError> {
        self.prepare(request).map(|(_, body)| body)
    }

    fn prepare(
        &self,
        request: &WireRequest<'_>,
    ) -> Result<(validate::Prepared, Vec<u8>), LlmError> {
        if request.stream && !self.streaming {
            // A streamed attempt without extension 0006: the same pre-send rejection
            // as the trait's default `send_stream` (§5).
            return Err(crate::stream::streaming_unsupported(&self.provider_name));
        }
        let prepared = validate::request(request, &self.capabilities)?;
        let body = request::body(
            request,
            self.structured_output_path(),
            &self.fallback_directive,
        )?;
        Ok((prepared, body))
    }

    /// One streamed attempt (extension 0006): the same body on the streaming
    /// endpoint, the event stream consumed as it arrives.
    async fn send_stream_once(
        &self,
        mut request: WireRequest<'_>,
        sink: &dyn DeltaSink,
    ) -> Result<Response, LlmError> {
        request.stream = true;
        let (prepared, body) = self.prepare(&request)?;
        let mut assembler = stream::Assembler::default();
        self.client
            .post_stream(
                &self.stream_url,
                body,
                errors::from_status,
                &mut assembler,
                sink,
            )
            .await?;
        assembler.response(&prepared, request.response_schema)
    }

    async fn send_once(&self, request: WireRequest<'_>) -> Result<Response, LlmError> {
        if request.stream {
            // A streamed request sent as one attempt: consumed, deltas unobserved
            // (rejected pre-send without extension 0006).
            return self
                .send_stream_once(request, &|_: DeltaKind, _: &str| {})
                .await;
        }
        let (prepared, body) = self.prepare(&request)?;
        let reply = self.client.post_json(&self.generate_url, body).await?;
        success(&reply, errors::from_status)?;
        response::parse(&reply.body, &prepared, request.response_schema)
    }

    /// What `send()` makes of one answer to `request`: the §8.3.3 error for a non-2xx
    /// status, else the §8.3.2 response mapping (tool calls and `response_schema`
    /// validated). The request is validated first, as before a send.
    ///
    /// The decoding path alone, without a network: the entry point of the fuzz
    /// targets (`fuzz/` in the repository). Not part of the stable API.
    ///
    /// # Errors
    /// The pre-send validation error, or what the answer maps to.
    #[doc(hidden)]
    pub fn decode_reply(
        &self,
        request: &WireRequest<'_>,
        reply: &Reply,
    ) -> Result<Response, LlmError> {
        let (prepared, _) = self.prepare(request)?;
        success(reply, errors::from_status)?;
        response::parse(&reply.body, &prepared, request.response_schema)
    }

    /// What a streamed `send()` makes of a 2xx Server-Sent Events body arriving in
    /// `pieces` (extension 0006): decoded incrementally, deltas reported to `sink`, the
    /// response assembled and mapped like an atomic one. The request is validated
    /// first, as before a send.
    ///
    /// The decoding path alone, without a network: the entry point of the fuzz
    /// targets (`fuzz/` in the repository). Not part of the stable API.
    ///
    /// # Errors
    /// The pre-send validation error, or what the stream maps to.
    #[doc(hidden)]
    pub fn decode_stream(
        &self,
        request: &WireRequest<'_>,
        pieces: &[&[u8]],
        sink: &dyn DeltaSink,
    ) -> Result<Response, LlmError> {
        let (prepared, _) = self.prepare(request)?;
        let mut assembler = stream::Assembler::default();
        self.client.decode(pieces, &mut assembler, sink)?;
        assembler.response(&prepared, request.response_schema)
    }

    /// §5 `ready()`: the model's metadata resource answers 2xx.
    async fn ready_once(&self) -> Result<(), LlmError> {
        let reply = self.client.get(&self.model_url).await?;
        success(&reply, errors::from_status)
    }
}

impl Provider for GeminiProvider {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        &self.provider_name
    }

    fn event_names(&self) -> (std::sync::Arc<str>, std::sync::Arc<str>) {
        (
            std::sync::Arc::clone(&self.provider_name),
            std::sync::Arc::clone(&self.model),
        )
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(self.ready_once())
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.send_once(request))
    }

    fn supports_streaming(&self) -> bool {
        self.streaming
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.send_stream_once(request, sink))
    }
}
