//! Resilience beyond the spec: opt-in extensions, each proposed under
//! `spec/extensions/` and pinned by its own conformance fixtures. Switched off (the
//! default), every crate behaves exactly as the pinned specification says.
//!
//! | extension | here |
//! |---|---|
//! | 0001 attempt accounting | [`UsageAggregator`] (final vs billed usage per logical call) |
//! | 0002 `Retry-After` | [`HonorRetryAfter`] (capped; fails fast above the cap: `retry_after_exceeded`) |
//! | 0003 retry budget | [`openarmature_pipeline::retry::TokenBucket`] on both lanes' `RetryConfig::budget`, shared per [`Endpoint`] (`retry_budget_exhausted`) |
//! | 0004 circuit breaker | [`CircuitBreaker`] per [`Endpoint`], applied by [`ResilientProvider`] (`provider_circuit_open`) |
//! | 0005 provider classification | [`ProviderClassifier`] |
//!
//! # Putting it together
//!
//! ```text
//! EndpointRegistry ──get(key)──▶ Arc<Endpoint { breaker, budget }>   one per provider endpoint, all invocations
//! ResilientProvider::new(provider, endpoint)                          breaker on every attempt; budget on the call lane
//! RetryMiddleware::new(RetryConfig::default().budget(endpoint.retry_budget()?))   the node lane spends from the same budget
//! FailureIsolationMiddleware (outer)                                  degrades at once on provider_circuit_open
//! ```

pub mod accounting;
pub mod breaker;
mod classify;
mod endpoint;
mod guarded;
pub(crate) mod hooks;
mod retry_after;

pub use accounting::UsageAggregator;
pub use breaker::{BreakerPolicy, BreakerState, BreakerStore, CircuitBreaker, Transition};
pub use classify::{ProviderClassifier, ProviderFamily};
pub use endpoint::{Endpoint, EndpointRegistry};
pub use guarded::ResilientProvider;
pub use retry_after::{requested_wait, HonorRetryAfter};
