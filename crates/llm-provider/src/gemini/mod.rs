//! Spec: llm-provider §8.3 — the Google Gemini `generateContent` mapping over HTTP.
//!
//! - `POST {base_url}/models/{model}:generateContent` for `complete()`,
//!   `GET {base_url}/models/{model}` for `ready()`; `base_url` includes the API
//!   version (default [`DEFAULT_BASE_URL`], `https://generativelanguage.googleapis.com/v1beta`).
//!   The bound model is the URL path segment, never a body field. The API key
//!   travels in the `x-goog-api-key` header.
//! - Transport: reqwest with rustls, as for [`crate::OpenAiProvider`]: connection
//!   failures and timeouts are `provider_unavailable`; response bodies are capped
//!   ([`GeminiBuilder::max_response_bytes`]).
//! - Request bodies are byte-stable: every object's keys sorted recursively, arrays
//!   in caller order (§8 *Intra-impl wire-byte stability*).
//! - Structured output (§8.3.5): `generationConfig.responseMimeType:
//!   "application/json"` plus `responseJsonSchema`, unless the model's
//!   [`ModelCapabilities::supports_native_response_format`] is false; then the
//!   §8.3.5.1 fallback appends a directive carrying the canonical schema to
//!   `systemInstruction` ([`GeminiBuilder::fallback_directive`]).
//!   [`GeminiProvider::structured_output_path`] reports the path a call takes.
//! - Managed fields (§6 *Managed-field collision*), all under `generationConfig`,
//!   where config extras are placed: `temperature`, `topP`, `maxOutputTokens`,
//!   `seed`, `frequencyPenalty`, `presencePenalty` while the declared field they
//!   realize is set (an equal extras value is a no-op, a different one
//!   `provider_invalid_request`); `stopSequences` while `stop_sequences` is set
//!   (merged, declared first, de-duplicated; anything but a list of strings is
//!   ignored); `responseMimeType` / `responseJsonSchema` on the native structured
//!   path. Every other extra rides untouched under `generationConfig`.
//! - Streaming is not mapped (Gemini streams on another endpoint): a `stream` call
//!   is rejected pre-send with `provider_invalid_request`, as §5 requires.
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

mod errors;
mod request;
mod response;

use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use crate::error::LlmError;
use crate::http::{self, Reply};
use crate::openai::{StructuredOutputPath, DEFAULT_FALLBACK_DIRECTIVE, DEFAULT_MAX_RESPONSE_BYTES};
use crate::provider::{ModelCapabilities, Provider, WireRequest};
use crate::response::Response;
use crate::validate;

/// The hosted Gemini API, version included.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The header carrying the API key.
const API_KEY_HEADER: &str = "x-goog-api-key";

/// Builds a [`GeminiProvider`].
#[derive(Clone)]
pub struct GeminiBuilder {
    base_url: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    read_timeout: Option<Duration>,
    max_response_bytes: usize,
    capabilities: ModelCapabilities,
    provider_name: String,
    fallback_directive: String,
    no_proxy: bool,
    client: Option<reqwest::Client>,
}

