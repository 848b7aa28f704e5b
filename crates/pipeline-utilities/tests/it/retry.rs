//! pipeline-utilities §6.1 — retry: per-attempt events, classification, backoff,
//! cancellation, the shared `RetryConfig::run` loop, and subgraph carriers.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    CategorizedError, CompiledGraph, GraphBuilder, Middleware, NodeError, Phase, RuntimeCategory,
    StateView, SubgraphNode, END,
};
use openarmature_pipeline::retry::{Constant, FullJitter, Linear, RetryConfig, Sleeper};
use openarmature_pipeline::RetryMiddleware;

use crate::common::*;

/// A shared log.
type Shared<T> = Arc<Mutex<Vec<T>>>;

fn retry(config: RetryConfig) -> Arc<dyn Middleware<S>> {
    Arc::new(RetryMiddleware::new(config))
}

fn zero() -> Constant {
    Constant(Duration::ZERO)
}

/// `call` (wrapped in `middleware`) → END, with a recording observer.
fn single_node_graph(
    node: impl openarmature_graph::Node<S>,
    middleware: Arc<dyn Middleware<S>>,
) -> (CompiledGraph<S>, Events) {
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(S::default())
        .add_node("call", node)
        .node_middleware("call", middleware)
        .add_edge("call", END)
        .entry("call")
        .observer(registration)
        .compile()
        .unwrap();
    (graph, events)
}

#[tokio::test(start_paused = true)]
async fn success_on_second_attempt_gives_one_event_pair_per_attempt() {
    let calls = counter();
    let (graph, events) = single_node_graph(
        flaky("call", &calls, 1, Some("provider_unavailable")),
        retry(RetryConfig::default().backoff(Constant(Duration::from_millis(10)))),
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;

    assert_eq!(out.result, "ok");
    assert_eq!(out.log, vec!["call".to_owned()]);
    assert_eq!(count(&calls), 2);

    let evs = node_events(&events);
    let shape: Vec<(Phase, u32)> = evs.iter().map(|e| (e.phase, e.attempt_index)).collect();
    assert_eq!(
        shape,
        vec![
            (Phase::Started, 0),
            (Phase::Completed, 0),
            (Phase::Started, 1),
            (Phase::Completed, 1),
        ]
    );
    assert!(
        evs.iter().all(|e| e.step == evs[0].step),
        "all attempts share one step"
    );

    let failed = &evs[1];
    let error = failed.error.as_ref().expect("failed attempt carries error");
    assert_eq!(error.category, "node_exception");
    assert_eq!(error.message, "fail 0");
    assert_eq!(
        error.derived_category().as_deref(),
        Some("provider_unavailable")
    );
    assert!(failed.post_state.is_none());

    let last = &evs[3];
    assert!(last.error.is_none());
    let post = last
        .post_state
        .as_ref()
        .expect("success carries post_state");
    assert_eq!(post.to_json()["result"], "ok");
}

#[tokio::test(start_paused = true)]
async fn exhaustion_returns_the_last_error_after_max_attempts() {
    let calls = counter();
    let (graph, events) = single_node_graph(
        failing(&calls, Some("provider_rate_limit")),
        retry(RetryConfig::default().max_attempts(3).backoff(zero())),
    );
    let err = graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;

    assert_eq!(count(&calls), 3);
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "call");
    assert_eq!(err.original_message(), "fail 2");
    assert_eq!(err.recoverable_state(), &S::default());

    let evs = node_events(&events);
    let indices: Vec<u32> = evs.iter().map(|e| e.attempt_index).collect();
    assert_eq!(indices, vec![0, 0, 1, 1, 2, 2]);
    let messages: Vec<String> = evs
        .iter()
        .filter(|e| e.phase == Phase::Completed)
        .map(|e| {
            assert!(e.post_state.is_none());
            e.error
                .as_ref()
                .expect("every attempt failed")
                .message
                .clone()
        })
        .collect();
    assert_eq!(messages, vec!["fail 0", "fail 1", "fail 2"]);
}

