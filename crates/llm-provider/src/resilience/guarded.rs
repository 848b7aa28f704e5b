//! [`ResilientProvider`]: any [`Provider`] behind its endpoint's circuit breaker and
//! retry budget (extensions 0003 and 0004).

use std::sync::Arc;

use futures::channel::mpsc::UnboundedSender;
use futures::future::BoxFuture;
use openarmature_graph::{ExtensionEvent, NodeCtx, ObserverEvent};
use serde_json::{Map, Value};

use super::breaker::{CircuitBreaker, Transition, STATE_CHANGE_EVENT};
use super::endpoint::Endpoint;
use crate::error::LlmError;
use crate::provider::{CompletionRequest, Provider, WireRequest};
use crate::response::Response;
use crate::retry::LlmRetryConfig;
use crate::stream::{DeltaSink, ResponseStream, StreamEvent};

/// Wraps a provider with its [`Endpoint`]'s breaker and budget.
///
/// - Every wire attempt asks the breaker first; while open it fails at once with
///   `provider_circuit_open` (non-transient: no retry, no sleep). Outcomes are
///   recorded; transitions are dispatched as `openarmature.circuit_breaker.state_change`
///   [`ExtensionEvent`]s on the calling node's queue (attributes `endpoint`, `from`,
///   `to`, `reason`) and reported to the breaker's listeners. Refused attempts also
///   show as LLM attempt events (and spans) with that error category.
/// - `complete()` gives the call-level retry lane the endpoint's budget when the
///   request's retry config has none (and a one-attempt config to a request without
///   one, so its first attempt is counted), and with a breaker a sleeper that skips
///   the wait before a retry the open breaker would refuse
///   ([`super::breaker::SkipWhileOpen`]). `send()` stays one attempt.
///
/// # Examples
/// ```no_run
/// use std::sync::Arc;
/// use openarmature_llm::resilience::{BreakerPolicy, CircuitBreaker, Endpoint, ResilientProvider};
/// use openarmature_llm::OpenAiProvider;
/// # fn demo() -> Result<(), openarmature_llm::LlmError> {
/// let key = "openai http://localhost:8000/v1";
/// let endpoint = Arc::new(Endpoint::new(key).breaker(CircuitBreaker::new(key, BreakerPolicy::default())));
/// let inner = OpenAiProvider::builder("http://localhost:8000/v1", "my-model").build()?;
/// let provider = ResilientProvider::new(inner, endpoint);
/// # let _ = provider; Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ResilientProvider<P> {
    inner: P,
    endpoint: Arc<Endpoint>,
}

impl<P: Provider> ResilientProvider<P> {
    /// Wraps `inner` with `endpoint`'s breaker and budget.
    pub fn new(inner: P, endpoint: Arc<Endpoint>) -> Self {
        ResilientProvider { inner, endpoint }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// One wire attempt, `send` (plain or streamed), behind the breaker: started only
    /// once the breaker admits it, its outcome recorded.
    async fn guarded<'a>(
        &self,
        ctx: Option<&NodeCtx>,
        send: impl FnOnce() -> BoxFuture<'a, Result<Response, LlmError>>,
    ) -> Result<Response, LlmError> {
        let Some(breaker) = self.endpoint.circuit_breaker() else {
            return send().await;
        };
        let (permit, t) = breaker.acquire().await;
        dispatch(ctx, breaker, t);
        let permit = permit?;
        let result = send().await;
        let t = permit.finish(result.as_ref().map(|_| ())).await;
        dispatch(ctx, breaker, t);
        result
    }

    /// The call-level loop over `request` with the endpoint's budget and breaker
    /// ([`Self::prepared`], [`Scoped`]); `stream` and `caller` as [`crate::call::run`].
    async fn run(
        &self,
        request: &CompletionRequest,
        stream: bool,
        caller: Option<&UnboundedSender<StreamEvent>>,
    ) -> Result<Response, LlmError> {
        let owned = self.prepared(request);
        let request = owned.as_ref().unwrap_or(request);
        let scoped = Scoped {
            provider: self,
            ctx: request.node.clone(),
        };
        crate::call::run(&scoped, request, stream, caller).await
    }

    /// The request with the endpoint's budget (and, with a breaker, a sleeper that
    /// skips waits for refused retries) on its call-level retry config, when it
    /// needs them.
    fn prepared(&self, request: &CompletionRequest) -> Option<CompletionRequest> {
        let budget = self.endpoint.retry_budget();
        let needs_budget = budget.is_some()
            && request
                .retry
                .as_ref()
                .is_none_or(|r| r.base.budget.is_none());
        let needs_sleeper = self.endpoint.circuit_breaker().is_some()
            && request.retry.as_ref().is_some_and(|r| r.max_attempts() > 1);
        if !needs_budget && !needs_sleeper {
            return None;
        }
        let mut request = request.clone();
        let mut retry = request.retry.take().unwrap_or_else(|| {
            LlmRetryConfig::from(openarmature_pipeline::RetryConfig::default().max_attempts(1))
        });
        if needs_budget {
            retry.base.budget = budget;
        }
        if needs_sleeper {
            let inner = Arc::clone(&retry.base.sleeper);
            retry.base.sleeper = Arc::new(Endpoint::sleeper(&self.endpoint, inner));
        }
        request.retry = Some(retry);
        Some(request)
    }
}

