//! The latency of one shared decision over loopback Redis: a retry-budget
//! withdraw, a breaker admission, and a rate-limiter reservation (each one script
//! call), with the in-process token bucket's withdraw beside it as the local
//! baseline. Needs `OPENARMATURE_TEST_REDIS_URL` (see `.ci/services.sh`); without it the
//! bench prints a notice and measures nothing.

#![allow(clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use openarmature_llm::resilience::{BreakerPolicy, BreakerStore};
use openarmature_pipeline::retry::{RetryBudget, TokenBucket, TokenBucketConfig};
use openarmature_redis::{
    RateLimit, RateLimiter, RedisBreakerStore, RedisRetryBudget, RedisShared, SharedOptions,
};

fn bench(c: &mut Criterion) {
    let Ok(url) = std::env::var("OPENARMATURE_TEST_REDIS_URL") else {
        eprintln!("skipped: set OPENARMATURE_TEST_REDIS_URL (see .ci/services.sh)");
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let prefix = format!("oa_bench_{}", std::process::id());
    let shared =
        Arc::new(RedisShared::new(&url, SharedOptions::default().prefix(prefix)).expect("url"));
    let budget = RedisRetryBudget::new(Arc::clone(&shared), "ep", TokenBucketConfig::default());
    let breaker = RedisBreakerStore::new(Arc::clone(&shared));
    let policy = BreakerPolicy::default();
    let limiter = RateLimiter::new(
        shared,
        RateLimit::per_minute(Some(u32::MAX), Some(u64::MAX)).window(Duration::from_millis(50)),
    );
    let local = TokenBucket::new(TokenBucketConfig::default());
    let mut group = c.benchmark_group("shared_decision");
    group.bench_function("local_budget_withdraw", |b| {
        b.iter(|| rt.block_on(local.try_withdraw_async()))
    });
    group.bench_function("budget_withdraw", |b| {
        b.iter(|| rt.block_on(budget.try_withdraw_async()))
    });
    group.bench_function("breaker_acquire", |b| {
        b.iter(|| rt.block_on(breaker.acquire_async("ep", &policy, Duration::ZERO)))
    });
    group.bench_function("limiter_acquire_and_reconcile", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = limiter.acquire("key", 100).await.expect("room");
                r.reconcile(80).await;
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
