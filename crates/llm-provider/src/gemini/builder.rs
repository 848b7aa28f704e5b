//! Spec: llm-provider §8.3 — building a [`GeminiProvider`]: endpoint, credentials,
//! transport options and the bound model's capabilities.

use super::GeminiProvider;
use crate::error::LlmError;
use crate::http::{self, ClientOptions};
use crate::openai::{DEFAULT_FALLBACK_DIRECTIVE, DEFAULT_MAX_RESPONSE_BYTES};
use crate::provider::ModelCapabilities;

/// The hosted Gemini API, version included.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Builds a [`GeminiProvider`].
#[derive(Clone)]
pub struct GeminiBuilder {
    base_url: String,
    model: String,
    api_key: Option<String>,
    http: ClientOptions,
    max_response_bytes: usize,
    capabilities: ModelCapabilities,
    provider_name: String,
    fallback_directive: String,
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

    crate::http::transport_options!();

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

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL, the
    /// model is empty, or the HTTP client cannot be built.
    pub fn build(self) -> Result<GeminiProvider, LlmError> {
        let mut url = http::parse_base_url(&self.base_url)?;
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
                LlmError::invalid_request(format!(
                    "base URL `{}` cannot take a path",
                    self.base_url
                ))
            })?;
            segments.pop_if_empty().extend(["models", model.as_str()]);
        }
        let model_url = url.to_string();
        let client = self.http.build()?;
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

impl std::fmt::Debug for GeminiBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiBuilder")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.http.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
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
            http: ClientOptions::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            capabilities: ModelCapabilities::default(),
            provider_name: "gemini".into(),
            fallback_directive: DEFAULT_FALLBACK_DIRECTIVE.into(),
        }
    }
}