fn dispatch(ctx: Option<&NodeCtx>, breaker: &CircuitBreaker, t: Option<Transition>) {
    let (Some(ctx), Some(t)) = (ctx, t) else {
        return;
    };
    let mut attributes = Map::new();
    attributes.insert("endpoint".into(), Value::from(breaker.endpoint()));
    attributes.insert("from".into(), Value::from(t.from.as_str()));
    attributes.insert("to".into(), Value::from(t.to.as_str()));
    attributes.insert("reason".into(), Value::from(t.reason));
    ctx.dispatch_event(ObserverEvent::Extension(ExtensionEvent::new(
        ctx,
        STATE_CHANGE_EVENT,
        attributes,
    )));
}

/// The provider as seen by one `complete()` call: sends know the calling node.
struct Scoped<'p, P> {
    provider: &'p ResilientProvider<P>,
    ctx: Option<NodeCtx>,
}

impl<P: Provider> Provider for Scoped<'_, P> {
    fn model(&self) -> &str {
        self.provider.inner.model()
    }

    fn provider_name(&self) -> &str {
        self.provider.inner.provider_name()
    }

    fn event_names(&self) -> (std::sync::Arc<str>, std::sync::Arc<str>) {
        self.provider.inner.event_names()
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        self.provider.inner.ready()
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        let inner = &self.provider.inner;
        Box::pin(
            self.provider
                .guarded(self.ctx.as_ref(), move || inner.send(request)),
        )
    }

    fn supports_streaming(&self) -> bool {
        self.provider.inner.supports_streaming()
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        let inner = &self.provider.inner;
        Box::pin(
            self.provider
                .guarded(self.ctx.as_ref(), move || inner.send_stream(request, sink)),
        )
    }
}

impl<P: Provider> Provider for ResilientProvider<P> {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn event_names(&self) -> (std::sync::Arc<str>, std::sync::Arc<str>) {
        self.inner.event_names()
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        self.inner.ready()
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.guarded(None, move || self.inner.send(request)))
    }

    fn supports_streaming(&self) -> bool {
        self.inner.supports_streaming()
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.guarded(None, move || self.inner.send_stream(request, sink)))
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(self.run(request, request.stream, None))
    }

    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ResponseStream<'a> {
        ResponseStream::start_with(move |sender| {
            Box::pin(async move { self.run(request, true, Some(&sender)).await })
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use futures::StreamExt;

    use super::*;
    use crate::error::ErrorCategory;
    use crate::message::{AssistantMessage, Message};
    use crate::resilience::breaker::BreakerPolicy;
    use crate::testing::ScriptedProvider;

    /// A streaming provider behind a breaker that opens on the first failure.
    fn resilient(script: Vec<Result<Response, LlmError>>) -> ResilientProvider<ScriptedProvider> {
        let inner = ScriptedProvider::new(script).streaming(true);
        let policy = BreakerPolicy {
            consecutive_failures: 1,
            ..BreakerPolicy::default()
        };
        let endpoint =
            Arc::new(Endpoint::new("scripted").breaker(CircuitBreaker::new("scripted", policy)));
        ResilientProvider::new(inner, endpoint)
    }

    fn ok(text: &str) -> Result<Response, LlmError> {
        Ok(Response::of(AssistantMessage::from_text(text)))
    }

    fn ask() -> CompletionRequest {
        CompletionRequest::new(vec![Message::user("hi")])
    }

    #[tokio::test]
    async fn streamed_calls_reach_the_wrapped_provider() {
        let provider = resilient(vec![ok("hello"), ok("again")]);
        assert!(provider.supports_streaming());
        let response = provider.complete(&ask().stream(true)).await.unwrap();
        assert_eq!(response.message.text().unwrap(), "hello");
        let mut deltas = String::new();
        let request = ask();
        let mut stream = provider.stream(&request);
        while let Some(event) = stream.next().await {
            if let StreamEvent::Delta(delta) = event.unwrap() {
                deltas.push_str(&delta.text);
            }
        }
        drop(stream);
        assert_eq!(deltas, "again");
        let sent = provider.inner().requests();
        assert_eq!(sent.len(), 2);
        assert!(sent.iter().all(|r| r.stream), "both attempts streamed");
    }

    #[tokio::test]
    async fn streamed_attempts_are_behind_the_breaker() {
        let failed = LlmError::new(ErrorCategory::ProviderUnavailable, "down");
        let provider = resilient(vec![Err(failed), ok("never sent")]);
        let first = provider.complete(&ask().stream(true)).await.unwrap_err();
        assert_eq!(first.category(), ErrorCategory::ProviderUnavailable);
        let request = ask();
        let mut stream = provider.stream(&request);
        let refused = loop {
            if let Err(e) = stream.next().await.unwrap() {
                break e;
            }
        };
        assert_eq!(refused.category(), ErrorCategory::ProviderCircuitOpen);
        assert_eq!(provider.inner().sends(), 1, "the open breaker sent nothing");
    }
}
