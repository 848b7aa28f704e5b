//! Soak (extensions 0001, 0003, 0004): 32 concurrent invocations against a local
//! server that fails every request for a while, then recovers. With the retry
//! budget and the circuit breaker on, the requests stay within the budget's bound,
//! every invocation ends (degraded, none hung), and after recovery calls succeed.
//! Breaker and budget run on a manual clock (deterministic); backoffs are 2 ms of
//! real time. Run with `--nocapture` to see the figures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    state, CompiledGraph, GraphBuilder, NodeCtx, NodeError, Registration, END,
};
use openarmature_llm::resilience::{
    BreakerPolicy, BreakerState, CircuitBreaker, Endpoint, ResilientProvider, UsageAggregator,
};
use openarmature_llm::{CompletionRequest, Message, OpenAiProvider, Provider, Transport};
use openarmature_pipeline::retry::{
    Constant, RetryConfig, TokenBucket, TokenBucketConfig, TokioSleeper,
};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use openarmature_testkit::{ManualClock, MockServer, Reply, Script};

state! {
    /// One extraction.
    #[derive(Default)]
    pub struct Out => OutUpdate {
        /// The model's answer.
        pub answer: String,
        /// Set by failure isolation.
        pub degraded: bool,
    }
}

const INVOCATIONS: usize = 32;
const ATTEMPTS: u32 = 3; // per lane: up to 3 × 3 = 9 requests per logical call

/// A server answering 503 while unhealthy, 200 once healthy.
struct Upstream {
    healthy: Arc<AtomicBool>,
    server: MockServer,
}

impl Upstream {
    /// How many requests arrived so far.
    fn requests(&self) -> usize {
        self.server.request_count()
    }
}

async fn upstream() -> (String, Upstream) {
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&healthy);
    let server = Script::handler(move |_| {
        if flag.load(Ordering::SeqCst) {
            Reply::body(
                200,
                br#"{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#,
            )
        } else {
            Reply::body(
                503,
                br#"{"error":{"type":"service_unavailable","message":"down"}}"#,
            )
        }
    })
    .start()
    .await
    .unwrap();
    (server.base_url(), Upstream { healthy, server })
}

/// The three-piece pattern around one LLM call; `endpoint` switches the
/// extensions on.
fn pipeline(
    provider: Arc<dyn Provider>,
    endpoint: Option<&Arc<Endpoint>>,
    usage: &UsageAggregator,
) -> Arc<CompiledGraph<Out>> {
    let backoff = Constant(Duration::from_millis(2));
    let mut node_retry = RetryConfig::default()
        .max_attempts(ATTEMPTS)
        .backoff(backoff);
    if let Some(e) = endpoint {
        node_retry = node_retry
            .budget(e.retry_budget().unwrap())
            .sleeper(Endpoint::sleeper(e, Arc::new(TokioSleeper)));
    }
    let call_retry = RetryConfig::default()
        .max_attempts(ATTEMPTS)
        .backoff(backoff);
    let graph = GraphBuilder::new(Out::default())
        .add_node("extract", move |_s: Arc<Out>, ctx: NodeCtx| {
            let (p, retry) = (Arc::clone(&provider), call_retry.clone());
            async move {
                let request = CompletionRequest::new(vec![Message::user("extract")])
                    .retry(retry)
                    .in_node(&ctx);
                let r = p.complete(&request).await?;
                Ok::<OutUpdate, NodeError>(
                    OutUpdate::default().answer(r.content().unwrap_or_default().into()),
                )
            }
        })
        .node_middleware(
            "extract",
            Arc::new(FailureIsolationMiddleware::<Out>::new(
                "extract_degraded",
                |_| OutUpdate::default().degraded(true),
            )),
        )
        .node_middleware("extract", Arc::new(RetryMiddleware::new(node_retry)))
        .add_edge("extract", END)
        .entry("extract")
        .observer(Registration::new("usage", usage.clone()))
        .compile()
        .unwrap();
    Arc::new(graph)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Wave {
    ok: usize,
    degraded: usize,
    errored: usize,
    hung: usize,
    requests: usize,
    max_requests_per_call: usize,
}

async fn wave(graph: &Arc<CompiledGraph<Out>>, up: &Upstream, usage: &UsageAggregator) -> Wave {
    let before = up.requests();
    let tasks: Vec<_> = (0..INVOCATIONS)
        .map(|_| {
            let g = Arc::clone(graph);
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(10), g.invoke(Out::default())).await
            })
        })
        .collect();
    let mut w = Wave::default();
    for t in tasks {
        match t.await.unwrap() {
            Err(_) => w.hung += 1,
            Ok(Err(_)) => w.errored += 1,
            Ok(Ok(out)) if out.degraded => w.degraded += 1,
            Ok(Ok(_)) => w.ok += 1,
        }
    }
    graph.drain(Some(Duration::from_secs(5))).await;
    w.requests = up.requests() - before;
    let report = usage.report();
    for inv in &report {
        usage.take(&inv.invocation_id);
    }
    let calls: Vec<_> = report.iter().flat_map(|i| i.calls.iter()).collect();
    assert_eq!(calls.len(), INVOCATIONS, "one logical call per invocation");
    let accounted: usize = calls.iter().map(|c| c.wire_requests()).sum();
    assert_eq!(
        accounted, w.requests,
        "every request accounted to its logical call"
    );
    w.max_requests_per_call = calls.iter().map(|c| c.wire_requests()).max().unwrap_or(0);
    w
}