impl GeminiBuilder {
    /// The API base URL, version included (default [`DEFAULT_BASE_URL`]).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sends `x-goog-api-key: <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The whole-request deadline, body included (default 300 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The connection deadline (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest silence between body reads (default: none beyond `timeout`).
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = Some(timeout);
        self
    }

    /// The response size cap (default [`DEFAULT_MAX_RESPONSE_BYTES`]).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// What the bound model supports (`supports_native_response_format` selects the
    /// native `responseJsonSchema` path).
    pub fn capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The provider identifier on events (default `gemini`).
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// The §8.3.5.1 fallback directive; `{schema}` is replaced by the canonical
    /// schema JSON (default [`DEFAULT_FALLBACK_DIRECTIVE`]).
    pub fn fallback_directive(mut self, template: impl Into<String>) -> Self {
        self.fallback_directive = template.into();
        self
    }

    /// Ignores proxy environment variables (e.g. for a server on loopback).
    pub fn no_proxy(mut self) -> Self {
        self.no_proxy = true;
        self
    }

    /// Uses a caller-configured HTTP client; the timeout and proxy options of this
    /// builder are then ignored.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL, the
    /// model is empty, or the HTTP client cannot be built.
    pub fn build(self) -> Result<GeminiProvider, LlmError> {
        crate::error::register_category_probe();
        let base = self.base_url.trim_end_matches('/');
        let mut url = http::base_url(base)?;
        // `models/gemini-x` (the API's resource name) and `gemini-x` both work.
        let model = self
            .model
            .strip_prefix("models/")
            .unwrap_or(&self.model)
            .to_owned();
        if model.is_empty() {
            return Err(LlmError::invalid_request(
                "the bound model must be non-empty",
            ));
        }
        {
            let mut segments = url.path_segments_mut().map_err(|()| {
                LlmError::invalid_request(format!("base URL `{base}` cannot take a path"))
            })?;
            segments.pop_if_empty().extend(["models", model.as_str()]);
        }
        let model_url = url.to_string();
        let client = match self.client {
            Some(client) => client,
            None => http::client(&http::ClientOptions {
                timeout: self.timeout,
                connect_timeout: self.connect_timeout,
                read_timeout: self.read_timeout,
                no_proxy: self.no_proxy,
            })?,
        };
        Ok(GeminiProvider {
            client,
            generate_url: format!("{model_url}:generateContent"),
            model_url,
            model,
            api_key: self.api_key,
            max_response_bytes: self.max_response_bytes,
            capabilities: self.capabilities,
            provider_name: self.provider_name,
            fallback_directive: self.fallback_directive,
        })
    }
}

/// A provider speaking the Gemini `generateContent` API (§8.3). Cheap to clone;
/// concurrent calls go to the wire concurrently (§8.3.4). `Debug` never prints the
/// API key.
#[derive(Clone)]
pub struct GeminiProvider {
    client: reqwest::Client,
    generate_url: String,
    model_url: String,
    model: String,
    api_key: Option<String>,
    max_response_bytes: usize,
    capabilities: ModelCapabilities,
    provider_name: String,
    fallback_directive: String,
}

impl std::fmt::Debug for GeminiBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiBuilder")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for GeminiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiProvider")
            .field("generate_url", &self.generate_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl GeminiProvider {
    /// A builder for a provider bound to `model` on the hosted API.
    pub fn builder(model: impl Into<String>) -> GeminiBuilder {
        GeminiBuilder {
            base_url: DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            read_timeout: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            capabilities: ModelCapabilities::default(),
            provider_name: "gemini".into(),
            fallback_directive: DEFAULT_FALLBACK_DIRECTIVE.into(),
            no_proxy: false,
            client: None,
        }
    }

    /// The bound model's capabilities.
    pub fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
    }

    /// The URL `complete()` posts to.
    pub fn generate_url(&self) -> &str {
        &self.generate_url
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
        if request.stream {
            return Err(LlmError::invalid_request(
                "streaming is not implemented by the Gemini mapping (llm-provider §8.3 maps generateContent only)",
            ));
        }
        let prepared = validate::request(request, &self.capabilities)?;
        let body = request::body(
            request,
            self.structured_output_path(),
            &self.fallback_directive,
        )?;
        Ok((prepared, body))
    }

    async fn execute(&self, builder: reqwest::RequestBuilder) -> Result<Reply, LlmError> {
        let builder = builder.header(ACCEPT, "application/json");
        let builder = match &self.api_key {
            Some(key) => builder.header(API_KEY_HEADER, key),
            None => builder,
        };
        let reply = http::execute(builder, self.max_response_bytes).await?;
        if reply.is_success() {
            Ok(reply)
        } else {
            Err(errors::from_status(
                reply.status,
                &reply.headers,
                &reply.body,
            ))
        }
    }

    async fn send_once(&self, request: WireRequest<'_>) -> Result<Response, LlmError> {
        let (prepared, body) = self.prepare(&request)?;
        let post = self
            .client
            .post(&self.generate_url)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let reply = self.execute(post).await?;
        response::parse(&reply.body, &prepared, request.response_schema)
    }

    /// §5 `ready()`: the model's metadata resource answers 2xx.
    async fn ready_once(&self) -> Result<(), LlmError> {
        self.execute(self.client.get(&self.model_url))
            .await
            .map(drop)
    }
}

impl Provider for GeminiProvider {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        &self.provider_name
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(self.ready_once())
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.send_once(request))
    }
}
