//! Spec: llm-provider §8.3 — building a [`GeminiProvider`]: the shared
//! [`ProviderBuilder`] setters, the bound model in the URL path.

use super::{GeminiProvider, API_KEY_HEADER};
use crate::builder::ProviderBuilder;
use crate::error::LlmError;
use crate::wire_client::{Endpoint, KeyHeader, WireClient};

/// The hosted Gemini API, version included.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Builds a [`GeminiProvider`]: the shared [`ProviderBuilder`] setters (base URL
/// default [`DEFAULT_BASE_URL`], key sent as `x-goog-api-key`, transport, capabilities,
/// provider name, fallback directive).
pub type GeminiBuilder = ProviderBuilder<GeminiProvider>;

impl ProviderBuilder<GeminiProvider> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL, the
    /// model is empty, or the HTTP client cannot be built.
    pub fn build(self) -> Result<GeminiProvider, LlmError> {
        let mut url = openarmature_http::parse_base_url(&self.base_url)?;
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
        Ok(GeminiProvider {
            client: WireClient::new(
                self.transport,
                self.api_key,
                KeyHeader::Named(API_KEY_HEADER),
                Vec::new(),
            )?,
            generate_url: Endpoint::new(&format!("{model_url}:generateContent"))?,
            stream_url: Endpoint::new(&format!("{model_url}:streamGenerateContent?alt=sse"))?,
            streaming: self.stream_extension,
            model_url: Endpoint::new(&model_url)?,
            model: model.into(),
            capabilities: self.capabilities,
            provider_name: self.provider_name.into(),
            fallback_directive: self.fallback_directive,
        })
    }
}

impl GeminiProvider {
    /// A builder for a provider bound to `model` on the hosted API.
    pub fn builder(model: impl Into<String>) -> GeminiBuilder {
        ProviderBuilder::new(DEFAULT_BASE_URL, model, "gemini")
    }
}
