//! Spec: llm-provider §8 and the 033 fixture header — the `mapping:` directive:
//! which §8.x wire mapping a case's provider speaks (absent: §8.1 OpenAI).
//!
//! Everything mapping-specific the runner needs lives here: the provider it builds
//! against the mock, the path its requests must hit, the default bound model
//! (FIXTURE-QUIRKS Q3) and the wire name of the declared `stop_sequences`.

use std::sync::Arc;
use std::time::Duration;

use openarmature_llm::{AnthropicProvider, ModelCapabilities, OpenAiProvider, Provider};

/// A §8.x wire mapping the adapter can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// §8.1 OpenAI-compatible Chat Completions (the default).
    OpenAi,
    /// §8.2 Anthropic Messages.
    Anthropic,
}

impl Mapping {
    /// The mapping a `mapping:` value names.
    pub(crate) fn from_name(name: &str) -> Result<Mapping, String> {
        match name {
            "openai" => Ok(Mapping::OpenAi),
            "anthropic" => Ok(Mapping::Anthropic),
            other => Err(format!(
                "harness_primitive_missing: mapping `{other}` is not implemented"
            )),
        }
    }

    /// The bound model when the case names none (FIXTURE-QUIRKS Q3).
    pub(crate) fn default_model(self) -> &'static str {
        match self {
            Mapping::OpenAi => "test-model",
            Mapping::Anthropic => "claude-test",
        }
    }

    /// Where completions are posted, under the mock's `/v1` base URL.
    pub(crate) fn wire_path(self) -> &'static str {
        match self {
            Mapping::OpenAi => "/v1/chat/completions",
            Mapping::Anthropic => "/v1/messages",
        }
    }

    /// The wire key realizing the declared `stop_sequences`.
    pub(crate) fn stop_key(self) -> &'static str {
        match self {
            Mapping::OpenAi => "stop",
            Mapping::Anthropic => "stop_sequences",
        }
    }

    /// The real provider for this mapping, pointed at the mock.
    pub(crate) fn provider(
        self,
        base_url: &str,
        model: &str,
        capabilities: ModelCapabilities,
    ) -> Result<Arc<dyn Provider>, String> {
        let built: Result<Arc<dyn Provider>, _> = match self {
            Mapping::OpenAi => OpenAiProvider::builder(base_url, model)
                .api_key("test-key")
                .no_proxy()
                .timeout(Duration::from_secs(20))
                .connect_timeout(Duration::from_secs(5))
                .capabilities(capabilities)
                .build()
                .map(|p| Arc::new(p) as Arc<dyn Provider>),
            Mapping::Anthropic => AnthropicProvider::builder(model)
                .base_url(base_url)
                .api_key("test-key")
                .no_proxy()
                .timeout(Duration::from_secs(20))
                .connect_timeout(Duration::from_secs(5))
                .capabilities(capabilities)
                .build()
                .map(|p| Arc::new(p) as Arc<dyn Provider>),
        };
        built.map_err(|e| format!("cannot build the provider: {e}"))
    }
}
