//! Spec: llm-provider §8.2 — the [`AnthropicBuilder`]: the shared
//! [`ProviderBuilder`] setters plus the `anthropic-version` header.

use crate::builder::ProviderBuilder;
use crate::error::LlmError;
use crate::wire_client::{Endpoint, KeyHeader, WireClient};

use super::{AnthropicProvider, DEFAULT_ANTHROPIC_VERSION, DEFAULT_BASE_URL};

/// Builds an [`AnthropicProvider`]: the shared [`ProviderBuilder`] setters (base URL
/// default [`DEFAULT_BASE_URL`], key sent as `x-api-key`, transport, capabilities,
/// provider name, fallback directive) and [`ProviderBuilder::anthropic_version`].
pub type AnthropicBuilder = ProviderBuilder<AnthropicProvider>;

impl ProviderBuilder<AnthropicProvider> {
    /// The `anthropic-version` header (default [`DEFAULT_ANTHROPIC_VERSION`]).
    pub fn anthropic_version(mut self, version: impl Into<String>) -> Self {
        self.anthropic_version = Some(version.into());
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` when the base URL is not an `http(s)` URL or the
    /// HTTP client cannot be built.
    pub fn build(self) -> Result<AnthropicProvider, LlmError> {
        let base = openarmature_http::base_url(&self.base_url)?;
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
        let version = self
            .anthropic_version
            .unwrap_or_else(|| DEFAULT_ANTHROPIC_VERSION.into());
        Ok(AnthropicProvider {
            client: WireClient::new(
                self.transport,
                self.api_key,
                KeyHeader::Named("x-api-key"),
                vec![("anthropic-version", version)],
            )?,
            messages_url: Endpoint::new(&format!("{base}/messages"))?,
            model_url: Endpoint::new(&format!("{base}/models/{model_segment}"))?,
            model: self.model.into(),
            capabilities: self.capabilities,
            streaming: self.stream_extension,
            provider_name: self.provider_name.into(),
            fallback_directive: self.fallback_directive,
        })
    }
}

impl AnthropicProvider {
    /// A builder for a provider bound to `model` on the hosted API.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        ProviderBuilder::new(DEFAULT_BASE_URL, model, "anthropic")
    }
}
