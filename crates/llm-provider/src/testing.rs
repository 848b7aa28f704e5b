//! A [`Provider`] that answers from a script or a closure instead of a server, for
//! testing pipelines and agents without a model (feature `testing`).
//!
//! It records every wire attempt it receives ([`ScriptedProvider::requests`]), so a
//! test can assert what the code under test sent: the messages, the tool names, the
//! config and the stream flag. `complete()`, the call-level retry lane, the typed
//! events and the observers run exactly as they do over a real provider.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use crate::config::RuntimeConfig;
use crate::error::LlmError;
use crate::message::{AssistantMessage, Message};
use crate::provider::{Provider, WireRequest};
use crate::response::Response;
use crate::stream::{DeltaKind, DeltaSink};

/// What answers one wire attempt.
type Answer = Box<dyn Fn() -> BoxFuture<'static, Result<Response, LlmError>> + Send + Sync>;

/// One wire attempt a [`ScriptedProvider`] received, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The message list sent.
    pub messages: Vec<Message>,
    /// The names of the tools offered, in order.
    pub tools: Vec<String>,
    /// The effective runtime config.
    pub config: RuntimeConfig,
    /// Whether the attempt streamed.
    pub stream: bool,
}

/// A provider (provider name `test`, model `m` unless renamed) whose wire attempts a
/// script or a closure answers.
///
/// ```
/// use openarmature_llm::testing::ScriptedProvider;
/// use openarmature_llm::{AssistantMessage, CompletionRequest, LlmError, Message, Provider};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let llm = ScriptedProvider::replying([AssistantMessage::from_text("hello")]);
/// let reply = llm.complete(&CompletionRequest::new(vec![Message::user("hi")])).await?;
/// assert_eq!(reply.message.text().as_deref(), Some("hello"));
/// assert_eq!(llm.requests()[0].messages, vec![Message::user("hi")]);
/// # Ok::<(), LlmError>(())
/// # }).unwrap();
/// ```
pub struct ScriptedProvider {
    names: (Arc<str>, Arc<str>),
    answer: Answer,
    streaming: bool,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl ScriptedProvider {
    /// Answers from `script`, one entry per wire attempt; once it is exhausted every
    /// attempt fails `provider_invalid_response` ("script exhausted").
    pub fn new(script: impl IntoIterator<Item = Result<Response, LlmError>>) -> Self {
        let script = Mutex::new(script.into_iter().collect::<VecDeque<_>>());
        Self::answering(move || {
            let next = script
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            let answer =
                next.unwrap_or_else(|| Err(LlmError::invalid_response("script exhausted")));
            Box::pin(std::future::ready(answer))
        })
    }

    /// Answers with `replies`, one per wire attempt, each a [`Response::of`] (finish
    /// reason `tool_calls` when the reply calls tools, else `stop`).
    pub fn replying(replies: impl IntoIterator<Item = AssistantMessage>) -> Self {
        Self::new(replies.into_iter().map(|m| Ok(Response::of(m))))
    }

    /// Answers every wire attempt with what `answer` returns (it may wait, fail, or
    /// count).
    pub fn answering(
        answer: impl Fn() -> BoxFuture<'static, Result<Response, LlmError>> + Send + Sync + 'static,
    ) -> Self {
        ScriptedProvider {
            names: (Arc::from("test"), Arc::from("m")),
            answer: Box::new(answer),
            streaming: false,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Reports `provider` as its provider name and `model` as its model.
    #[must_use]
    pub fn named(mut self, provider: &str, model: &str) -> Self {
        self.names = (Arc::from(provider), Arc::from(model));
        self
    }

    /// Whether it supports streaming (default `false`: a streamed call fails
    /// `provider_invalid_request` before sending, as for a mapping without streaming).
    /// A streamed attempt reports the answer's text as one content delta.
    #[must_use]
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// The wire attempts received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.recorded().clone()
    }

    /// How many wire attempts it received.
    pub fn sends(&self) -> usize {
        self.recorded().len()
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, Vec<RecordedRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, request: &WireRequest<'_>) {
        self.recorded().push(RecordedRequest {
            messages: request.messages.to_vec(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            config: request.config.clone(),
            stream: request.stream,
        });
    }
}

impl Provider for ScriptedProvider {
    fn model(&self) -> &str {
        &self.names.1
    }

    fn provider_name(&self) -> &str {
        &self.names.0
    }

    fn event_names(&self) -> (Arc<str>, Arc<str>) {
        self.names.clone()
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.record(&request);
        (self.answer)()
    }

    fn supports_streaming(&self) -> bool {
        self.streaming
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        if !self.streaming {
            let error = crate::stream::streaming_unsupported(self.provider_name());
            return Box::pin(std::future::ready(Err(error)));
        }
        self.record(&request);
        let answer = (self.answer)();
        Box::pin(async move {
            let response = answer.await?;
            if let Some(text) = response.message.text() {
                sink.on_delta(DeltaKind::Content, &text);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;

    use super::*;
    use crate::provider::CompletionRequest;
    use crate::{ErrorCategory, FinishReason, Tool};

    fn ask(text: &str) -> CompletionRequest {
        CompletionRequest::new(vec![Message::user(text)])
    }

    #[tokio::test]
    async fn answers_in_order_then_fails_invalid_response() {
        let p = ScriptedProvider::replying([
            AssistantMessage::from_text("one"),
            AssistantMessage::from_text("two"),
        ]);
        for expected in ["one", "two"] {
            let r = p.complete(&ask("q")).await.unwrap();
            assert_eq!(r.message.text().as_deref(), Some(expected));
            assert_eq!(r.finish_reason, FinishReason::Stop);
        }
        let e = p.complete(&ask("q")).await.unwrap_err();
        assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
        assert!(e.to_string().contains("script exhausted"), "{e}");
        assert_eq!(p.sends(), 3);
    }

    #[tokio::test]
    async fn records_what_each_attempt_sent() {
        let p = ScriptedProvider::new([Ok(Response::of(AssistantMessage::from_text("ok")))])
            .named("vendor", "model-x");
        let tool = Tool::new("lookup", "Looks up", serde_json::json!({"type": "object"}));
        p.complete(&ask("hello").tools(vec![tool])).await.unwrap();
        let seen = p.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].messages, vec![Message::user("hello")]);
        assert_eq!(seen[0].tools, vec!["lookup".to_owned()]);
        assert!(!seen[0].stream);
        assert_eq!((p.provider_name(), p.model()), ("vendor", "model-x"));
    }

    #[tokio::test]
    async fn a_streaming_double_reports_the_text_as_one_delta() {
        let p =
            ScriptedProvider::replying([AssistantMessage::from_text("streamed")]).streaming(true);
        let deltas = Mutex::new(Vec::new());
        let sink =
            |kind: DeltaKind, text: &str| deltas.lock().unwrap().push((kind, text.to_owned()));
        let request = ask("q").stream(true);
        let messages = request.messages.clone();
        let config = RuntimeConfig::default();
        let wire = WireRequest::of(&request, &messages, &config);
        let r = p.send_stream(wire, &sink).await.unwrap();
        assert_eq!(r.message.text().as_deref(), Some("streamed"));
        assert_eq!(
            deltas.into_inner().unwrap(),
            vec![(DeltaKind::Content, "streamed".to_owned())]
        );
        assert!(p.requests()[0].stream);
    }

    #[tokio::test]
    async fn without_streaming_a_streamed_call_is_refused_before_sending() {
        let p = ScriptedProvider::replying([AssistantMessage::from_text("x")]);
        let e = p.complete(&ask("q").stream(true)).await.unwrap_err();
        assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
        assert_eq!(p.sends(), 0);
    }

    #[tokio::test]
    async fn a_tool_call_reply_finishes_tool_calls() {
        let call = crate::ToolCall::new("c1", "lookup", serde_json::Map::new());
        let reply = AssistantMessage {
            content: None,
            tool_calls: vec![call],
        };
        assert_eq!(Response::of(reply).finish_reason, FinishReason::ToolCalls);
    }
}
