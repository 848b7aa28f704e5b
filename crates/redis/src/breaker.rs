//! Extension 0004 (circuit breaker), shared: [`RedisBreakerStore`] runs the
//! [`BreakerMachine`] operations atomically in Redis (one hash per endpoint, server
//! clock for cooldowns), so a breaker opened by one process is open for all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_llm::resilience::breaker::{Admission, InMemoryBreakerStore};
use openarmature_llm::resilience::{BreakerPolicy, BreakerState, BreakerStore, Transition};
use redis::Script;

use crate::shared::{OnRedisDown, RedisShared};

/// How long a fail-closed breaker reports it stays refused while Redis is down.
const FAIL_CLOSED_RETRY: Duration = Duration::from_secs(1);

/// Breaker state shared through Redis. Give it to
/// [`openarmature_llm::resilience::CircuitBreaker::store`]; the breaker's async
/// [`acquire`](openarmature_llm::resilience::CircuitBreaker::acquire) /
/// [`finish`](openarmature_llm::resilience::breaker::Permit::finish) (what
/// `ResilientProvider` calls) go to Redis.
///
/// The synchronous trait methods do not block on the network: `state` /
/// `open_remaining` answer from the last state Redis reported to this process,
/// `release` (a cancelled call) is sent from a spawned task, and `acquire` /
/// `record` run on the local fallback store. While Redis is down,
/// [`OnRedisDown::Local`] decides with this process's own breaker (same policy);
/// [`OnRedisDown::FailClosed`] refuses every call.
pub struct RedisBreakerStore {
    shared: Arc<RedisShared>,
    script: Script,
    local: InMemoryBreakerStore,
    seen: Mutex<HashMap<String, (BreakerState, Duration)>>,
}

impl std::fmt::Debug for RedisBreakerStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBreakerStore")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

/// The script's answer.
type Reply = (i64, i64, i64, String, String, String, String);

fn state_of(s: &str) -> BreakerState {
    match s {
        "open" => BreakerState::Open,
        "half_open" => BreakerState::HalfOpen,
        _ => BreakerState::Closed,
    }
}

fn reason_of(s: &str) -> &'static str {
    match s {
        "consecutive_failures" => "consecutive_failures",
        "failure_rate" => "failure_rate",
        "cooldown_elapsed" => "cooldown_elapsed",
        "probe_failed" => "probe_failed",
        "probe_succeeded" => "probe_succeeded",
        _ => "shared",
    }
}

fn transition(reply: &Reply) -> Option<Transition> {
    (!reply.4.is_empty()).then(|| Transition {
        from: state_of(&reply.3),
        to: state_of(&reply.4),
        reason: reason_of(&reply.5),
    })
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl RedisBreakerStore {
    /// A store on `shared` (keys `prefix:breaker:<endpoint>`).
    pub fn new(shared: Arc<RedisShared>) -> Self {
        RedisBreakerStore {
            shared,
            script: Script::new(include_str!("../lua/breaker.lua")),
            local: InMemoryBreakerStore::new(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    fn args(&self, op: &str, p: &BreakerPolicy, probe: bool, failed: bool) -> Vec<String> {
        vec![
            op.to_owned(),
            p.consecutive_failures.to_string(),
            p.failure_rate.to_string(),
            p.window.to_string(),
            p.min_calls.to_string(),
            ms(p.cooldown).to_string(),
            p.half_open_probes.to_string(),
            p.probes_to_close.to_string(),
            u8::from(probe).to_string(),
            u8::from(failed).to_string(),
            self.shared.ttl_ms().to_string(),
        ]
    }

    async fn call(
        &self,
        endpoint: &str,
        op: &str,
        policy: &BreakerPolicy,
        probe: bool,
        failed: bool,
    ) -> Option<Reply> {
        let key = self.shared.key("breaker", endpoint);
        let reply: Reply = self
            .shared
            .eval(&self.script, &[&key], &self.args(op, policy, probe, failed))
            .await
            .ok()?;
        let remaining = Duration::from_millis(u64::try_from(reply.2).unwrap_or(0));
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(endpoint.to_owned(), (state_of(&reply.6), remaining));
        Some(reply)
    }

    /// `endpoint`'s state as Redis holds it now (`None`: Redis did not answer).
    pub async fn shared_state(&self, endpoint: &str) -> Option<BreakerState> {
        let policy = BreakerPolicy::default();
        self.call(endpoint, "state", &policy, false, false)
            .await
            .map(|r| state_of(&r.6))
    }

    fn fail_closed(&self) -> bool {
        self.shared.options().on_down == OnRedisDown::FailClosed
    }
}

impl BreakerStore for RedisBreakerStore {
    fn acquire(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> (Admission, Option<Transition>) {
        self.local.acquire(endpoint, policy, now)
    }

    fn record(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> Option<Transition> {
        self.local.record(endpoint, policy, probe, failed, now)
    }

    fn release(&self, endpoint: &str, probe: bool) {
        self.local.release(endpoint, probe);
        if !probe {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (shared, script) = (Arc::clone(&self.shared), self.script.clone());
        let key = shared.key("breaker", endpoint);
        let args = self.args("release", &BreakerPolicy::default(), true, false);
        rt.spawn(async move {
            let _: Result<Reply, _> = shared.eval(&script, &[&key], &args).await;
        });
    }

    fn state(&self, endpoint: &str) -> BreakerState {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(endpoint)
            .map_or_else(|| self.local.state(endpoint), |s| s.0)
    }

    fn open_remaining(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> Option<Duration> {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(endpoint)
            .copied();
        match seen {
            Some((BreakerState::Open, left)) if !left.is_zero() => Some(left),
            Some(_) => None,
            None => self.local.open_remaining(endpoint, policy, now),
        }
    }

    fn acquire_async<'a>(
        &'a self,
        endpoint: &'a str,
        policy: &'a BreakerPolicy,
        now: Duration,
    ) -> BoxFuture<'a, (Admission, Option<Transition>)> {
        Box::pin(async move {
            match self.call(endpoint, "acquire", policy, false, false).await {
                Some(reply) => {
                    let admission = if reply.0 == 1 {
                        Admission::Admitted {
                            probe: reply.1 == 1,
                        }
                    } else {
                        Admission::Rejected {
                            retry_in: Duration::from_millis(u64::try_from(reply.2).unwrap_or(0)),
                        }
                    };
                    (admission, transition(&reply))
                }
                None if self.fail_closed() => (
                    Admission::Rejected {
                        retry_in: FAIL_CLOSED_RETRY,
                    },
                    None,
                ),
                None => self.local.acquire(endpoint, policy, now),
            }
        })
    }

    fn record_async<'a>(
        &'a self,
        endpoint: &'a str,
        policy: &'a BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> BoxFuture<'a, Option<Transition>> {
        Box::pin(async move {
            match self.call(endpoint, "record", policy, probe, failed).await {
                Some(reply) => transition(&reply),
                None if self.fail_closed() => None,
                None => self.local.record(endpoint, policy, probe, failed, now),
            }
        })
    }
}
