//! pipeline-utilities §6.2 — timing: node-name capture, per-graph naming, outcome
//! and category, the injectable monotonic clock, composition with retry, and
//! `on_complete` failures.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    CategorizedError, CompiledGraph, GraphBuilder, Middleware, NodeCtx, NodeError, Phase,
    RuntimeCategory, SubgraphNode, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    MonotonicClock, Outcome, RetryMiddleware, TimingMiddleware, TimingRecord,
};

use crate::common::*;

type Records = Arc<Mutex<Vec<TimingRecord>>>;

fn sink(
    records: &Records,
) -> impl Fn(TimingRecord) -> futures::future::Ready<Result<(), NodeError>> + Send + Sync + 'static
{
    let records = Arc::clone(records);
    move |r: TimingRecord| {
        records.lock().unwrap().push(r);
        futures::future::ready(Ok(()))
    }
}

fn timing(m: TimingMiddleware) -> Arc<dyn Middleware<S>> {
    Arc::new(m)
}

fn retry_const(ms: u64) -> Arc<dyn Middleware<S>> {
    Arc::new(RetryMiddleware::new(
        RetryConfig::default().backoff(Constant(Duration::from_millis(ms))),
    ))
}

/// A `TimingMiddleware` named `call` recording into `records`.
fn call_timing(records: &Records) -> Arc<dyn Middleware<S>> {
    timing(TimingMiddleware::new("call", sink(records)))
}

/// The node `call`, failing twice (`provider_unavailable`) and then succeeding, under
/// the node middleware `chain` in registration order (outermost first).
fn flaky_call(calls: &Arc<AtomicU32>, chain: [Arc<dyn Middleware<S>>; 2]) -> CompiledGraph<S> {
    chain
        .into_iter()
        .fold(
            GraphBuilder::new(S::default()).add_node(
                "call",
                flaky("call", calls, 2, Some("provider_unavailable")),
            ),
            |builder, middleware| builder.node_middleware("call", middleware),
        )
        .add_edge("call", END)
        .entry("call")
        .compile()
        .unwrap()
}

/// A node that sleeps `ms` of (virtual) time, then logs `name`.
fn slow(
    name: &'static str,
    ms: u64,
) -> impl Fn(Arc<S>, NodeCtx) -> futures::future::BoxFuture<'static, Result<SUpdate, NodeError>>
       + Send
       + Sync
       + 'static {
    move |_s: Arc<S>, _c: NodeCtx| {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(SUpdate::default().log(vec![name.to_owned()]))
        })
    }
}

/// The node `name`, sleeping `ms` (see [`slow`]), under the timing middleware
/// `timing_of` builds around the returned records.
fn slow_timed(
    name: &'static str,
    ms: u64,
    timing_of: impl FnOnce(&Records) -> TimingMiddleware,
) -> (CompiledGraph<S>, Records) {
    let records: Records = Arc::default();
    let graph = wrapped(name, slow(name, ms), timing(timing_of(&records)));
    (graph, records)
}

#[tokio::test(start_paused = true)]
async fn per_node_timing_records_the_captured_name_and_monotonic_duration() {
    let (graph, records) = slow_timed("extract", 250, |records| {
        TimingMiddleware::new("extract_label", sink(records))
    });
    graph.invoke(S::default()).await.unwrap();
    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r.node_name, "extract_label", "captured at registration");
    assert_eq!(r.outcome, Outcome::Success);
    assert_eq!(r.outcome.as_str(), "success");
    assert_eq!(r.exception_category, None);
    assert!(
        (250.0..251.0).contains(&r.duration_ms),
        "duration {} ms",
        r.duration_ms
    );
}

#[tokio::test(start_paused = true)]
async fn for_graph_names_every_node_it_wraps_but_not_subgraph_internals() {
    let records: Records = Arc::default();
    let child = single_node::<Child>("inner", |_s: Arc<Child>, _c: NodeCtx| async {
        Ok::<ChildUpdate, NodeError>(ChildUpdate::default())
    });
    let graph = GraphBuilder::new(S::default())
        .add_node("a", slow("a", 10))
        .add_node("b", slow("b", 30))
        .add_node("sub", SubgraphNode::<S, Child>::new(child))
        .graph_middleware(timing(TimingMiddleware::for_graph(sink(&records))))
        .add_edge("a", "b")
        .add_edge("b", "sub")
        .add_edge("sub", END)
        .entry("a")
        .compile()
        .unwrap();
    graph.invoke(S::default()).await.unwrap();
    let records = records.lock().unwrap().clone();
    let names: Vec<&str> = records.iter().map(|r| r.node_name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "sub"]);
    assert!((10.0..11.0).contains(&records[0].duration_ms));
    assert!((30.0..31.0).contains(&records[1].duration_ms));
}

