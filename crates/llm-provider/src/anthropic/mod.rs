//! Spec: llm-provider §8.2 — the Anthropic Messages mapping over HTTP.
//!
//! - `POST {base_url}/messages` for `complete()`, `GET {base_url}/models/{model}`
//!   for `ready()`; `base_url` includes the API version prefix (default
//!   [`DEFAULT_BASE_URL`], `https://api.anthropic.com/v1`). Every request carries
//!   `x-api-key` (when a key is set) and `anthropic-version` (default
//!   [`DEFAULT_ANTHROPIC_VERSION`]); no beta header is sent.
//! - Transport: reqwest with rustls, as for [`crate::OpenAiProvider`]: connection
//!   failures and timeouts are `provider_unavailable`; successful bodies are read up
//!   to the transport's
//!   [`max_response_bytes`](openarmature_http::Transport::max_response_bytes) (a
//!   larger one is `provider_invalid_response`).
//! - Request (§8.2.1): system messages become the top-level `system` string (joined
//!   with a blank line); `tool` messages collapse into `user` messages of
//!   `tool_result` blocks; tool calls become `tool_use` blocks; thinking blocks pass
//!   through with their signature (a thinking block without one is foreign and
//!   stripped, as are text-block and tool-call signatures, §3.1.7); tools are
//!   `{name, description, input_schema}`; `tool_choice: required` is `{type: any}`.
//! - Config: `max_tokens` is required and `seed` / `frequency_penalty` /
//!   `presence_penalty` are unsupported: each is a pre-send `provider_invalid_request`.
//! - Managed wire fields (§6 *Managed-field collision*): `model` and `messages`
//!   always; `system`, `tools`, `tool_choice`, `output_config`, `temperature`,
//!   `top_p` and `max_tokens` while the call produces them (an equal extras value is
//!   a no-op, a different one `provider_invalid_request`; while absent an extras key
//!   rides untouched, e.g. a `tool_choice` with `disable_parallel_tool_use`);
//!   `stop_sequences` while declared (merged, declared first, de-duplicated; a value
//!   that is not a list of strings is ignored); `stream` always (only the call's own
//!   value is accepted: `false`, or `true` for a streamed call under extension 0006).
//!   Other extras ride at the body root untouched.
//! - Structured output (§8.2.5): see [`StructuredOutputPath`] and
//!   [`AnthropicProvider::structured_output_path`]. The native path is taken unless
//!   the model's [`ModelCapabilities::supports_native_response_format`] is false.
//! - Streaming is not part of this mapping in the pinned specification: by default
//!   `supports_streaming()` is false and a `stream` call is rejected pre-send with
//!   `provider_invalid_request` (§5). With extension 0006 switched on
//!   ([`ProviderBuilder::stream_extension`](crate::ProviderBuilder::stream_extension))
//!   a streamed call sends `stream: true` and consumes the event stream (see
//!   `stream.rs`): the same token events, and a response assembled like an atomic one.
//! - The provider never retries; `complete()` retries only under a request's
//!   call-level retry config.
//!
//! # Examples
//! ```no_run
//! use openarmature_llm::{AnthropicProvider, CompletionRequest, Message, Provider, RuntimeConfig};
//! # async fn demo() -> Result<(), openarmature_llm::LlmError> {
//! let provider = AnthropicProvider::builder("claude-sonnet-4-5")
//!     .api_key("sk-ant-...")
//!     .build()?;
//! let request = CompletionRequest::new(vec![Message::system("Be brief."), Message::user("Hello")])
//!     .config(RuntimeConfig::default().max_tokens(256));
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

pub use builder::AnthropicBuilder;
pub use request::SYNTHETIC_TOOL_NAME;

use openarmature_http::Reply;

use crate::error::LlmError;
use crate::provider::{ModelCapabilities, Provider, WireRequest};
use crate::response::Response;
use crate::stream::{DeltaKind, DeltaSink};
use crate::validate;
use crate::wire_client::{success, Endpoint, WireClient};

