//! A requests- and tokens-per-window rate limiter per provider key, shared by every
//! process through Redis (a sliding log of reservations, updated atomically by a
//! server-side script on the server's clock).
//!
//! Before a call, [`RateLimiter::acquire`] reserves one request and the call's
//! estimated tokens; after it, [`Reservation::reconcile`] replaces the estimate with
//! the usage the provider reported. Over the limit the limiter waits until the window
//! frees room ([`OverLimit::Wait`], up to a cap) or fails at once
//! ([`OverLimit::FailFast`]) with [`RATE_LIMIT_EXCEEDED`] and the wait it would need.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use openarmature_core::{Categorized, Category};
use redis::Script;

use crate::shared::{OnRedisDown, RedisShared};

/// Over the limit (fail-fast, or the wait would pass `max_wait`).
pub const RATE_LIMIT_EXCEEDED: Category = Category::new("rate_limit_exceeded");
/// Redis is down and the limiter fails closed ([`OnRedisDown::FailClosed`]).
pub const RATE_LIMITER_UNAVAILABLE: Category = Category::transient("rate_limiter_unavailable");

/// The limit of one provider key.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Requests admitted per window (`None`: unlimited).
    pub requests: Option<u32>,
    /// Tokens (estimated, then reconciled) admitted per window (`None`: unlimited). A
    /// single request above it is admitted only into an empty window.
    pub tokens: Option<u64>,
    /// The sliding window (default 60 s: RPM / TPM).
    pub window: Duration,
}

impl RateLimit {
    /// `requests` per minute and `tokens` per minute.
    pub fn per_minute(requests: Option<u32>, tokens: Option<u64>) -> Self {
        RateLimit {
            requests,
            tokens,
            window: Duration::from_secs(60),
        }
    }

    /// Uses a window of `window` instead of a minute.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }
}

/// What [`RateLimiter::acquire`] does over the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverLimit {
    /// Waits for room, as long as the wait stays under `max_wait`.
    Wait {
        /// The longest total wait.
        max_wait: Duration,
    },
    /// Fails at once.
    FailFast,
}

/// Why a request was not admitted.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{category}: provider key `{key}`: {message}")]
#[non_exhaustive]
pub struct RateLimitError {
    /// [`RATE_LIMIT_EXCEEDED`] or [`RATE_LIMITER_UNAVAILABLE`].
    pub category: Category,
    /// The provider key.
    pub key: String,
    /// When room is expected (over the limit).
    pub retry_after: Option<Duration>,
    /// What happened.
    pub message: String,
}

impl Categorized for RateLimitError {
    fn category(&self) -> Option<Category> {
        Some(self.category)
    }
}

/// An admitted request: reconcile its token estimate once the usage is known.
#[derive(Debug)]
#[must_use]
pub struct Reservation<'l> {
    limiter: &'l RateLimiter,
    key: String,
    id: String,
    shared: bool,
}

impl Reservation<'_> {
    /// Replaces the estimate with `actual_tokens` (what the provider reported).
    pub async fn reconcile(self, actual_tokens: u64) {
        let l = self.limiter;
        if self.shared {
            let (z, h) = l.keys(&self.key);
            let args = vec![
                "reconcile".to_owned(),
                self.id.clone(),
                actual_tokens.to_string(),
            ];
            if l.shared
                .eval::<(i64, i64, i64, i64)>(&l.script, &[&z, &h], &args)
                .await
                .is_ok()
            {
                return;
            }
        }
        l.local_log(&self.key, |log| log.reconcile(&self.id, actual_tokens));
    }

    /// The reservation id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The in-process sliding log (the fallback while Redis is down).
#[derive(Debug, Default)]
struct LocalLog {
    entries: VecDeque<(Instant, String, u64)>,
}

impl LocalLog {
    /// Admits (`Ok`) or returns the wait.
    fn try_admit(&mut self, limit: &RateLimit, id: &str, tokens: u64) -> Result<(), Duration> {
        let now = Instant::now();
        while self
            .entries
            .front()
            .is_some_and(|e| now.duration_since(e.0) >= limit.window)
        {
            self.entries.pop_front();
        }
        let expires = |at: Instant| (at + limit.window).saturating_duration_since(now);
        let n = self.entries.len();
        let mut wait = Duration::ZERO;
        if let Some(max) = limit.requests.map(|r| r as usize) {
            if n + 1 > max && max > 0 {
                wait = wait.max(expires(self.entries[n + 1 - max - 1].0));
            } else if max == 0 {
                wait = limit.window;
            }
        }
        if let Some(max) = limit.tokens {
            let used: u64 = self.entries.iter().map(|e| e.2).sum();
            if n > 0 && used + tokens > max {
                let need = used + tokens - max;
                let mut freed = 0;
                let mut at = self.entries[n - 1].0;
                for e in &self.entries {
                    freed += e.2;
                    if freed >= need {
                        at = e.0;
                        break;
                    }
                }
                wait = wait.max(expires(at));
            }
        }
        if !wait.is_zero() {
            return Err(wait);
        }
        self.entries.push_back((now, id.to_owned(), tokens));
        Ok(())
    }

    fn reconcile(&mut self, id: &str, tokens: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.1 == id) {
            e.2 = tokens;
        }
    }
}