#[tokio::test(start_paused = true)]
async fn a_failure_records_exception_outcome_and_category() {
    let records: Records = Arc::default();
    let calls = counter();
    let graph = wrapped(
        "call",
        failing(&calls, Some("provider_rate_limit")),
        call_timing(&records),
    );
    let err = graph.invoke(S::default()).await.unwrap_err();
    assert_eq!(
        err.original_message(),
        "fail 0",
        "timing re-raises the error"
    );
    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Exception);
    assert_eq!(records[0].outcome.as_str(), "exception");
    assert_eq!(
        records[0].exception_category.as_deref(),
        Some("provider_rate_limit")
    );

    // An error without a category records `None`.
    let records2: Records = Arc::default();
    let graph = wrapped("call", failing(&calls, None), call_timing(&records2));
    graph.invoke(S::default()).await.unwrap_err();
    let records2 = records2.lock().unwrap().clone();
    assert_eq!(records2[0].outcome, Outcome::Exception);
    assert_eq!(records2[0].exception_category, None);
}

/// Each reading advances by 7 ms.
struct StepClock(AtomicU64);

impl MonotonicClock for StepClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.fetch_add(7, Ordering::SeqCst))
    }
}

#[tokio::test(start_paused = true)]
async fn a_custom_clock_gives_an_exact_duration() {
    let (graph, records) = slow_timed("a", 1_000, |records| {
        TimingMiddleware::new("a", sink(records)).with_clock(StepClock(AtomicU64::new(100)))
    });
    graph.invoke(S::default()).await.unwrap();
    graph.invoke(S::default()).await.unwrap();
    let durations: Vec<f64> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.duration_ms)
        .collect();
    // Two readings per dispatch, 7 ms apart, regardless of the node's own 1 s.
    assert_eq!(durations, vec![7.0, 7.0]);
}

#[tokio::test(start_paused = true)]
async fn timing_outside_retry_records_once_including_backoff() {
    let records: Records = Arc::default();
    let calls = counter();
    let graph = flaky_call(&calls, [call_timing(&records), retry_const(100)]);
    graph.invoke(S::default()).await.unwrap();
    assert_eq!(count(&calls), 3);
    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Success);
    assert!(
        (200.0..201.0).contains(&records[0].duration_ms),
        "two 100 ms backoffs: {} ms",
        records[0].duration_ms
    );
}

#[tokio::test(start_paused = true)]
async fn timing_inside_retry_records_once_per_attempt() {
    let records: Records = Arc::default();
    let calls = counter();
    let graph = flaky_call(&calls, [retry_const(100), call_timing(&records)]);
    graph.invoke(S::default()).await.unwrap();
    let records = records.lock().unwrap().clone();
    let outcomes: Vec<(Outcome, Option<&str>)> = records
        .iter()
        .map(|r| (r.outcome, r.exception_category.as_deref()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (Outcome::Exception, Some("provider_unavailable")),
            (Outcome::Exception, Some("provider_unavailable")),
            (Outcome::Success, None),
        ]
    );
    assert!(
        records.iter().all(|r| r.duration_ms < 1.0),
        "backoff sleeps are outside each attempt: {records:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_on_complete_error_fails_the_node_with_node_exception() {
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(S::default())
        .add_node("a", logging("a"))
        .add_node("b", logging("b"))
        .node_middleware(
            "a",
            timing(TimingMiddleware::new("a", |_r: TimingRecord| async {
                Err::<(), NodeError>(CategorizedError::uncategorized("sink down").into())
            })),
        )
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .observer(registration)
        .compile()
        .unwrap();
    let err = graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "a");
    assert_eq!(err.original_message(), "sink down");
    assert_eq!(
        err.recoverable_state(),
        &S::default(),
        "the node's update is not merged"
    );
    let evs = node_events(&events);
    assert_eq!(evs.len(), 2, "b never runs");
    assert_eq!(evs[1].phase, Phase::Completed);
    let error = evs[1].error.as_ref().expect("completed with the error");
    assert_eq!(error.category, "node_exception");
    assert_eq!(error.message, "sink down");
}
