//! Spec: llm-provider §8.1 — the OpenAI-compatible Chat Completions mapping over HTTP
//! (OpenAI, vLLM, Ollama, LM Studio, llama.cpp server, ...).
//!
//! - `POST {base_url}/chat/completions` for `complete()`, `GET {base_url}/models` for
//!   `ready()`; `base_url` includes the API version prefix (e.g.
//!   `https://api.openai.com/v1`, `http://localhost:8000/v1`).
//! - Transport: reqwest with rustls. Connection failures and timeouts are
//!   `provider_unavailable`. Response bodies are read up to the transport's
//!   [`Transport::max_response_bytes`](openarmature_http::Transport::max_response_bytes)
//!   (default 8 MiB): a larger successful body is `provider_invalid_response`, so a
//!   hostile server cannot exhaust memory.
//! - Structured output uses native `response_format` unless the model's
//!   [`ModelCapabilities::supports_native_response_format`] is false, in which case
//!   the §8.1.5.1 fallback adds a system directive containing the canonical schema
//!   (see [`ProviderBuilder::fallback_directive`]); [`OpenAiProvider::structured_output_path`]
//!   reports the path.
//! - Managed wire fields (§6 *Managed-field collision*): `model`, `messages`, `tools`,
//!   `tool_choice` and `stream` always; `temperature`, `max_tokens`, `top_p`, `seed`,
//!   `frequency_penalty`, `presence_penalty` while set (an equal extras value is a
//!   no-op, a different one `provider_invalid_request`); `stop` while
//!   `stop_sequences` is set (merged, declared first, de-duplicated; a malformed
//!   extras value is ignored); `response_format` on the native structured path;
//!   `stream_options` while streaming. Other extras ride at the body root untouched.
//! - Streaming (§8.1.6): `stream: true` plus `stream_options: {include_usage: true}`
//!   on the wire; the Server-Sent Events answer is decoded incrementally, content and
//!   reasoning (`reasoning_content` / `reasoning`) deltas reported as they arrive, and
//!   the response assembled like an atomic one (see `stream.rs`). The size cap applies
//!   to the whole stream; the transport's `timeout` bounds the whole call, stream
//!   included (use its `read_timeout` to bound silences instead for long generations).
//! - The provider never retries; `complete()` retries only under a request's
//!   call-level retry config.
//!
//! # Examples
//! ```no_run
//! use openarmature_llm::{CompletionRequest, Message, OpenAiProvider, Provider};
//! # async fn demo() -> Result<(), openarmature_llm::LlmError> {
//! let provider = OpenAiProvider::builder("http://localhost:8000/v1", "my-model")
//!     .api_key("sk-...")
//!     .build()?;
//! provider.ready().await?;
//! let request = CompletionRequest::new(vec![Message::user("Hello")]);
//! let response = provider.complete(&request).await?;
//! println!("{:?}", response.content());
//! # Ok(())
//! # }
//! ```

pub mod context_window;
pub(crate) mod errors;
mod fast;
mod request;
mod response;
mod stream;

use futures::future::BoxFuture;
use serde_json::Value;

pub use errors::retry_after;
pub use request::StructuredOutputPath;

use openarmature_http::Reply;

use crate::builder::ProviderBuilder;
use crate::error::{ErrorCategory, LlmError};
use crate::provider::{ModelCapabilities, Provider, WireRequest};
use crate::response::Response;
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate;
use crate::wire_client::{success, Endpoint, KeyHeader, WireClient};

/// The default response size cap (8 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// The default §8.1.5.1 fallback directive; `{schema}` is replaced by the canonical
/// (sorted-key, compact) JSON of the `response_schema`.
pub const DEFAULT_FALLBACK_DIRECTIVE: &str = "Respond with only a JSON value that conforms to the following JSON Schema, with no other text: {schema}";

/// Builds an [`OpenAiProvider`]: the shared [`ProviderBuilder`] setters (key,
/// transport, capabilities, provider name, fallback directive).
pub type OpenAiBuilder = ProviderBuilder<OpenAiProvider>;

