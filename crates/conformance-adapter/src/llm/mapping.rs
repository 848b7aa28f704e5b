//! Spec: llm-provider §8 (one provider per wire mapping) — the `mapping:` directive
//! of the llm-provider fixtures: which real provider a case drives, and where that
//! mapping sends its requests (register L5).

use std::sync::Arc;
use std::time::Duration;

use openarmature_llm::{GeminiProvider, LlmError, ModelCapabilities, OpenAiProvider, Provider};

use super::mock::MockServer;

/// The §8 wire mapping a case selects (`mapping:`; absent means §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// §8.1 OpenAI-compatible.
    OpenAi,
    /// §8.3 Google Gemini (register L5).
    Gemini,
}

impl Mapping {
    /// Reads a `mapping:` name; one without a provider here is refused (register L4).
    pub(crate) fn parse(name: &str) -> Result<Mapping, String> {
        match name {
            "openai" => Ok(Mapping::OpenAi),
            "gemini" => Ok(Mapping::Gemini),
            other => Err(format!(
                "harness_primitive_missing: mapping `{other}` is not implemented"
            )),
        }
    }

    /// The bound model when the fixture implies none (FIXTURE-QUIRKS Q3).
    pub(crate) fn default_model(self) -> &'static str {
        match self {
            Mapping::OpenAi => "test-model",
            Mapping::Gemini => "gemini-test",
        }
    }

    /// The real provider for this mapping, pointed at the mock.
    pub(crate) fn provider(
        self,
        server: &MockServer,
        model: &str,
        capabilities: ModelCapabilities,
    ) -> Result<Arc<dyn Provider>, LlmError> {
        let (timeout, connect) = (Duration::from_secs(20), Duration::from_secs(5));
        Ok(match self {
            Mapping::OpenAi => Arc::new(
                OpenAiProvider::builder(server.base_url(), model)
                    .api_key("test-key")
                    .no_proxy()
                    .timeout(timeout)
                    .connect_timeout(connect)
                    .capabilities(capabilities)
                    .build()?,
            ),
            Mapping::Gemini => Arc::new(
                GeminiProvider::builder(model)
                    .base_url(format!("{}/v1beta", server.origin()))
                    .api_key("test-key")
                    .no_proxy()
                    .timeout(timeout)
                    .connect_timeout(connect)
                    .capabilities(capabilities)
                    .build()?,
            ),
        })
    }

    /// Where completions are posted.
    pub(crate) fn wire_path(self, model: &str) -> String {
        match self {
            Mapping::OpenAi => "/v1/chat/completions".to_owned(),
            Mapping::Gemini => format!("/v1beta/models/{model}:generateContent"),
        }
    }

    /// The bound model travels in the URL path, not the body (register L5).
    pub(crate) fn model_in_path(self) -> bool {
        self == Mapping::Gemini
    }
}
