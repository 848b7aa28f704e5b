//! Single-process checks of the shared components: two `RedisShared` handles (two
//! processes' worth of state) see one budget, one breaker and one limit; with Redis
//! unreachable the documented fallback holds (local state, or fail closed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use openarmature_core::Categorized;
use openarmature_llm::resilience::breaker::Admission;
use openarmature_llm::resilience::{BreakerPolicy, BreakerState, BreakerStore};
use openarmature_llm::testing::ScriptedProvider;
use openarmature_llm::{
    AssistantMessage, CompletionRequest, ErrorCategory, Message, Provider, StreamEvent,
};
use openarmature_pipeline::retry::{RetryBudget, TokenBucketConfig};
use openarmature_redis::{
    OnRedisDown, OverLimit, RateLimit, RateLimitedProvider, RateLimiter, RedisBreakerStore,
    RedisRetryBudget, RedisShared, SharedOptions, RATE_LIMITER_UNAVAILABLE, RATE_LIMIT_EXCEEDED,
};
use openarmature_testkit::services::{unique_name, url, Service};

fn two(redis: &str) -> (Arc<RedisShared>, Arc<RedisShared>) {
    let prefix = unique_name("oa_it");
    let make =
        || Arc::new(RedisShared::new(redis, SharedOptions::default().prefix(&prefix)).unwrap());
    (make(), make())
}

/// Nothing listens on port 1: every command is refused at once.
fn down(on_down: OnRedisDown) -> Arc<RedisShared> {
    Arc::new(
        RedisShared::new(
            "redis://127.0.0.1:1/",
            SharedOptions::default().on_down(on_down),
        )
        .unwrap(),
    )
}

const BUDGET: TokenBucketConfig = TokenBucketConfig {
    ratio: 0.5,
    floor: 1,
    floor_window: Duration::from_secs(600),
    max_tokens: 10.0,
};

#[tokio::test]
async fn two_handles_spend_from_one_budget() {
    let Some(redis) = url(Service::Redis, "two_handles_spend_from_one_budget") else {
        return;
    };
    let (a, b) = two(&redis);
    let (a, b) = (
        RedisRetryBudget::new(a, "ep", BUDGET),
        RedisRetryBudget::new(b, "ep", BUDGET),
    );
    assert!(a.try_withdraw_async().await, "the floor");
    assert!(!b.try_withdraw_async().await, "the floor is shared");
    for _ in 0..2 {
        b.deposit_async().await;
    }
    assert!(
        a.try_withdraw_async().await,
        "one token earned by the other handle"
    );
    assert!(!a.try_withdraw_async().await);
    let s = a.snapshot().await.unwrap();
    assert_eq!((s.first_attempts, s.retries, s.denied), (2, 2, 2));
}

