//! Spec: llm-provider §8 and the 033 fixture header — the `mapping:` directive:
//! which §8.x wire mapping a case's provider speaks (absent: §8.1 OpenAI).
//!
//! Everything mapping-specific the runner needs lives here: the provider it builds
//! against the mock, the path its requests must hit, the default bound model
//! (FIXTURE-QUIRKS Q3), whether the model travels in the path (register L5) and
//! where the declared `stop_sequences` land on the wire. Besides the real §8.x
//! mappings it knows 060's synthetic `streaming_unsupported_stub` (register L4).

use std::sync::Arc;

use openarmature_llm::{
    AnthropicProvider, GeminiProvider, ModelCapabilities, OpenAiProvider, Provider, ProviderBuilder,
};
use serde_json::Value;

use super::stub::StreamingUnsupportedStub;
use crate::failure::{Check, Failure};
use crate::http_mock::MockServer;

/// A §8.x wire mapping the adapter can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// §8.1 OpenAI-compatible Chat Completions (the default).
    OpenAi,
    /// §8.2 Anthropic Messages.
    Anthropic,
    /// §8.3 Google Gemini `generateContent` (register L5).
    Gemini,
    /// The 060 fixture's synthetic mapping without streaming: the §8.1 wire behind
    /// the `Provider` trait's non-streaming defaults ([`StreamingUnsupportedStub`]).
    StreamingUnsupportedStub,
}

impl Mapping {
    /// The mapping a `mapping:` value names; one without a provider here is refused
    /// (register L4).
    pub(crate) fn from_name(name: &str) -> Check<Mapping> {
        match name {
            "openai" => Ok(Mapping::OpenAi),
            "anthropic" => Ok(Mapping::Anthropic),
            "gemini" => Ok(Mapping::Gemini),
            "streaming_unsupported_stub" => Ok(Mapping::StreamingUnsupportedStub),
            other => Err(Failure::unsupported(format!(
                "harness_primitive_missing: mapping `{other}` is not implemented"
            ))),
        }
    }

    /// The bound model when the case names none (FIXTURE-QUIRKS Q3).
    pub(crate) fn default_model(self) -> &'static str {
        match self {
            Mapping::OpenAi | Mapping::StreamingUnsupportedStub => "test-model",
            Mapping::Anthropic => "claude-test",
            Mapping::Gemini => "gemini-test",
        }
    }

    /// Where completions are posted (Gemini names the bound model in the path, and
    /// streams on its own endpoint under extension 0006).
    pub(crate) fn wire_path(self, model: &str, streamed: bool) -> String {
        match self {
            Mapping::OpenAi | Mapping::StreamingUnsupportedStub => {
                "/v1/chat/completions".to_owned()
            }
            Mapping::Anthropic => "/v1/messages".to_owned(),
            Mapping::Gemini if streamed => {
                format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
            }
            Mapping::Gemini => format!("/v1beta/models/{model}:generateContent"),
        }
    }

    /// The bound model travels in the URL path, not the body (register L5).
    pub(crate) fn model_in_path(self) -> bool {
        self == Mapping::Gemini
    }

    /// The wire key realizing the declared `stop_sequences` (also the colliding
    /// `extras` key).
    pub(crate) fn stop_key(self) -> &'static str {
        match self {
            Mapping::OpenAi | Mapping::StreamingUnsupportedStub => "stop",
            Mapping::Anthropic => "stop_sequences",
            Mapping::Gemini => "stopSequences",
        }
    }

    /// The object holding the stop list: the body root, or §8.3's
    /// `generationConfig`.
    pub(crate) fn stop_holder(self, body: &Value) -> Option<&Value> {
        match self {
            Mapping::OpenAi | Mapping::StreamingUnsupportedStub | Mapping::Anthropic => Some(body),
            Mapping::Gemini => body.get("generationConfig"),
        }
    }

    /// Only §8.1's `stop` takes a scalar string (coerced to a one-element list);
    /// the other mappings' stop fields are array-only.
    pub(crate) fn coerces_scalar_stop(self) -> bool {
        matches!(self, Mapping::OpenAi | Mapping::StreamingUnsupportedStub)
    }

    /// The real provider for this mapping, pointed at the mock (`stream_extension`:
    /// extension 0006 on, for the Anthropic and Gemini mappings).
    pub(crate) fn provider(
        self,
        server: &MockServer,
        model: &str,
        capabilities: ModelCapabilities,
        stream_extension: bool,
    ) -> Check<Arc<dyn Provider>> {
        let openai = || {
            OpenAiProvider::builder(server.base_url(), model)
                .api_key("test-key")
                .transport(crate::http_mock::transport())
                .capabilities(capabilities)
                .build()
        };
        let built: Result<Arc<dyn Provider>, _> = match self {
            Mapping::OpenAi => openai().map(|p| Arc::new(p) as Arc<dyn Provider>),
            Mapping::StreamingUnsupportedStub => {
                openai().map(|p| Arc::new(StreamingUnsupportedStub::new(p)) as Arc<dyn Provider>)
            }
            Mapping::Anthropic => {
                let builder = AnthropicProvider::builder(model).base_url(server.base_url());
                pointed(builder, capabilities, stream_extension)
                    .build()
                    .map(|p| Arc::new(p) as Arc<dyn Provider>)
            }
            Mapping::Gemini => {
                let base_url = format!("{}/v1beta", server.origin());
                let builder = GeminiProvider::builder(model).base_url(base_url);
                pointed(builder, capabilities, stream_extension)
                    .build()
                    .map(|p| Arc::new(p) as Arc<dyn Provider>)
            }
        };
        built.map_err(|e| Failure::setup(format!("cannot build the provider: {e}")))
    }
}

/// The mock's key, transport, capabilities and extension-0006 flag on a wire builder.
fn pointed<P>(
    builder: ProviderBuilder<P>,
    capabilities: ModelCapabilities,
    stream_extension: bool,
) -> ProviderBuilder<P> {
    builder
        .api_key("test-key")
        .transport(crate::http_mock::transport())
        .capabilities(capabilities)
        .stream_extension(stream_extension)
}
