//! The connection every shared component uses, its timeouts, and what happens when
//! Redis cannot be reached ([`OnRedisDown`]).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, Script};

/// What a shared component does while Redis is unreachable (refused, timed out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnRedisDown {
    /// Decide from this process's own state, with the same settings (the default):
    /// each process keeps the single-process guarantee, so the shared bound degrades
    /// to N × the configured one — what every process had before sharing — and an
    /// outage of Redis never becomes an outage of the provider calls. Shared state
    /// is used again as soon as Redis answers.
    #[default]
    Local,
    /// Refuse: the budget grants no retry, the breaker admits no call
    /// (`provider_circuit_open`), the limiter admits no request
    /// (`rate_limiter_unavailable`). For limits that must never be exceeded.
    FailClosed,
}

/// Connection settings of a [`RedisShared`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SharedOptions {
    /// Every key starts with this (default `openarmature`); processes sharing state
    /// use the same prefix.
    pub prefix: String,
    /// The longest a decision waits for Redis (connect or command; default 250 ms).
    pub timeout: Duration,
    /// After a failure, how long decisions skip Redis before trying it again
    /// (default 1 s), so an outage costs one timeout per interval, not per call.
    pub retry_interval: Duration,
    /// Behaviour while Redis is down.
    pub on_down: OnRedisDown,
    /// How long idle shared state lives (default 1 h).
    pub ttl: Duration,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            prefix: "openarmature".to_owned(),
            timeout: Duration::from_millis(250),
            retry_interval: Duration::from_secs(1),
            on_down: OnRedisDown::Local,
            ttl: Duration::from_secs(3600),
        }
    }
}

impl SharedOptions {
    /// Sets the key prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the per-decision timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the retry interval after a failure.
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval;
        self
    }

    /// Sets the behaviour while Redis is down.
    pub fn on_down(mut self, on_down: OnRedisDown) -> Self {
        self.on_down = on_down;
        self
    }
}

/// Why Redis did not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedError {
    /// The URL is not a Redis URL.
    #[error("invalid Redis URL: {0}")]
    InvalidUrl(redis::RedisError),
    /// Redis refused, failed or answered badly.
    #[error("Redis error: {0}")]
    Redis(#[from] redis::RedisError),
    /// No answer within the timeout.
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    /// Skipped: Redis failed less than `retry_interval` ago.
    #[error("Redis is down (last failure {0:?} ago)")]
    Down(Duration),
}

/// A lazily (re)connected Redis connection plus [`SharedOptions`]. Share one per
/// process (`Arc`); its components ([`crate::RedisRetryBudget`],
/// [`crate::RedisBreakerStore`], [`crate::RateLimiter`]) clone the `Arc`.
pub struct RedisShared {
    client: redis::Client,
    options: SharedOptions,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    failed_at: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for RedisShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisShared")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RedisShared {
    /// State at `url` (`redis://host:port/db`). Connects on first use, so a process
    /// starts even while Redis is down.
    ///
    /// # Errors
    /// [`SharedError::InvalidUrl`] when `url` does not parse.
    pub fn new(url: &str, options: SharedOptions) -> Result<Self, SharedError> {
        let client = redis::Client::open(url).map_err(SharedError::InvalidUrl)?;
        Ok(RedisShared {
            client,
            options,
            conn: tokio::sync::Mutex::new(None),
            failed_at: Mutex::new(None),
        })
    }

    /// The options.
    pub fn options(&self) -> &SharedOptions {
        &self.options
    }

    /// `prefix:kind:name`.
    pub(crate) fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{name}", self.options.prefix)
    }

    pub(crate) fn ttl_ms(&self) -> u64 {
        u64::try_from(self.options.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    fn mark_failed(&self) {
        *self
            .failed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    async fn connection(&self) -> Result<MultiplexedConnection, SharedError> {
        let failed = *self
            .failed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = failed {
            let ago = at.elapsed();
            if ago < self.options.retry_interval {
                return Err(SharedError::Down(ago));
            }
        }
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.options.timeout))
            .set_response_timeout(Some(self.options.timeout));
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs `script` with `keys` and `args`; any failure marks Redis down for
    /// `retry_interval` and drops the connection.
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[String],
    ) -> Result<T, SharedError> {
        let attempt = async {
            let mut conn = self.connection().await?;
            let mut invocation = script.prepare_invoke();
            for k in keys {
                invocation.key(*k);
            }
            for a in args {
                invocation.arg(a.as_str());
            }
            Ok::<T, SharedError>(invocation.invoke_async(&mut conn).await?)
        };
        let result = match tokio::time::timeout(self.options.timeout, attempt).await {
            Ok(r) => r,
            Err(_) => Err(SharedError::Timeout(self.options.timeout)),
        };
        match result {
            Err(SharedError::Down(d)) => Err(SharedError::Down(d)),
            Err(e) => {
                self.mark_failed();
                *self.conn.lock().await = None;
                Err(e)
            }
            ok => ok,
        }
    }
}