impl ProviderBuilder<OpenAiProvider> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL or the
    /// HTTP client cannot be built.
    pub fn build(self) -> Result<OpenAiProvider, LlmError> {
        let base = openarmature_http::base_url(&self.base_url)?;
        Ok(OpenAiProvider {
            client: WireClient::new(self.transport, self.api_key, KeyHeader::Bearer, Vec::new())?,
            chat_url: Endpoint::new(&format!("{base}/chat/completions"))?,
            models_url: Endpoint::new(&format!("{base}/models"))?,
            model: self.model.into(),
            capabilities: self.capabilities,
            provider_name: self.provider_name.into(),
            fallback_directive: self.fallback_directive,
        })
    }
}

/// A provider speaking the OpenAI-compatible Chat Completions API (§8.1). Cheap to
/// clone; concurrent calls go to the wire concurrently (§8.1.4). `Debug` never
/// prints the API key.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    client: WireClient,
    chat_url: Endpoint,
    models_url: Endpoint,
    model: std::sync::Arc<str>,
    capabilities: ModelCapabilities,
    provider_name: std::sync::Arc<str>,
    fallback_directive: String,
}

impl OpenAiProvider {
    /// A builder for a provider bound to `model` at `base_url`.
    pub fn builder(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiBuilder {
        ProviderBuilder::new(base_url, model, "openai")
    }

    /// The bound model's capabilities.
    pub fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
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
        let prepared = validate::request(request, &self.capabilities)?;
        let body = request::body(
            &self.model,
            request,
            self.structured_output_path(),
            &self.fallback_directive,
        )?;
        Ok((prepared, body))
    }

    /// One streamed attempt (§8.1.6): `stream: true` on the wire, the SSE answer
    /// consumed as it arrives.
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
                &self.chat_url,
                body,
                errors::from_status,
                &mut assembler,
                sink,
            )
            .await?;
        assembler.response(&prepared, request.response_schema)
    }

    /// What `send()` makes of one answer to `request`: the §8.1.3 error for a non-2xx
    /// status, else the §8.1.2 response mapping (tool calls and `response_schema`
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
        answer(reply.clone(), &prepared, request.response_schema)
    }

    /// What a streamed `send()` makes of a 2xx Server-Sent Events body arriving in
    /// `pieces` (§8.1.6): decoded incrementally, deltas reported to `sink`, the
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

    async fn send_once(&self, request: WireRequest<'_>) -> Result<Response, LlmError> {
        if request.stream {
            // A streamed request sent as one attempt: consumed, deltas unobserved.
            return self
                .send_stream_once(request, &|_: DeltaKind, _: &str| {})
                .await;
        }
        let (prepared, body) = self.prepare(&request)?;
        let reply = self.client.post_json(&self.chat_url, body).await?;
        answer(reply, &prepared, request.response_schema)
    }

    async fn ready_once(&self) -> Result<(), LlmError> {
        let reply = self.client.get(&self.models_url).await?;
        success(&reply, errors::from_status)?;
        let listing: Value = serde_json::from_slice(&reply.body).map_err(|e| {
            LlmError::invalid_response(format!("model listing is not valid JSON: {e}"))
                .with_source(e)
        })?;
        let entries = listing
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| LlmError::invalid_response("model listing has no `data` list"))?;
        let entry = entries
            .iter()
            .find(|e| e.get("id").and_then(Value::as_str) == Some(&*self.model))
            .ok_or_else(|| {
                LlmError::new(
                    ErrorCategory::ProviderInvalidModel,
                    format!("model `{}` is not served by this provider", self.model),
                )
            })?;
        let state = entry
            .get("status")
            .or_else(|| entry.get("state"))
            .and_then(Value::as_str);
        match state {
            None | Some("loaded" | "ready" | "available" | "serving" | "running") => Ok(()),
            Some(other) => Err(LlmError::new(
                ErrorCategory::ProviderModelNotLoaded,
                format!(
                    "model `{}` is known but not serving (status `{other}`)",
                    self.model
                ),
            )),
        }
    }
}

/// One non-streamed answer: its §8.1.3 error, or the §8.1.2 response.
fn answer(
    reply: Reply,
    prepared: &validate::Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, LlmError> {
    success(&reply, errors::from_status)?;
    response::parse(reply.body, prepared, response_schema)
}

impl Provider for OpenAiProvider {
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
        true
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.send_stream_once(request, sink))
    }
}
