//! [`SkipWhileOpen`]: a retry sleeper that does not wait for a retry the breaker
//! will refuse anyway.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_pipeline::retry::Sleeper;

/// Wraps a retry lane's sleeper: when the breaker is open for longer than the
/// backoff delay, the retry would be refused with `provider_circuit_open`, so the
/// sleep is skipped and the refusal comes at once. Otherwise it sleeps as `inner`.
/// [`crate::resilience::ResilientProvider`] applies it to the call-level lane; give
/// it to the node-level `RetryConfig::sleeper` too.
pub struct SkipWhileOpen {
    inner: Arc<dyn Sleeper>,
    breaker: Arc<dyn Fn() -> Option<Duration> + Send + Sync>,
}

impl std::fmt::Debug for SkipWhileOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipWhileOpen").finish_non_exhaustive()
    }
}

impl SkipWhileOpen {
    /// `inner`, skipped while `open_for()` (e.g. [`super::CircuitBreaker::open_for`]; see
    /// [`crate::resilience::Endpoint::sleeper`])
    /// exceeds the delay.
    pub fn new(
        inner: Arc<dyn Sleeper>,
        open_for: impl Fn() -> Option<Duration> + Send + Sync + 'static,
    ) -> Self {
        SkipWhileOpen {
            inner,
            breaker: Arc::new(open_for),
        }
    }
}

impl Sleeper for SkipWhileOpen {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        if (self.breaker)().is_some_and(|open| open > duration) {
            return Box::pin(std::future::ready(()));
        }
        self.inner.sleep(duration)
    }
}
