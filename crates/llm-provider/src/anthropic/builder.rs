//! Spec: llm-provider §8.2 — the [`AnthropicBuilder`]: endpoint, credentials,
//! version header, transport options and model capabilities.

use crate::error::LlmError;
use crate::http::{self, ClientOptions};
use crate::provider::ModelCapabilities;

use super::{AnthropicProvider, DEFAULT_ANTHROPIC_VERSION, DEFAULT_BASE_URL};
use crate::openai::{DEFAULT_FALLBACK_DIRECTIVE, DEFAULT_MAX_RESPONSE_BYTES};

/// Builds an [`AnthropicProvider`].
#[derive(Clone)]
pub struct AnthropicBuilder {
    base_url: String,
    model: String,
    api_key: Option<String>,
    version: String,
    http: ClientOptions,
    max_response_bytes: usize,
    capabilities: ModelCapabilities,
    provider_name: String,
    fallback_directive: String,
}

impl AnthropicBuilder {
    /// The API base URL, version prefix included (default [`DEFAULT_BASE_URL`]).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sends `x-api-key: <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The `anthropic-version` header (default [`DEFAULT_ANTHROPIC_VERSION`]).
    pub fn anthropic_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    crate::http::transport_options!();

    /// What the bound model supports (`supports_native_response_format` selects the
    /// native `output_config` structured-output path).
    pub fn capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The provider identifier on events (default `anthropic`).
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// The prompt-fallback directive; `{schema}` is replaced by the canonical schema
    /// JSON (default [`DEFAULT_FALLBACK_DIRECTIVE`]).
    pub fn fallback_directive(mut self, template: impl Into<String>) -> Self {
        self.fallback_directive = template.into();
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL or the
    /// HTTP client cannot be built.
    pub fn build(self) -> Result<AnthropicProvider, LlmError> {
        let base = http::base_url(&self.base_url)?;
        let model_segment: String = self
            .model
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect();
        Ok(AnthropicProvider {
            client: self.http.build()?,
            messages_url: format!("{base}/messages"),
            model_url: format!("{base}/models/{model_segment}"),
            model: self.model,
            api_key: self.api_key,
            version: self.version,
            max_response_bytes: self.max_response_bytes,
            capabilities: self.capabilities,
            provider_name: self.provider_name,
            fallback_directive: self.fallback_directive,
        })
    }
}

impl std::fmt::Debug for AnthropicBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicBuilder")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("version", &self.version)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A builder for a provider bound to `model` on the hosted API.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder {
            base_url: DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            version: DEFAULT_ANTHROPIC_VERSION.into(),
            http: ClientOptions::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            capabilities: ModelCapabilities::default(),
            provider_name: "anthropic".into(),
            fallback_directive: DEFAULT_FALLBACK_DIRECTIVE.into(),
        }
    }
}
