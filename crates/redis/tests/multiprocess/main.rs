//! Multi-process tests of the shared resilience state: the test binary re-runs itself
//! as three worker processes (`OA_REDIS_WORKER`) that share one Redis
//! (`OPENARMATURE_TEST_REDIS_URL`, see `.ci/services.sh`) and one mock upstream.
//!
//! - budget and breaker: the upstream answers 503; the requests it receives stay
//!   within what the shared breaker and budget allow, the breaker is open for all
//!   three; after the upstream recovers all three close and complete;
//! - rate limit: a shared 60-requests-per-1.1 s limit, 30 requests per process; the
//!   upstream never sees more than 60 in any 1 s, and every request completes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod mock;
mod worker;

use std::process::{ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};
use openarmature_redis::{RedisRetryBudget, RedisShared, SharedOptions};
use openarmature_testkit::services::{unique_name, url, Service};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PROCESSES: usize = 3;

fn main() -> ExitCode {
    if let Ok(role) = std::env::var("OA_REDIS_WORKER") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let get = |k: &str| std::env::var(k).unwrap();
        let (redis, mock, prefix) = (get("OA_REDIS_URL"), get("OA_MOCK_URL"), get("OA_PREFIX"));
        rt.block_on(async {
            match role.as_str() {
                "breaker" => worker::breaker(&redis, &mock, &prefix).await,
                _ => worker::limited(&redis, &mock, &prefix).await,
            }
        });
        return ExitCode::SUCCESS;
    }
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("three_processes_share_one_budget_and_breaker", || {
            run(
                "three_processes_share_one_budget_and_breaker",
                budget_and_breaker,
            )
        }),
        Trial::test("three_processes_share_one_rate_limit", || {
            run("three_processes_share_one_rate_limit", rate_limit)
        }),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}

fn run<F, Fut>(name: &str, body: F) -> Result<(), Failed>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some(redis) = url(Service::Redis, name) else {
        return Ok(());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move { tokio::time::timeout(Duration::from_secs(60), body(redis)).await })
        .map_err(|_| Failed::from("timed out after 60 s"))
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    fn spawn(role: &str, redis: &str, mock: &str, prefix: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("OA_REDIS_WORKER", role)
            .env("OA_REDIS_URL", redis)
            .env("OA_MOCK_URL", mock)
            .env("OA_PREFIX", prefix)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Worker {
            child,
            stdin,
            lines,
        }
    }

    async fn read(&mut self) -> Value {
        let line = self
            .lines
            .next_line()
            .await
            .unwrap()
            .expect("worker output");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, command: &str) {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }
}

async fn fleet(role: &str, redis: &str, mock: &str, prefix: &str) -> Vec<Worker> {
    let mut workers: Vec<Worker> = (0..PROCESSES)
        .map(|_| Worker::spawn(role, redis, mock, prefix))
        .collect();
    for w in &mut workers {
        assert_eq!(w.read().await["ready"], true);
    }
    workers
}

async fn broadcast(workers: &mut [Worker], command: &str) -> Vec<Value> {
    for w in workers.iter_mut() {
        w.send(command).await;
    }
    let mut out = Vec::new();
    for w in workers.iter_mut() {
        out.push(w.read().await);
    }
    out
}

async fn budget_and_breaker(redis: String) {
    let (mock, mock_url) = mock::Mock::start().await;
    let prefix = unique_name("oa_mp");
    let mut workers = fleet("breaker", &redis, &mock_url, &prefix).await;

    let started = Instant::now();
    let down = broadcast(&mut workers, "down").await;
    let elapsed = started.elapsed();
    let shared = std::sync::Arc::new(
        RedisShared::new(&redis, SharedOptions::default().prefix(&prefix)).unwrap(),
    );
    let budget = RedisRetryBudget::new(shared, worker::ENDPOINT, worker::BUDGET);
    let snap = budget.snapshot().await.unwrap();
    let received = mock.count();
    let calls = PROCESSES * worker::CALLS_WHILE_DOWN;
    // Closed, at most the threshold's failures plus one call in flight per other
    // process get through; open, only one probe per elapsed cooldown.
    let probes = (elapsed.as_millis() / worker::COOLDOWN.as_millis()) as usize;
    let breaker_bound = worker::CONSECUTIVE_FAILURES as usize + (PROCESSES - 1) + probes;
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let retry_bound = f64::from(worker::BUDGET.floor)
        + (worker::BUDGET.ratio * snap.first_attempts as f64).floor();
    println!(
        "budget/breaker: {PROCESSES} processes, {calls} logical calls (up to {} attempts each = {} unshared requests); \
         the mock received {received} in {:.0} ms; shared budget: {} first attempts, {} retries granted \
         (bound {retry_bound}), {} denied; breaker bound {breaker_bound}",
        3,
        calls * 3,
        elapsed.as_secs_f64() * 1000.0,
        snap.first_attempts,
        snap.retries,
        snap.denied
    );
    assert!(received <= breaker_bound, "{received} > {breaker_bound}");
    assert!((snap.retries as f64) <= retry_bound, "{snap:?}");
    assert!(received as u64 <= snap.first_attempts + snap.retries);
    for report in &down {
        println!("  worker while down: {report}");
        assert_eq!(report["state"], "open", "{report}");
        assert!(
            report["errors"]["provider_circuit_open"]
                .as_u64()
                .unwrap_or(0)
                > 0
        );
    }

    mock.healthy.store(true, Ordering::SeqCst);
    let up = broadcast(&mut workers, "up").await;
    for report in &up {
        println!("  worker after recovery: {report}");
        assert_eq!(report["state"], "closed", "{report}");
        assert_eq!(report["ok"], 4);
    }
    for mut w in workers {
        assert!(w.child.wait().await.unwrap().success());
    }
}

async fn rate_limit(redis: String) {
    let (mock, mock_url) = mock::Mock::start().await;
    mock.healthy.store(true, Ordering::SeqCst);
    let prefix = unique_name("oa_rl");
    let mut workers = fleet("limited", &redis, &mock_url, &prefix).await;
    let started = Instant::now();
    let done = broadcast(&mut workers, "go").await;
    let elapsed = started.elapsed();
    let check = Duration::from_secs(1);
    let peak = mock.max_in_window(check);
    println!(
        "rate limit: {PROCESSES} processes x {} requests, shared limit {} per {:?}; \
         the mock received {} in {:.0} ms, at most {peak} in any {check:?}",
        worker::LIMITED_CALLS,
        worker::LIMIT_REQUESTS,
        worker::LIMIT_WINDOW,
        mock.count(),
        elapsed.as_secs_f64() * 1000.0
    );
    for report in &done {
        assert_eq!(report["ok"], worker::LIMITED_CALLS, "{report}");
    }
    assert_eq!(
        mock.count(),
        PROCESSES * worker::LIMITED_CALLS,
        "no request lost"
    );
    assert!(peak <= worker::LIMIT_REQUESTS as usize, "{peak}");
    assert!(
        elapsed >= worker::LIMIT_WINDOW,
        "the limiter made the fleet wait"
    );
    for mut w in workers {
        assert!(w.child.wait().await.unwrap().success());
    }
}
