//! The child process: one worker of the fleet, sharing Redis with its siblings. It
//! talks to the parent over stdin (commands) and stdout (one JSON line per phase).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature_llm::resilience::{BreakerPolicy, CircuitBreaker, Endpoint, ResilientProvider};
use openarmature_llm::{CompletionRequest, LlmRetryConfig, Message, OpenAiProvider, Provider};
use openarmature_pipeline::retry::{Constant, RetryConfig, TokenBucketConfig};
use openarmature_redis::{
    RateLimit, RateLimitedProvider, RateLimiter, RedisBreakerStore, RedisRetryBudget, RedisShared,
    SharedOptions,
};
use serde_json::json;

pub const ENDPOINT: &str = "mock-endpoint";
pub const CONSECUTIVE_FAILURES: u32 = 6;
pub const COOLDOWN: Duration = Duration::from_millis(1000);
pub const BUDGET: TokenBucketConfig = TokenBucketConfig {
    ratio: 0.1,
    floor: 2,
    floor_window: Duration::from_secs(600),
    max_tokens: 10.0,
};
pub const CALLS_WHILE_DOWN: usize = 20;
pub const LIMIT_REQUESTS: u32 = 60;
pub const LIMIT_WINDOW: Duration = Duration::from_millis(1100);
pub const LIMITED_CALLS: usize = 30;

fn wait_for(line: &str) {
    let mut input = String::new();
    let stdin = std::io::stdin();
    loop {
        input.clear();
        if stdin.lock().read_line(&mut input).unwrap_or(0) == 0 {
            std::process::exit(3);
        }
        if input.trim() == line {
            return;
        }
    }
}

fn say(value: serde_json::Value) {
    println!("{value}");
}

fn request(retry: bool) -> CompletionRequest {
    let r = CompletionRequest::new(vec![Message::user("hello")]);
    if retry {
        r.retry(LlmRetryConfig::from(
            RetryConfig::default()
                .max_attempts(3)
                .backoff(Constant(Duration::ZERO)),
        ))
    } else {
        r
    }
}

pub async fn breaker(redis: &str, mock: &str, prefix: &str) {
    let shared =
        Arc::new(RedisShared::new(redis, SharedOptions::default().prefix(prefix)).unwrap());
    let store = Arc::new(RedisBreakerStore::new(Arc::clone(&shared)));
    let policy = BreakerPolicy {
        consecutive_failures: CONSECUTIVE_FAILURES,
        failure_rate: 2.0,
        cooldown: COOLDOWN,
        half_open_probes: 1,
        ..BreakerPolicy::default()
    };
    let endpoint = Arc::new(
        Endpoint::new(ENDPOINT)
            .breaker(CircuitBreaker::new(ENDPOINT, policy).store(store.clone()))
            .budget(Arc::new(RedisRetryBudget::new(shared, ENDPOINT, BUDGET))),
    );
    let inner = OpenAiProvider::builder(mock, "m").build().unwrap();
    let provider = ResilientProvider::new(inner, endpoint);
    say(json!({"ready": true}));

    wait_for("down");
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..CALLS_WHILE_DOWN {
        let e = provider.complete(&request(true)).await.unwrap_err();
        *errors.entry(e.category().to_string()).or_default() += 1;
    }
    let state = store.shared_state(ENDPOINT).await.map(|s| s.as_str());
    say(json!({"phase": "down", "errors": errors, "state": state}));

    wait_for("up");
    let started = Instant::now();
    let mut refused = 0;
    while provider.complete(&request(false)).await.is_err() {
        refused += 1;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never recovered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut ok = 1;
    for _ in 0..3 {
        provider.complete(&request(true)).await.unwrap();
        ok += 1;
    }
    let state = store.shared_state(ENDPOINT).await.map(|s| s.as_str());
    say(json!({"phase": "up", "ok": ok, "refused": refused, "state": state}));
}

pub async fn limited(redis: &str, mock: &str, prefix: &str) {
    let shared =
        Arc::new(RedisShared::new(redis, SharedOptions::default().prefix(prefix)).unwrap());
    let limiter = Arc::new(RateLimiter::new(
        shared,
        RateLimit::per_minute(Some(LIMIT_REQUESTS), None).window(LIMIT_WINDOW),
    ));
    let inner = OpenAiProvider::builder(mock, "m").build().unwrap();
    let provider = RateLimitedProvider::new(inner, limiter, "mock-key");
    say(json!({"ready": true}));
    wait_for("go");
    let mut ok = 0;
    for _ in 0..LIMITED_CALLS {
        if provider.complete(&request(false)).await.is_ok() {
            ok += 1;
        }
    }
    say(json!({"phase": "done", "ok": ok}));
}