#[tokio::test(start_paused = true)]
async fn non_transient_and_uncategorised_errors_are_not_retried() {
    for category in [
        Some("provider_authentication"),
        Some("provider_invalid_model"),
        Some("provider_invalid_request"),
        Some("provider_invalid_response"),
        None,
    ] {
        let calls = counter();
        let (graph, events) = single_node_graph(
            failing(&calls, category),
            retry(RetryConfig::default().max_attempts(5).backoff(zero())),
        );
        let err = graph.invoke(S::default()).await.unwrap_err();
        graph.drain(None).await;
        assert_eq!(count(&calls), 1, "{category:?} must not be retried");
        assert_eq!(err.original_message(), "fail 0");
        assert_eq!(node_events(&events).len(), 2);
    }
}

#[tokio::test(start_paused = true)]
async fn every_transient_category_and_a_transient_marked_error_are_retried() {
    for category in [
        "provider_unavailable",
        "provider_rate_limit",
        "provider_model_not_loaded",
    ] {
        let calls = counter();
        let (graph, _) = single_node_graph(
            flaky("call", &calls, 2, Some(category)),
            retry(RetryConfig::default().backoff(zero())),
        );
        graph.invoke(S::default()).await.unwrap();
        assert_eq!(count(&calls), 3, "{category} must be retried");
    }

    let calls = counter();
    let c = Arc::clone(&calls);
    let node = move |_s: Arc<S>, _c: openarmature_graph::NodeCtx| {
        let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if n == 0 {
                Err(CategorizedError::uncategorized("marked")
                    .transient(true)
                    .into())
            } else {
                Ok(SUpdate::default().result("ok".into()))
            }
        }
    };
    let (graph, _) = single_node_graph(node, retry(RetryConfig::default().backoff(zero())));
    assert_eq!(graph.invoke(S::default()).await.unwrap().result, "ok");
    assert_eq!(count(&calls), 2);
}

#[tokio::test(start_paused = true)]
async fn max_attempts_one_disables_retry() {
    for max in [1, 0] {
        let calls = counter();
        let (graph, events) = single_node_graph(
            failing(&calls, Some("provider_unavailable")),
            retry(RetryConfig::default().max_attempts(max).backoff(zero())),
        );
        let err = graph.invoke(S::default()).await.unwrap_err();
        graph.drain(None).await;
        assert_eq!(count(&calls), 1, "max_attempts({max})");
        assert_eq!(err.original_message(), "fail 0");
        let shape: Vec<(Phase, u32)> = node_events(&events)
            .iter()
            .map(|e| (e.phase, e.attempt_index))
            .collect();
        assert_eq!(shape, vec![(Phase::Started, 0), (Phase::Completed, 0)]);
    }
}

#[tokio::test(start_paused = true)]
async fn a_custom_classifier_consults_the_state() {
    let seen: Shared<(String, Option<bool>)> = Arc::default();
    let seen_in = Arc::clone(&seen);
    let classifier = move |e: &(dyn StdError + 'static), state: Option<&dyn StateView>| {
        let flag = state
            .and_then(|s| s.as_any().downcast_ref::<S>())
            .map(|s| s.retryable);
        seen_in.lock().unwrap().push((e.to_string(), flag));
        flag == Some(true)
    };
    let config = RetryConfig::default()
        .backoff(zero())
        .classifier(classifier);

    // Uncategorised errors: the default classifier would never retry them.
    let calls = counter();
    let (graph, _) = single_node_graph(flaky("call", &calls, 1, None), retry(config.clone()));
    let initial = S {
        retryable: true,
        ..S::default()
    };
    assert_eq!(graph.invoke(initial).await.unwrap().result, "ok");
    assert_eq!(count(&calls), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("fail 0".to_owned(), Some(true))]
    );

    seen.lock().unwrap().clear();
    let calls = counter();
    let (graph, _) = single_node_graph(flaky("call", &calls, 1, None), retry(config));
    let err = graph.invoke(S::default()).await.unwrap_err();
    assert_eq!(err.original_message(), "fail 0");
    assert_eq!(count(&calls), 1);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("fail 0".to_owned(), Some(false))]
    );
}