/// Retries may add 10 % of first attempts, plus 2 per minute.
fn budget_config() -> TokenBucketConfig {
    TokenBucketConfig {
        ratio: 0.1,
        floor: 2,
        floor_window: Duration::from_secs(60),
        max_tokens: 10.0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_upstream_is_not_stormed_and_recovery_is_picked_up() {
    // Baseline: the same pipeline without the extensions sends 3 × 3 per call.
    let (base, up) = upstream().await;
    let plain: Arc<dyn Provider> = Arc::new(
        OpenAiProvider::builder(&base, "m")
            .transport(Transport::default().no_proxy())
            .build()
            .unwrap(),
    );
    let usage = UsageAggregator::new();
    let baseline = wave(&pipeline(plain, None, &usage), &up, &usage).await;
    assert_eq!(baseline.requests, INVOCATIONS * 9);
    assert_eq!(baseline.degraded, INVOCATIONS);

    // The budget alone: the first attempts plus at most floor + ratio × first.
    let (base, up) = upstream().await;
    let alone = Arc::new(TokenBucket::with_clock(budget_config(), ManualClock::new()));
    let budget_only = Arc::new(Endpoint::new("budget-only").budget(alone.clone()));
    let inner = OpenAiProvider::builder(&base, "m")
        .transport(Transport::default().no_proxy())
        .build()
        .unwrap();
    let provider: Arc<dyn Provider> =
        Arc::new(ResilientProvider::new(inner, Arc::clone(&budget_only)));
    let usage = UsageAggregator::new();
    let budgeted = wave(&pipeline(provider, Some(&budget_only), &usage), &up, &usage).await;
    // (Which calls get the tokens depends on timing; the total cannot exceed this.)
    let bound = INVOCATIONS + 2 + 4;
    assert!(
        budgeted.requests <= bound,
        "{budgeted:?} {:?}",
        alone.snapshot()
    );
    assert_eq!((budgeted.degraded, budgeted.hung), (INVOCATIONS, 0));

    // With the budget and the breaker.
    let (base, up) = upstream().await;
    let clock = ManualClock::new();
    let policy = BreakerPolicy {
        consecutive_failures: 5,
        cooldown: Duration::from_secs(30),
        half_open_probes: 1,
        ..BreakerPolicy::default()
    };
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let breaker = CircuitBreaker::new("soak", policy).clock(Arc::new(clock.clone()));
    let log = Arc::clone(&transitions);
    breaker.on_transition(move |_, t| log.lock().unwrap().push((t.from, t.to)));
    let bucket = Arc::new(TokenBucket::with_clock(budget_config(), clock.clone()));
    let endpoint = Arc::new(
        Endpoint::new("soak")
            .breaker(breaker)
            .budget(bucket.clone()),
    );
    let inner = OpenAiProvider::builder(&base, "m")
        .transport(Transport::default().no_proxy())
        .build()
        .unwrap();
    let provider: Arc<dyn Provider> =
        Arc::new(ResilientProvider::new(inner, Arc::clone(&endpoint)));
    let usage = UsageAggregator::new();
    let graph = pipeline(provider, Some(&endpoint), &usage);

    // Outage: every request fails.
    let outage = wave(&graph, &up, &usage).await;
    let budget = bucket.snapshot();
    // Bound: each logical call's first attempt, plus retries the budget allows:
    // floor + ratio × first attempts.
    let first = usize::try_from(budget.first_attempts).unwrap();
    let bound = first + 2 + first.div_ceil(10);
    assert_eq!(outage.hung, 0);
    assert_eq!(outage.degraded + outage.errored, INVOCATIONS);
    assert!(outage.requests <= bound, "{outage:?} > {bound}");
    assert!(first <= INVOCATIONS);
    assert_eq!(
        endpoint.circuit_breaker().unwrap().state(),
        BreakerState::Open
    );

    // Recovery: the upstream heals, the cooldown passes; the first wave's probe
    // closes the breaker, then every call succeeds.
    up.healthy.store(true, Ordering::SeqCst);
    clock.advance(Duration::from_secs(30));
    let probing = wave(&graph, &up, &usage).await;
    assert_eq!(probing.hung, 0);
    assert!(probing.ok >= 1, "{probing:?}");
    assert_eq!(
        endpoint.circuit_breaker().unwrap().state(),
        BreakerState::Closed
    );
    let recovered = wave(&graph, &up, &usage).await;
    assert_eq!(recovered.ok, INVOCATIONS, "{recovered:?}");
    assert_eq!(recovered.requests, INVOCATIONS);

    println!(
        "soak: {INVOCATIONS} concurrent invocations, 3 node × 3 call attempts, upstream down then up\n\
         baseline (no extensions): {} requests, {:.2} per logical call\n\
         budget only: {} requests, {:.2} per logical call (max {})\n\
         outage  (budget+breaker): {} requests (bound {bound}), {:.2} per logical call (max {}), {} degraded, {} errored, {} hung; \
         budget first_attempts={} retries={} denied={}\n\
         probe wave after cooldown: {} ok, {} degraded, {} requests\n\
         recovered wave: {} ok, {} requests\n\
         breaker transitions: {:?}",
        baseline.requests,
        baseline.requests as f64 / INVOCATIONS as f64,
        budgeted.requests,
        budgeted.requests as f64 / INVOCATIONS as f64,
        budgeted.max_requests_per_call,
        outage.requests,
        outage.requests as f64 / INVOCATIONS as f64,
        outage.max_requests_per_call,
        outage.degraded,
        outage.errored,
        outage.hung,
        budget.first_attempts,
        budget.retries,
        budget.denied,
        probing.ok,
        probing.degraded,
        probing.requests,
        recovered.ok,
        recovered.requests,
        transitions.lock().unwrap(),
    );
}
