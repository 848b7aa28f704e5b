//! [`RateLimitedProvider`]: any [`Provider`] whose every wire attempt first reserves
//! room in a [`RateLimiter`] (one request, the estimated tokens) and reconciles the
//! reservation with the reported usage after.

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_llm::{
    DeltaSink, ErrorCategory, LlmError, Provider, ProviderFailure, Response, WireRequest,
};

use crate::limiter::{RateLimitError, RateLimiter, RATE_LIMIT_EXCEEDED};

/// Wraps a provider with a rate limiter for one provider key. Sits under the
/// call-level retry lane (every attempt is limited, retries included).
///
/// Tokens are estimated before the call as the request's JSON size / 4 plus its
/// `max_tokens` (an upper-bound heuristic, no tokenizer), and reconciled with
/// `usage.total_tokens` (or prompt + completion) afterwards. Over the limit, the
/// limiter's error surfaces as `provider_rate_limit` (transient, with `retry_after`,
/// vendor type `rate_limit_exceeded`): the same handling as the provider's own 429.
#[derive(Debug, Clone)]
pub struct RateLimitedProvider<P> {
    inner: P,
    limiter: Arc<RateLimiter>,
    key: String,
}

impl<P: Provider> RateLimitedProvider<P> {
    /// Wraps `inner`, limiting it as provider key `key`.
    pub fn new(inner: P, limiter: Arc<RateLimiter>, key: impl Into<String>) -> Self {
        RateLimitedProvider {
            inner,
            limiter,
            key: key.into(),
        }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

/// The estimate of `request`'s tokens (input and output).
pub(crate) fn estimate(request: &WireRequest<'_>) -> u64 {
    let input = serde_json::to_string(request.messages).map_or(0, |s| s.len() as u64 / 4);
    input + request.config.max_tokens.unwrap_or(0)
}

fn into_llm(e: RateLimitError) -> LlmError {
    let mut failure = ProviderFailure::new(e.to_string());
    failure.retry_after = e.retry_after;
    failure.error_type = Some(RATE_LIMIT_EXCEEDED.as_str().to_owned());
    let category = if e.category == RATE_LIMIT_EXCEEDED {
        ErrorCategory::ProviderRateLimit
    } else {
        ErrorCategory::ProviderUnavailable
    };
    failure.source = Some(Arc::new(e));
    LlmError::from_failure(category, failure)
}

impl<P: Provider> Provider for RateLimitedProvider<P> {
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
        let tokens = estimate(&request);
        Box::pin(self.limited(tokens, move || self.inner.send(request)))
    }

    fn supports_streaming(&self) -> bool {
        self.inner.supports_streaming()
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        let tokens = estimate(&request);
        Box::pin(self.limited(tokens, move || self.inner.send_stream(request, sink)))
    }
}

impl<P: Provider> RateLimitedProvider<P> {
    /// One wire attempt, `send` (plain or streamed), started once the limiter grants
    /// `tokens`; the reservation is reconciled with the tokens the answer reports.
    async fn limited<'a>(
        &self,
        tokens: u64,
        send: impl FnOnce() -> BoxFuture<'a, Result<Response, LlmError>>,
    ) -> Result<Response, LlmError> {
        let reservation = self
            .limiter
            .acquire(&self.key, tokens)
            .await
            .map_err(into_llm)?;
        let result = send().await;
        let used = result.as_ref().ok().and_then(|r| {
            r.usage.total_tokens.or_else(|| {
                Some(
                    r.usage
                        .prompt_tokens?
                        .saturating_add(r.usage.completion_tokens.unwrap_or(0)),
                )
            })
        });
        if let Some(used) = used {
            reservation.reconcile(used).await;
        }
        result
    }
}
