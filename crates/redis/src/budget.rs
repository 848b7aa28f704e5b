//! Extension 0003 (retry budget), shared: [`RedisRetryBudget`] is the
//! [`TokenBucket`] of `openarmature-pipeline`, kept in one Redis hash every process
//! of the endpoint spends from, updated atomically by a server-side script (server
//! clock for the floor's windows).

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_pipeline::retry::{BudgetSnapshot, RetryBudget, TokenBucket, TokenBucketConfig};
use redis::Script;

use crate::shared::{OnRedisDown, RedisShared, SharedError};

/// A retry budget shared through Redis.
///
/// The retry lanes call the async methods; they go to Redis. The synchronous
/// [`RetryBudget::deposit`] / [`RetryBudget::try_withdraw`] (for callers outside a
/// runtime) and every decision while Redis is down with [`OnRedisDown::Local`] use
/// this process's own [`TokenBucket`] with the same settings; with
/// [`OnRedisDown::FailClosed`] a down Redis grants no retry.
pub struct RedisRetryBudget {
    shared: Arc<RedisShared>,
    key: String,
    config: TokenBucketConfig,
    local: TokenBucket,
    script: Script,
}

impl std::fmt::Debug for RedisRetryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRetryBudget")
            .field("key", &self.key)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisRetryBudget {
    /// The budget named `name` (e.g. the endpoint key) with `config`. Every process
    /// must use the same settings for a name.
    pub fn new(shared: Arc<RedisShared>, name: &str, config: TokenBucketConfig) -> Self {
        RedisRetryBudget {
            key: shared.key("budget", name),
            shared,
            config,
            local: TokenBucket::new(config),
            script: Script::new(include_str!("../lua/budget.lua")),
        }
    }

    fn args(&self, op: &str) -> Vec<String> {
        let c = &self.config;
        vec![
            op.to_owned(),
            c.ratio.to_string(),
            c.floor.to_string(),
            c.floor_window.as_millis().max(1).to_string(),
            c.max_tokens.to_string(),
            self.shared.ttl_ms().to_string(),
        ]
    }

    /// The shared counters.
    ///
    /// # Errors
    /// When Redis does not answer.
    pub async fn snapshot(&self) -> Result<BudgetSnapshot, SharedError> {
        let (tokens, first_attempts, retries, denied): (String, u64, u64, u64) = self
            .shared
            .eval(&self.script, &[&self.key], &self.args("snapshot"))
            .await?;
        Ok(BudgetSnapshot {
            tokens: tokens.parse().unwrap_or(0.0),
            first_attempts,
            retries,
            denied,
        })
    }

    /// This process's fallback bucket (used while Redis is down).
    pub fn local(&self) -> &TokenBucket {
        &self.local
    }
}

impl RetryBudget for RedisRetryBudget {
    fn deposit(&self) {
        self.local.deposit();
    }

    fn try_withdraw(&self) -> bool {
        self.local.try_withdraw()
    }

    fn deposit_async(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared: Result<i64, _> = self
                .shared
                .eval(&self.script, &[&self.key], &self.args("deposit"))
                .await;
            if shared.is_err() && self.shared.options().on_down == OnRedisDown::Local {
                self.local.deposit();
            }
        })
    }

    fn try_withdraw_async(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let shared: Result<i64, _> = self
                .shared
                .eval(&self.script, &[&self.key], &self.args("withdraw"))
                .await;
            match shared {
                Ok(granted) => granted == 1,
                Err(_) => match self.shared.options().on_down {
                    OnRedisDown::Local => self.local.try_withdraw(),
                    _ => false,
                },
            }
        })
    }
}