/// Records each requested delay into a shared log, then returns at once.
struct RecordingSleeper(Arc<Mutex<Vec<String>>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0
            .lock()
            .unwrap()
            .push(format!("sleep {}ms", duration.as_millis()));
        Box::pin(async {})
    }
}

#[tokio::test(start_paused = true)]
async fn on_retry_fires_before_each_sleep_and_the_sleeper_sees_n_minus_one_delays() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let node_log = Arc::clone(&log);
    let node = move |_s: Arc<S>, _c: openarmature_graph::NodeCtx| {
        let mut log = node_log.lock().unwrap();
        let n = log.iter().filter(|l| l.starts_with("run")).count();
        log.push(format!("run {n}"));
        async move {
            Err::<SUpdate, NodeError>(
                CategorizedError::new(
                    openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                    format!("fail {n}"),
                )
                .into(),
            )
        }
    };
    let retry_log = Arc::clone(&log);
    let config = RetryConfig::default()
        .max_attempts(4)
        .backoff(Linear {
            initial: Duration::from_millis(100),
            step: Duration::from_millis(50),
            cap: Duration::from_secs(1),
        })
        .on_retry(move |e: Arc<dyn StdError + Send + Sync>, index: u32| {
            retry_log
                .lock()
                .unwrap()
                .push(format!("on_retry {index} {e}"));
            async {}
        })
        .sleeper(RecordingSleeper(Arc::clone(&log)));
    let (graph, _) = single_node_graph(node, retry(config));
    let err = graph.invoke(S::default()).await.unwrap_err();
    assert_eq!(err.original_message(), "fail 3");
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "run 0",
            "on_retry 0 fail 0",
            "sleep 100ms",
            "run 1",
            "on_retry 1 fail 1",
            "sleep 150ms",
            "run 2",
            "on_retry 2 fail 2",
            "sleep 200ms",
            "run 3",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn on_retry_and_sleeper_are_not_called_when_the_first_attempt_succeeds() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let retry_log = Arc::clone(&log);
    let config = RetryConfig::default()
        .on_retry(move |_e: Arc<dyn StdError + Send + Sync>, i: u32| {
            retry_log.lock().unwrap().push(format!("on_retry {i}"));
            async {}
        })
        .sleeper(RecordingSleeper(Arc::clone(&log)));
    let calls = counter();
    let (graph, _) = single_node_graph(flaky("call", &calls, 0, None), retry(config));
    graph.invoke(S::default()).await.unwrap();
    assert_eq!(count(&calls), 1);
    assert!(log.lock().unwrap().is_empty());
}

/// Records each requested delay, then sleeps it on the (paused) runtime clock.
struct RecordingTokioSleeper(Arc<Mutex<Vec<Duration>>>);

impl Sleeper for RecordingTokioSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0.lock().unwrap().push(duration);
        Box::pin(tokio::time::sleep(duration))
    }
}

#[tokio::test(start_paused = true)]
async fn default_full_jitter_backoff_stays_within_its_bounds_in_virtual_time() {
    assert_eq!(FullJitter::default().bound(0), Duration::from_secs(1));
    assert_eq!(FullJitter::default().bound(1), Duration::from_secs(2));
    assert_eq!(FullJitter::default().bound(10), Duration::from_secs(30));

    let mut totals = Vec::new();
    for _ in 0..20 {
        let delays: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let calls = counter();
        // Default config: 3 attempts, FullJitter(base 1 s, cap 30 s).
        let (graph, _) = single_node_graph(
            flaky("call", &calls, 2, Some("provider_unavailable")),
            retry(RetryConfig::default().sleeper(RecordingTokioSleeper(Arc::clone(&delays)))),
        );
        let started = tokio::time::Instant::now();
        graph.invoke(S::default()).await.unwrap();
        let elapsed = started.elapsed();
        assert_eq!(count(&calls), 3);
        assert!(
            elapsed <= Duration::from_secs(3),
            "elapsed {elapsed:?} > 1s + 2s"
        );
        let delays = delays.lock().unwrap().clone();
        assert_eq!(delays.len(), 2);
        assert!(delays[0] <= Duration::from_secs(1), "{delays:?}");
        assert!(delays[1] <= Duration::from_secs(2), "{delays:?}");
        totals.push(elapsed);
    }
    assert!(
        totals.iter().any(|t| *t != totals[0]),
        "full jitter must vary the delays: {totals:?}"
    );

    // The same through the default middleware (no sleeper override).
    let calls = counter();
    let (graph, _) = single_node_graph(
        flaky("call", &calls, 2, Some("provider_rate_limit")),
        Arc::new(RetryMiddleware::default()),
    );
    let started = tokio::time::Instant::now();
    graph.invoke(S::default()).await.unwrap();
    assert!(started.elapsed() <= Duration::from_secs(3));
    assert_eq!(count(&calls), 3);
}

