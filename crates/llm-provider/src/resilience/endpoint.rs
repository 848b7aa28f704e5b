//! One provider endpoint's shared resilience state — its [`CircuitBreaker`] and its
//! retry budget — and a registry that hands out one per endpoint key, so every
//! invocation (and both retry lanes) share them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use openarmature_pipeline::retry::{RetryBudget, Sleeper};

use super::breaker::{CircuitBreaker, SkipWhileOpen};

/// A provider endpoint's breaker and budget (either may be absent: off).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use openarmature_llm::resilience::{BreakerPolicy, CircuitBreaker, Endpoint};
/// use openarmature_pipeline::retry::{RetryConfig, TokenBucket, TokenBucketConfig};
/// let endpoint = Arc::new(
///     Endpoint::new("openai https://api.openai.com/v1")
///         .breaker(CircuitBreaker::new("openai https://api.openai.com/v1", BreakerPolicy::default()))
///         .budget(Arc::new(TokenBucket::new(TokenBucketConfig::default()))),
/// );
/// // The node-level lane spends from the same budget:
/// let node_retry = RetryConfig::default().budget(endpoint.retry_budget().unwrap());
/// # let _ = node_retry;
/// ```
pub struct Endpoint {
    key: String,
    breaker: Option<CircuitBreaker>,
    budget: Option<Arc<dyn RetryBudget>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("key", &self.key)
            .field("breaker", &self.breaker)
            .field("budget", &self.budget.is_some())
            .finish()
    }
}

impl Endpoint {
    /// An endpoint with neither extension on.
    pub fn new(key: impl Into<String>) -> Self {
        Endpoint {
            key: key.into(),
            breaker: None,
            budget: None,
        }
    }

    /// Guards calls with `breaker`.
    pub fn breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Spends call-level retries from (and deposits first attempts into) `budget`.
    pub fn budget(mut self, budget: Arc<dyn RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The breaker, if on.
    pub fn circuit_breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// The budget, if on (give it to node-level `RetryConfig::budget` too).
    pub fn retry_budget(&self) -> Option<Arc<dyn RetryBudget>> {
        self.budget.clone()
    }

    /// `inner`, skipped while this endpoint's breaker is open past the delay (a
    /// retry then would be refused anyway): for the node-level
    /// `RetryConfig::sleeper` (the call-level lane gets it from
    /// [`super::ResilientProvider`]).
    pub fn sleeper(self: &Arc<Self>, inner: Arc<dyn Sleeper>) -> SkipWhileOpen {
        let endpoint = Arc::clone(self);
        SkipWhileOpen::new(inner, move || {
            endpoint
                .circuit_breaker()
                .and_then(CircuitBreaker::open_for)
        })
    }
}

type Factory = Box<dyn Fn(&str) -> Endpoint + Send + Sync>;

/// Hands out one shared [`Endpoint`] per key, built on first use.
pub struct EndpointRegistry {
    make: Factory,
    endpoints: Mutex<HashMap<String, Arc<Endpoint>>>,
}

impl std::fmt::Debug for EndpointRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        f.debug_struct("EndpointRegistry")
            .field("endpoints", &keys)
            .finish_non_exhaustive()
    }
}

impl EndpointRegistry {
    /// A registry building endpoints with `make(key)`.
    pub fn new(make: impl Fn(&str) -> Endpoint + Send + Sync + 'static) -> Self {
        EndpointRegistry {
            make: Box::new(make),
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    /// The endpoint for `key` (the same `Arc` on every call).
    pub fn get(&self, key: &str) -> Arc<Endpoint> {
        let mut map = self
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            map.entry(key.to_owned())
                .or_insert_with(|| Arc::new((self.make)(key))),
        )
    }
}