/// The hosted Anthropic API, version prefix included.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header sent by default.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";

/// How structured output reaches the model (§8.2.5 / §8.2.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredOutputPath {
    /// `output_config: {format: {type: json_schema, schema}}`; the JSON comes back as
    /// the text content.
    Native,
    /// For models without native support and a call without tools: a synthetic tool
    /// ([`SYNTHETIC_TOOL_NAME`]) whose `input_schema` is the schema, forced with
    /// `tool_choice`. Its input becomes `Response::parsed`; the response shows it as
    /// text content (the canonical JSON), no tool call, and `finish_reason: stop`
    /// where the wire said `tool_use`.
    ToolCoercion,
    /// For models without native support and a call that has tools: a directive
    /// carrying the canonical schema is appended to `system` (see
    /// [`ProviderBuilder::fallback_directive`](crate::ProviderBuilder::fallback_directive));
    /// the text is validated.
    PromptFallback,
}

/// A provider speaking the Anthropic Messages API (§8.2). Cheap to clone; concurrent
/// calls go to the wire concurrently (§8.2.4). `Debug` never prints the API key.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    /// The client; `anthropic-version` is one of its fixed headers.
    client: WireClient,
    messages_url: Endpoint,
    model_url: Endpoint,
    model: std::sync::Arc<str>,
    capabilities: ModelCapabilities,
    /// Extension 0006 switched on.
    streaming: bool,
    provider_name: std::sync::Arc<str>,
    fallback_directive: String,
}

impl AnthropicProvider {
    /// The bound model's capabilities.
    pub fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
    }

    /// Which structured-output path a `response_schema` call takes: native when the
    /// model supports it, else tool-call coercion for a call without tools (the
    /// preferred fallback), else prompt augmentation.
    pub fn structured_output_path(&self, call_has_tools: bool) -> StructuredOutputPath {
        if self.capabilities.supports_native_response_format {
            StructuredOutputPath::Native
        } else if call_has_tools {
            StructuredOutputPath::PromptFallback
        } else {
            StructuredOutputPath::ToolCoercion
        }
    }

    fn path(&self, request: &WireRequest<'_>) -> Option<StructuredOutputPath> {
        request
            .response_schema
            .map(|_| self.structured_output_path(!request.tools.is_empty()))
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
        request::check_config(request.config)?;
        let body = request::body(
            &self.model,
            request,
            self.path(request),
            &self.fallback_directive,
        )?;
        Ok((prepared, body))
    }

    /// One streamed attempt (extension 0006): `stream: true` on the wire, the event
    /// stream consumed as it arrives.
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
                &self.messages_url,
                body,
                errors::from_status,
                &mut assembler,
                sink,
            )
            .await?;
        assembler.response(&prepared, request.response_schema, self.path(&request))
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
        let reply = self.client.post_json(&self.messages_url, body).await?;
        self.answer(&request, &prepared, &reply)
    }

    /// One answer: its §8.2.3 error, or the §8.2.2 response.
    fn answer(
        &self,
        request: &WireRequest<'_>,
        prepared: &validate::Prepared,
        reply: &Reply,
    ) -> Result<Response, LlmError> {
        success(reply, errors::from_status)?;
        response::parse(
            &reply.body,
            prepared,
            request.response_schema,
            self.path(request),
        )
    }

    /// What `send()` makes of one answer to `request`: the §8.2.3 error for a non-2xx
    /// status, else the §8.2.2 response mapping (tool calls and `response_schema`
    /// validated on the request's structured-output path). The request is validated
    /// first, as before a send.
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
        self.answer(request, &prepared, reply)
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
        assembler.response(&prepared, request.response_schema, self.path(request))
    }

    /// `ready()`: the model's entry in the models API answers 2xx.
    async fn ready_once(&self) -> Result<(), LlmError> {
        let reply = self.client.get(&self.model_url).await?;
        success(&reply, errors::from_status)
    }
}

impl Provider for AnthropicProvider {
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