#[tokio::test]
async fn a_breaker_opened_through_one_handle_is_open_for_the_other() {
    let Some(redis) = url(
        Service::Redis,
        "a_breaker_opened_through_one_handle_is_open_for_the_other",
    ) else {
        return;
    };
    let (a, b) = two(&redis);
    let (a, b) = (RedisBreakerStore::new(a), RedisBreakerStore::new(b));
    let policy = BreakerPolicy {
        consecutive_failures: 2,
        cooldown: Duration::from_millis(300),
        ..BreakerPolicy::default()
    };
    let now = Duration::ZERO;
    for _ in 0..2 {
        let (admission, _) = a.acquire_async("ep", &policy, now).await;
        assert_eq!(admission, Admission::Admitted { probe: false });
        a.record_async("ep", &policy, false, true, now).await;
    }
    let (refused, _) = b.acquire_async("ep", &policy, now).await;
    assert!(matches!(refused, Admission::Rejected { retry_in } if retry_in > Duration::ZERO));
    assert_eq!(
        b.state("ep"),
        BreakerState::Open,
        "cached from the shared answer"
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    let (probe, t) = b.acquire_async("ep", &policy, now).await;
    assert_eq!(probe, Admission::Admitted { probe: true });
    assert_eq!(t.map(|t| t.to), Some(BreakerState::HalfOpen));
    let (second, _) = a.acquire_async("ep", &policy, now).await;
    assert!(
        matches!(second, Admission::Rejected { .. }),
        "one probe for everyone"
    );
    let closed = b.record_async("ep", &policy, true, false, now).await;
    assert_eq!(
        closed.map(|t| (t.to, t.reason)),
        Some((BreakerState::Closed, "probe_succeeded"))
    );
    assert_eq!(a.shared_state("ep").await, Some(BreakerState::Closed));
}

#[tokio::test]
async fn the_limiter_reserves_estimates_reconciles_and_fails_fast() {
    let Some(redis) = url(
        Service::Redis,
        "the_limiter_reserves_estimates_reconciles_and_fails_fast",
    ) else {
        return;
    };
    let (a, b) = two(&redis);
    let limit = RateLimit::per_minute(Some(10), Some(100));
    let a = RateLimiter::new(a, limit).over_limit(OverLimit::FailFast);
    let b = RateLimiter::new(b, limit).over_limit(OverLimit::FailFast);
    let first = a.acquire("key", 60).await.unwrap();
    let over = b.acquire("key", 60).await.unwrap_err();
    assert_eq!(over.category(), Some(RATE_LIMIT_EXCEEDED));
    assert!(
        over.retry_after
            .is_some_and(|d| d > Duration::from_secs(50)),
        "{over}"
    );
    first.reconcile(20).await;
    let second = b.acquire("key", 60).await.unwrap();
    second.reconcile(60).await;
    assert!(b.acquire("key", 30).await.is_err(), "80 + 30 > 100");
    assert!(
        a.acquire("other-key", 90).await.is_ok(),
        "keys are independent"
    );
}

#[tokio::test]
async fn waiting_over_the_limit_admits_once_the_window_frees_room() {
    let Some(redis) = url(
        Service::Redis,
        "waiting_over_the_limit_admits_once_the_window_frees_room",
    ) else {
        return;
    };
    let (a, _) = two(&redis);
    let window = Duration::from_millis(300);
    let limiter = RateLimiter::new(a, RateLimit::per_minute(Some(2), None).window(window));
    let started = std::time::Instant::now();
    for _ in 0..3 {
        let _ = limiter.acquire("k", 0).await.unwrap();
    }
    assert!(
        started.elapsed() >= window - Duration::from_millis(20),
        "the third waited"
    );
    let short = RateLimiter::new(two(&redis).0, RateLimit::per_minute(Some(1), None)).over_limit(
        OverLimit::Wait {
            max_wait: Duration::from_millis(100),
        },
    );
    let _ = short.acquire("k", 0).await.unwrap();
    let err = short.acquire("k", 0).await.unwrap_err();
    assert_eq!(err.category(), Some(RATE_LIMIT_EXCEEDED));
}

#[tokio::test]
async fn with_redis_down_the_local_fallback_keeps_the_single_process_bounds() {
    let shared = down(OnRedisDown::Local);
    let budget = RedisRetryBudget::new(Arc::clone(&shared), "ep", BUDGET);
    assert!(budget.try_withdraw_async().await, "the local floor");
    assert!(!budget.try_withdraw_async().await);
    budget.deposit_async().await;
    budget.deposit_async().await;
    assert!(budget.try_withdraw_async().await, "earned locally");
    assert_eq!(budget.local().snapshot().first_attempts, 2);

    let breaker = RedisBreakerStore::new(Arc::clone(&shared));
    let policy = BreakerPolicy {
        consecutive_failures: 1,
        ..BreakerPolicy::default()
    };
    let (admitted, _) = breaker.acquire_async("ep", &policy, Duration::ZERO).await;
    assert_eq!(admitted, Admission::Admitted { probe: false });
    let t = breaker
        .record_async("ep", &policy, false, true, Duration::ZERO)
        .await;
    assert_eq!(t.map(|t| t.to), Some(BreakerState::Open), "opens locally");
    let (refused, _) = breaker.acquire_async("ep", &policy, Duration::ZERO).await;
    assert!(matches!(refused, Admission::Rejected { .. }));

    let limiter = RateLimiter::new(shared, RateLimit::per_minute(Some(4), None))
        .local_share(0.5)
        .over_limit(OverLimit::FailFast);
    let _ = limiter.acquire("k", 0).await.unwrap();
    let _ = limiter.acquire("k", 0).await.unwrap();
    let over = limiter.acquire("k", 0).await.unwrap_err();
    assert_eq!(
        over.category(),
        Some(RATE_LIMIT_EXCEEDED),
        "half the limit locally"
    );
}

#[tokio::test]
async fn with_redis_down_fail_closed_refuses() {
    let shared = down(OnRedisDown::FailClosed);
    let budget = RedisRetryBudget::new(Arc::clone(&shared), "ep", BUDGET);
    assert!(!budget.try_withdraw_async().await, "no retry without Redis");
    let breaker = RedisBreakerStore::new(Arc::clone(&shared));
    let (refused, _) = breaker
        .acquire_async("ep", &BreakerPolicy::default(), Duration::ZERO)
        .await;
    assert!(matches!(refused, Admission::Rejected { .. }));
    let limiter = RateLimiter::new(shared, RateLimit::per_minute(Some(100), None));
    let err = limiter.acquire("k", 0).await.unwrap_err();
    assert_eq!(err.category(), Some(RATE_LIMITER_UNAVAILABLE));
    assert!(err.category.is_transient());
}

#[tokio::test]
async fn streamed_calls_pass_the_rate_limited_provider_and_its_limit() {
    // Redis down, local fallback: half of 4 requests a minute, so two calls pass.
    let limiter = RateLimiter::new(
        down(OnRedisDown::Local),
        RateLimit::per_minute(Some(4), None),
    )
    .local_share(0.5)
    .over_limit(OverLimit::FailFast);
    let inner = ScriptedProvider::replying([
        AssistantMessage::from_text("one"),
        AssistantMessage::from_text("two"),
        AssistantMessage::from_text("three"),
    ])
    .streaming(true);
    let provider = RateLimitedProvider::new(inner, Arc::new(limiter), "k");
    assert!(provider.supports_streaming());
    let request = CompletionRequest::new(vec![Message::user("hi")]).stream(true);
    let first = provider.complete(&request).await.unwrap();
    assert_eq!(first.message.text().unwrap(), "one");
    let mut deltas = String::new();
    let mut stream = provider.stream(&request);
    while let Some(event) = stream.next().await {
        if let StreamEvent::Delta(delta) = event.unwrap() {
            deltas.push_str(&delta.text);
        }
    }
    drop(stream);
    assert_eq!(deltas, "two");
    let over = provider.complete(&request).await.unwrap_err();
    assert_eq!(over.category(), ErrorCategory::ProviderRateLimit);
    let sent = provider.inner().requests();
    assert_eq!(sent.len(), 2, "the refused call sent nothing");
    assert!(sent.iter().all(|r| r.stream));
}

#[tokio::test]
async fn a_lost_probe_slot_is_freed_after_twice_the_cooldown() {
    let Some(redis) = url(
        Service::Redis,
        "a_lost_probe_slot_is_freed_after_twice_the_cooldown",
    ) else {
        return;
    };
    let (a, b) = two(&redis);
    let (a, b) = (RedisBreakerStore::new(a), RedisBreakerStore::new(b));
    let policy = BreakerPolicy {
        consecutive_failures: 1,
        cooldown: Duration::from_millis(100),
        ..BreakerPolicy::default()
    };
    let now = Duration::ZERO;
    let _ = a.acquire_async("ep", &policy, now).await;
    a.record_async("ep", &policy, false, true, now).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // `a` takes the one probe slot and is never heard of again (its process died).
    let (probe, _) = a.acquire_async("ep", &policy, now).await;
    assert_eq!(probe, Admission::Admitted { probe: true });
    let (refused, _) = b.acquire_async("ep", &policy, now).await;
    assert!(
        matches!(refused, Admission::Rejected { .. }),
        "the slot is taken"
    );
    tokio::time::sleep(Duration::from_millis(250)).await;
    let (freed, _) = b.acquire_async("ep", &policy, now).await;
    assert_eq!(
        freed,
        Admission::Admitted { probe: true },
        "the lost slot was freed"
    );
    let closed = b.record_async("ep", &policy, true, false, now).await;
    assert_eq!(closed.map(|t| t.to), Some(BreakerState::Closed));
}

#[tokio::test]
async fn the_limiter_works_with_more_reservations_than_lua_can_unpack() {
    let Some(redis) = url(
        Service::Redis,
        "the_limiter_works_with_more_reservations_than_lua_can_unpack",
    ) else {
        return;
    };
    let prefix = unique_name("oa_it");
    let shared = Arc::new(
        RedisShared::new(
            &redis,
            SharedOptions::default()
                .prefix(&prefix)
                .on_down(OnRedisDown::FailClosed),
        )
        .unwrap(),
    );
    // 9,000 expired and 9,000 live reservations of one token each, written directly.
    let (log, tokens) = (
        format!("{prefix}:ratelimit:k:log"),
        format!("{prefix}:ratelimit:k:tokens"),
    );
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut zadd = redis::cmd("ZADD");
    let mut hset = redis::cmd("HSET");
    zadd.arg(&log);
    hset.arg(&tokens);
    for i in 0..18_000u64 {
        let at = if i < 9_000 { 1 } else { now_ms - 1_000 };
        zadd.arg(at).arg(format!("r{i}"));
        hset.arg(format!("r{i}")).arg(1);
    }
    let client = redis::Client::open(redis.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    zadd.query_async::<()>(&mut con).await.unwrap();
    hset.query_async::<()>(&mut con).await.unwrap();

    let limiter = RateLimiter::new(shared, RateLimit::per_minute(None, Some(100_000)))
        .over_limit(OverLimit::FailFast);
    let granted = limiter.acquire("k", 10).await;
    assert!(granted.is_ok(), "{:?}", granted.err());
    let left: u64 = redis::cmd("HLEN")
        .arg(&tokens)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        left, 9_001,
        "the expired reservations are gone, the new one is in"
    );
}
