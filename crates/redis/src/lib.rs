//! # openarmature-redis
//!
//! Spec: extensions 0003 (retry budget) and 0004 (circuit breaker), shared across
//! processes; plus a rate limiter. Every process that points at the same Redis and
//! key prefix shares:
//!
//! - [`RedisRetryBudget`]: the retry budget ([`openarmature_pipeline::retry::RetryBudget`]);
//!   N workers no longer multiply the retry storm the budget exists to stop;
//! - [`RedisBreakerStore`]: the circuit breaker's state
//!   ([`openarmature_llm::resilience::BreakerStore`]); one breaker opened means open
//!   for every worker;
//! - [`RateLimiter`]: requests- and tokens-per-minute per provider key, proactive
//!   (before the provider's 429s), waiting or failing fast with
//!   [`RATE_LIMIT_EXCEEDED`]; alone, or on the call path through
//!   [`RateLimitedProvider`].
//!
//! Updates are atomic: each decision is one server-side Lua script (`lua/`) on the
//! server's clock. The retry lanes and `ResilientProvider` use the async seams of
//! the budget and breaker traits, so no decision blocks the runtime.
//!
//! ## When Redis is down
//!
//! Decided per [`RedisShared`] by [`OnRedisDown`]. The default is
//! [`OnRedisDown::Local`]: each process falls back to its own in-memory budget,
//! breaker and limiter with the same settings (the limiter optionally at a
//! [`RateLimiter::local_share`] of the limit), and goes back to the shared state as
//! soon as Redis answers. Why: Redis coordinates, it does not gate. Failing closed
//! would turn a Redis outage into a provider outage (an open breaker for everyone,
//! no retries, no requests), while the local fallback keeps every single-process
//! guarantee — the shared bound degrades to N × the configured one, which is exactly
//! what the workers had before sharing. A decision waits at most
//! [`SharedOptions::timeout`] (250 ms) for Redis, and after a failure Redis is
//! skipped for [`SharedOptions::retry_interval`] (1 s), so an outage costs one
//! timeout per interval. Choose [`OnRedisDown::FailClosed`] when a limit must never
//! be exceeded (a contractual quota).
//!
//! ```no_run
//! use std::sync::Arc;
//! use openarmature_llm::resilience::{BreakerPolicy, CircuitBreaker, Endpoint};
//! use openarmature_pipeline::retry::TokenBucketConfig;
//! use openarmature_redis::{RedisBreakerStore, RedisRetryBudget, RedisShared, SharedOptions};
//! # fn demo() -> Result<(), openarmature_redis::SharedError> {
//! let shared = Arc::new(RedisShared::new("redis://127.0.0.1/", SharedOptions::default())?);
//! let key = "openai https://api.openai.com/v1";
//! let endpoint = Endpoint::new(key)
//!     .breaker(
//!         CircuitBreaker::new(key, BreakerPolicy::default())
//!             .store(Arc::new(RedisBreakerStore::new(Arc::clone(&shared)))),
//!     )
//!     .budget(Arc::new(RedisRetryBudget::new(shared, key, TokenBucketConfig::default())));
//! # let _ = endpoint; Ok(())
//! # }
//! ```
//!
//! Client: the `redis` crate (1.x, tokio, multiplexed connection), maintained by the
//! redis-rs project.

mod breaker;
mod budget;
mod limiter;
mod provider;
mod shared;

pub use breaker::RedisBreakerStore;
pub use budget::RedisRetryBudget;
pub use limiter::{
    OverLimit, RateLimit, RateLimitError, RateLimiter, Reservation, RATE_LIMITER_UNAVAILABLE,
    RATE_LIMIT_EXCEEDED,
};
pub use provider::RateLimitedProvider;
pub use shared::{OnRedisDown, RedisShared, SharedError, SharedOptions};

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
