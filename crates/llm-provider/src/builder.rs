//! Spec: llm-provider §8 (construction shared by the wire mappings: the API base URL
//! with its version prefix, the key, one bound model per instance with its
//! capabilities, the structured-output fallback directive, and the transport).
//!
//! One builder type serves the three mappings: [`ProviderBuilder<P>`] builds the
//! provider `P` ([`OpenAiBuilder`](crate::OpenAiBuilder),
//! [`AnthropicBuilder`](crate::AnthropicBuilder) and
//! [`GeminiBuilder`](crate::GeminiBuilder) are its three instances). The setters every
//! mapping takes are written here once; a mapping's own setters (Anthropic's
//! `anthropic_version`) and its `build()` live in the mapping's module. The client
//! options, the response-size cap and a caller-supplied `reqwest::Client` are one
//! [`Transport`], shared with `openarmature-retrieval`.

use std::marker::PhantomData;

use openarmature_http::Transport;

use crate::openai::DEFAULT_FALLBACK_DIRECTIVE;
use crate::provider::ModelCapabilities;

/// Builds the provider `P` (see [`OpenAiProvider::builder`](crate::OpenAiProvider::builder),
/// [`AnthropicProvider::builder`](crate::AnthropicProvider::builder),
/// [`GeminiProvider::builder`](crate::GeminiProvider::builder)). `Debug` never prints
/// the API key.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use openarmature_llm::{OpenAiProvider, Transport};
///
/// let provider = OpenAiProvider::builder("http://127.0.0.1:8000/v1", "my-model")
///     .api_key("sk-...")
///     .transport(Transport::default().timeout(Duration::from_secs(60)).no_proxy())
///     .provider_name("vllm")
///     .build()?;
/// # let _ = provider;
/// # Ok::<(), openarmature_llm::LlmError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct ProviderBuilder<P> {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) api_key: Option<String>,
    pub(crate) transport: Transport,
    pub(crate) capabilities: ModelCapabilities,
    pub(crate) provider_name: String,
    pub(crate) fallback_directive: String,
    /// Anthropic's `anthropic-version` header; `None` for the other mappings.
    pub(crate) anthropic_version: Option<String>,
    /// Extension 0006: streaming on the Anthropic and Gemini mappings.
    pub(crate) stream_extension: bool,
    provider: PhantomData<fn() -> P>,
}

impl<P> ProviderBuilder<P> {
    /// A builder for `model` at `base_url`, reporting `provider_name`, with the default
    /// transport and capabilities.
    pub(crate) fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        provider_name: &str,
    ) -> Self {
        ProviderBuilder {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            transport: Transport::default(),
            capabilities: ModelCapabilities::default(),
            provider_name: provider_name.to_owned(),
            fallback_directive: DEFAULT_FALLBACK_DIRECTIVE.into(),
            anthropic_version: None,
            stream_extension: false,
            provider: PhantomData,
        }
    }

    /// The API base URL, version prefix included (e.g. `http://localhost:8000/v1`;
    /// the hosted APIs' are the default of the Anthropic and Gemini mappings).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key, sent as the mapping's API expects: `Authorization: Bearer <key>`
    /// (OpenAI-compatible), `x-api-key` (Anthropic), `x-goog-api-key` (Gemini).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Extension 0006 (`spec/extensions/0006-anthropic-gemini-streaming.md`): lets the
    /// Anthropic and Gemini mappings stream (`stream` calls, [`Provider::stream`](crate::Provider::stream)),
    /// with the same token events and assembly rules as the OpenAI-compatible mapping.
    /// Off by default, so those mappings reject a `stream` call pre-send as the pinned
    /// specification says (llm-provider §5). The OpenAI-compatible mapping always
    /// streams and ignores this.
    pub fn stream_extension(mut self, enabled: bool) -> Self {
        self.stream_extension = enabled;
        self
    }

    /// How requests reach the server: timeouts, proxy use, the response-size cap
    /// (default [`DEFAULT_MAX_RESPONSE_BYTES`](crate::openai::DEFAULT_MAX_RESPONSE_BYTES))
    /// or a caller-configured `reqwest::Client` ([`Transport::client`]).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// What the bound model supports (`supports_native_response_format` selects the
    /// mapping's native structured-output path).
    pub fn capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The provider identifier on events (default: the mapping's, `openai`,
    /// `anthropic` or `gemini`).
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// The prompt-fallback directive for models without native structured output;
    /// `{schema}` is replaced by the canonical schema JSON (default
    /// [`DEFAULT_FALLBACK_DIRECTIVE`]).
    pub fn fallback_directive(mut self, template: impl Into<String>) -> Self {
        self.fallback_directive = template.into();
        self
    }
}

impl<P> std::fmt::Debug for ProviderBuilder<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderBuilder")
            .field("provider_name", &self.provider_name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("transport", &self.transport)
            .field("capabilities", &self.capabilities)
            .field("anthropic_version", &self.anthropic_version)
            .finish_non_exhaustive()
    }
}
