//! Spec: llm-provider §5 *Provider streaming support* and the 060 fixture header — the
//! synthetic `mapping: streaming_unsupported_stub`.
//!
//! A wire mapping that serves atomic `complete()` calls but declares no streaming: the
//! OpenAI-compatible mapping behind the `Provider` trait with only `send` and `ready`
//! implemented, so `supports_streaming` / `send_stream` keep their defaults (a streamed
//! call is rejected pre-send with `provider_invalid_request`, nothing is sent).

use futures::future::BoxFuture;
use openarmature_llm::{LlmError, OpenAiProvider, Provider, Response, WireRequest};

/// The streaming-unsupported stand-in mapping.
pub(crate) struct StreamingUnsupportedStub(OpenAiProvider);

impl StreamingUnsupportedStub {
    /// Wraps the atomic transport of `inner`.
    pub(crate) fn new(inner: OpenAiProvider) -> Self {
        StreamingUnsupportedStub(inner)
    }
}

impl Provider for StreamingUnsupportedStub {
    fn model(&self) -> &str {
        self.0.model()
    }

    fn provider_name(&self) -> &str {
        "streaming_unsupported_stub"
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        self.0.ready()
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.0.send(request)
    }
}