/// The limiter. One per process per limit configuration; keys are provider keys
/// (e.g. `"openai:<api key id>"`).
///
/// While Redis is down, [`OnRedisDown::Local`] limits each process to
/// `local_share` × the limit on its own; [`OnRedisDown::FailClosed`] admits nothing
/// ([`RATE_LIMITER_UNAVAILABLE`]).
pub struct RateLimiter {
    shared: Arc<RedisShared>,
    limit: RateLimit,
    over: OverLimit,
    local_share: f64,
    script: Script,
    local: Mutex<HashMap<String, LocalLog>>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limit", &self.limit)
            .field("over", &self.over)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// A limiter of `limit` on `shared`, waiting up to a minute when over.
    pub fn new(shared: Arc<RedisShared>, limit: RateLimit) -> Self {
        RateLimiter {
            shared,
            limit,
            over: OverLimit::Wait {
                max_wait: Duration::from_secs(60),
            },
            local_share: 1.0,
            script: Script::new(include_str!("../lua/limiter.lua")),
            local: Mutex::new(HashMap::new()),
        }
    }

    /// Sets the over-limit behaviour.
    pub fn over_limit(mut self, over: OverLimit) -> Self {
        self.over = over;
        self
    }

    /// The share of the limit one process allows itself while Redis is down (default
    /// 1.0; `1/N` keeps N processes within the limit).
    pub fn local_share(mut self, share: f64) -> Self {
        self.local_share = share.clamp(0.0, 1.0);
        self
    }

    /// The limit.
    pub fn limit(&self) -> &RateLimit {
        &self.limit
    }

    fn keys(&self, key: &str) -> (String, String) {
        (
            self.shared.key("ratelimit", &format!("{key}:log")),
            self.shared.key("ratelimit", &format!("{key}:tokens")),
        )
    }

    fn local_log<R>(&self, key: &str, f: impl FnOnce(&mut LocalLog) -> R) -> R {
        let mut map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        f(map.entry(key.to_owned()).or_default())
    }

    fn local_limit(&self) -> RateLimit {
        let share = self.local_share;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        RateLimit {
            requests: self
                .limit
                .requests
                .map(|r| ((f64::from(r) * share).floor() as u32).max(1)),
            tokens: self
                .limit
                .tokens
                .map(|t| ((t as f64 * share).floor() as u64).max(1)),
            window: self.limit.window,
        }
    }

    /// One admission attempt: `Ok(Ok(shared))` admitted, `Ok(Err(wait))` over.
    async fn try_once(
        &self,
        key: &str,
        id: &str,
        tokens: u64,
    ) -> Result<Result<bool, Duration>, RateLimitError> {
        let (z, h) = self.keys(key);
        let args = vec![
            "acquire".to_owned(),
            id.to_owned(),
            tokens.to_string(),
            self.limit.requests.unwrap_or(0).to_string(),
            self.limit.tokens.unwrap_or(0).to_string(),
            self.limit.window.as_millis().max(1).to_string(),
        ];
        match self
            .shared
            .eval::<(i64, i64, i64, i64)>(&self.script, &[&z, &h], &args)
            .await
        {
            Ok((1, ..)) => Ok(Ok(true)),
            Ok((_, wait, ..)) => Ok(Err(Duration::from_millis(
                u64::try_from(wait).unwrap_or(1).max(1),
            ))),
            Err(e) => match self.shared.options().on_down {
                OnRedisDown::FailClosed => Err(RateLimitError {
                    category: RATE_LIMITER_UNAVAILABLE,
                    key: key.to_owned(),
                    retry_after: Some(self.shared.options().retry_interval),
                    message: format!("Redis is unavailable and the limiter fails closed: {e}"),
                }),
                _ => {
                    let limit = self.local_limit();
                    Ok(self
                        .local_log(key, |log| log.try_admit(&limit, id, tokens))
                        .map(|()| false))
                }
            },
        }
    }

    /// Reserves one request and `estimated_tokens` for `key`.
    ///
    /// # Errors
    /// [`RATE_LIMIT_EXCEEDED`] when over and failing fast, or when the wait would pass
    /// `max_wait`; [`RATE_LIMITER_UNAVAILABLE`] when Redis is down and failing closed.
    pub async fn acquire(
        &self,
        key: &str,
        estimated_tokens: u64,
    ) -> Result<Reservation<'_>, RateLimitError> {
        let id = uuid::Uuid::new_v4().to_string();
        let started = Instant::now();
        loop {
            match self.try_once(key, &id, estimated_tokens).await? {
                Ok(shared) => {
                    return Ok(Reservation {
                        limiter: self,
                        key: key.to_owned(),
                        id,
                        shared,
                    })
                }
                Err(wait) => {
                    let over = |why: &str| RateLimitError {
                        category: RATE_LIMIT_EXCEEDED,
                        key: key.to_owned(),
                        retry_after: Some(wait),
                        message: format!("{why} (room in {:.3} s)", wait.as_secs_f64()),
                    };
                    match self.over {
                        OverLimit::FailFast => return Err(over("over the limit")),
                        OverLimit::Wait { max_wait } if started.elapsed() + wait > max_wait => {
                            return Err(over("over the limit past the longest wait"))
                        }
                        OverLimit::Wait { .. } => tokio::time::sleep(wait).await,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_local_log_bounds_requests_and_tokens_per_window() {
        let limit = RateLimit::per_minute(Some(2), Some(100));
        let mut log = LocalLog::default();
        assert!(log.try_admit(&limit, "a", 60).is_ok());
        let wait = log.try_admit(&limit, "b", 60).unwrap_err();
        assert!(wait > Duration::from_secs(59), "{wait:?}");
        log.reconcile("a", 20);
        assert!(
            log.try_admit(&limit, "b", 60).is_ok(),
            "room after reconcile"
        );
        assert!(
            log.try_admit(&limit, "c", 1).is_err(),
            "two requests per window"
        );
    }
}