#[tokio::test(start_paused = true)]
async fn cancellation_during_backoff_stops_retrying() {
    let calls = counter();
    let retries = counter();
    let r = Arc::clone(&retries);
    let (graph, _) = single_node_graph(
        failing(&calls, Some("provider_unavailable")),
        retry(
            RetryConfig::default()
                .max_attempts(5)
                .backoff(Constant(Duration::from_secs(10)))
                .on_retry(move |_e: Arc<dyn StdError + Send + Sync>, _i: u32| {
                    r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async {}
                }),
        ),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(5), graph.invoke(S::default())).await;
    assert!(
        outcome.is_err(),
        "the timeout fires during the backoff sleep"
    );
    assert_eq!(count(&calls), 1);

    tokio::time::sleep(Duration::from_secs(60)).await;
    tokio::time::advance(Duration::from_secs(60)).await;
    tokio::task::yield_now().await;
    assert_eq!(count(&calls), 1, "no attempt after cancellation");
    assert_eq!(count(&retries), 1);
}

#[tokio::test(start_paused = true)]
async fn cancellation_during_an_attempt_stops_retrying() {
    let calls = counter();
    let c = Arc::clone(&calls);
    let node = move |_s: Arc<S>, _c: openarmature_graph::NodeCtx| {
        c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Err::<SUpdate, NodeError>(
                CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "x")
                    .into(),
            )
        }
    };
    let (graph, _) = single_node_graph(node, retry(RetryConfig::default().backoff(zero())));
    let outcome = tokio::time::timeout(Duration::from_secs(5), graph.invoke(S::default())).await;
    assert!(outcome.is_err());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(count(&calls), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_config_run_without_a_graph() {
    let config = RetryConfig::default().max_attempts(3).backoff(zero());
    let mut indices = Vec::new();
    let result: Result<(), NodeError> = config
        .run(None, |i| {
            indices.push(i);
            async move {
                Err(CategorizedError::new(
                    openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                    format!("fail {i}"),
                )
                .into())
            }
        })
        .await;
    assert_eq!(result.unwrap_err().to_string(), "fail 2");
    assert_eq!(indices, vec![0, 1, 2]);

    let mut indices = Vec::new();
    let value = config
        .run(None, |i| {
            indices.push(i);
            async move {
                if i == 0 {
                    Err(CategorizedError::new(
                        openarmature_graph::Category::PROVIDER_RATE_LIMIT,
                        "slow",
                    )
                    .into())
                } else {
                    Ok::<u32, NodeError>(42)
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, 42);
    assert_eq!(indices, vec![0, 1]);

    // The call-level lane has no state: a classifier sees `None`.
    let states: Arc<Mutex<Vec<bool>>> = Arc::default();
    let s = Arc::clone(&states);
    let config = RetryConfig::default().backoff(zero()).classifier(
        move |_e: &(dyn StdError + 'static), state: Option<&dyn StateView>| {
            s.lock().unwrap().push(state.is_some());
            true
        },
    );
    let result: Result<(), NodeError> = config.run(None, |_| async { Err("nope".into()) }).await;
    assert_eq!(result.unwrap_err().to_string(), "nope");
    assert_eq!(*states.lock().unwrap(), vec![false, false]);
}

/// `prep` → `sub` (a subgraph whose `call` node fails per `error`, wrapped by
/// `middleware`) → `after` → END.
fn parent_with_subgraph(
    calls: &Arc<std::sync::atomic::AtomicU32>,
    failures: u32,
    error: impl Fn(u32) -> NodeError + Send + Sync + 'static,
    middleware: Arc<dyn Middleware<S>>,
) -> (CompiledGraph<S>, Events) {
    let child = single_node::<Child>("call", child_flaky(calls, failures, error));
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(S::default())
        .add_node("prep", logging("prep"))
        .add_node("sub", SubgraphNode::<S, Child>::new(child))
        .add_node("after", logging("after"))
        .node_middleware("sub", middleware)
        .add_edge("prep", "sub")
        .add_edge("sub", "after")
        .add_edge("after", END)
        .entry("prep")
        .observer(registration)
        .compile()
        .unwrap();
    (graph, events)
}

#[tokio::test(start_paused = true)]
async fn retry_around_a_subgraph_retries_a_carried_transient_and_inner_events_carry_the_attempt() {
    let calls = counter();
    let (graph, events) = parent_with_subgraph(
        &calls,
        1,
        |n| {
            CategorizedError::new(
                openarmature_graph::Category::PROVIDER_RATE_LIMIT,
                format!("slow {n}"),
            )
            .into()
        },
        retry(RetryConfig::default().backoff(zero())),
    );
    let result = graph.invoke(S::default()).await;
    graph.drain(None).await;
    assert_eq!(
        count(&calls),
        2,
        "the default classifier must treat a SubgraphFailure carrier whose cause is \
         provider_rate_limit as transient (outcome: {:?})",
        result.as_ref().map(|_| ()).map_err(|e| e.to_string())
    );
    let out = result.unwrap();
    assert_eq!(out.result, "ok");
    assert_eq!(out.log, vec!["prep", "call", "after"]);

    let inner = node_events_of(&events, "sub/call");
    let shape: Vec<(Phase, u32, bool)> = inner
        .iter()
        .map(|e| (e.phase, e.attempt_index, e.error.is_some()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (Phase::Started, 0, false),
            (Phase::Completed, 0, true),
            (Phase::Started, 1, false),
            (Phase::Completed, 1, false),
        ]
    );
    assert_eq!(inner[1].error.as_ref().unwrap().message, "slow 0");
    assert!(inner[3].post_state.is_some());
    // The subgraph-as-node itself emits no events; the parent's others are attempt 0.
    assert!(node_events_of(&events, "sub").is_empty());
    for name in ["prep", "after"] {
        let evs = node_events_of(&events, name);
        assert_eq!(evs.len(), 2);
        assert!(evs.iter().all(|e| e.attempt_index == 0));
    }
}

#[tokio::test(start_paused = true)]
async fn retry_around_a_subgraph_does_not_retry_a_carried_non_transient() {
    let calls = counter();
    let (graph, events) = parent_with_subgraph(
        &calls,
        1,
        |n| {
            CategorizedError::new(
                openarmature_graph::Category::PROVIDER_AUTHENTICATION,
                format!("denied {n}"),
            )
            .into()
        },
        retry(RetryConfig::default().backoff(zero())),
    );
    let err = graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;
    assert_eq!(count(&calls), 1);
    assert_eq!(err.namespace(), ["sub".to_owned(), "call".to_owned()]);
    assert_eq!(node_events_of(&events, "sub/call").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_default_classifier_looks_only_one_carrier_deep() {
    // sub (outer subgraph) → inner_sub (subgraph) → call: the transient sits two
    // carriers below the retry, which by design does not retry it.
    let calls = counter();
    let middle = nested_call(child_flaky(&calls, 1, down));
    let graph = wrapped(
        "sub",
        SubgraphNode::<S, Child>::new(middle),
        retry(RetryConfig::default().backoff(zero())),
    );
    let err = graph.invoke(S::default()).await.unwrap_err();
    assert_eq!(count(&calls), 1);
    assert_eq!(err.original_message(), "down");
}
