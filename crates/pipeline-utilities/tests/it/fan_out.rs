//! pipeline-utilities §9 — fan-out: fan-in order, bounded concurrency, error
//! policies, empty fan-outs, count mode, compile errors, instance middleware,
//! events and lineage, and cancellation when the invocation is dropped.
//! Virtual time throughout (`start_paused`).

use std::collections::BTreeMap;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    observer_fn, CategorizedError, CompileError, CompiledGraph, DynSchema, DynState, DynUpdate,
    FanOutConfig, FieldType, GraphBuilder, InvokeOptions, Middleware, NodeCtx, NodeError,
    NodeEvent, ObserverEvent, Phase, Registration, RuntimeCategory, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    classify, ErrorPolicy, FailureIsolationMiddleware, FanOutNode, OnEmpty, RetryMiddleware,
};
use serde_json::json;
use tokio::time::{sleep, Instant};

use crate::common::single_node;
use crate::common::{counter, isolation_events, node_events, recorder, Events, Group, Outer};

openarmature_graph::state! {
    /// One fan-out instance.
    #[derive(Default, PartialEq)]
    pub struct Item => ItemUpdate {
        /// The per-item input.
        pub x: i64,
        /// The collected output.
        pub y: i64,
        /// A value copied in through `inputs`.
        pub base: i64,
    }
}

openarmature_graph::state! {
    /// The parent graph.
    #[derive(Default, PartialEq)]
    pub struct Batch => BatchUpdate {
        /// The items fanned out over.
        pub xs: Vec<i64>,
        /// The collected outputs, in item order.
        pub ys: Vec<i64> => append,
        /// `collect` error records.
        pub errors: Vec<BTreeMap<String, String>> => append,
        /// Read by a computed count.
        pub n: i64,
        /// The fan-out's `count_field`.
        pub count: i64,
        /// Copied into every instance.
        pub base: i64,
        /// Not a list (for `fan_out_field_not_list`).
        pub label: String,
        /// Written by the downstream node.
        pub after: bool,
    }
}

type Shared<T> = Arc<Mutex<Vec<T>>>;

/// A one-node subgraph (`work`) running `body`.
pub(crate) fn worker<F, Fut>(body: F) -> CompiledGraph<Item>
where
    F: Fn(Arc<Item>, NodeCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ItemUpdate, NodeError>> + Send + 'static,
{
    single_node::<Item>("work", body)
}

/// A worker computing `y = 10 * x` at once.
fn times_ten() -> CompiledGraph<Item> {
    worker(|s: Arc<Item>, _c: NodeCtx| async move { Ok(ItemUpdate::default().y(s.x * 10)) })
}

/// `fan` → `after` → END, with a recording observer.
fn parent(fan: FanOutNode<Batch, Item>) -> (CompiledGraph<Batch>, Events) {
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(Batch::default())
        .add_node("fan", fan)
        .add_node("after", |_s: Arc<Batch>, _c: NodeCtx| async {
            Ok(BatchUpdate::default().after(true))
        })
        .add_edge("fan", "after")
        .add_edge("after", END)
        .entry("fan")
        .observer(registration)
        .compile()
        .unwrap();
    (graph, events)
}

/// The graph `fan` → END, to be finished (an observer, a checkpointer) and compiled.
pub(crate) fn fan_only(fan: FanOutNode<Batch, Item>) -> GraphBuilder<Batch> {
    GraphBuilder::new(Batch::default())
        .add_node("fan", fan)
        .add_edge("fan", END)
        .entry("fan")
}

fn compile_error(fan: FanOutNode<Batch, Item>) -> CompileError {
    fan_only(fan)
        .compile()
        .err()
        .expect("the graph must not compile")
}

/// Run counters for items 0..3 and a worker writing `y = x * 10` whose item 1 fails
/// its first run (`provider_unavailable`).
pub(crate) fn item_one_fails_once() -> (Arc<Vec<AtomicU32>>, CompiledGraph<Item>) {
    let calls: Arc<Vec<AtomicU32>> = Arc::new((0..3).map(|_| AtomicU32::new(0)).collect());
    let c = Arc::clone(&calls);
    let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
        let run = c[s.x as usize].fetch_add(1, Ordering::SeqCst);
        async move {
            if s.x == 1 && run == 0 {
                return Err(fail("provider_unavailable", "flaky"));
            }
            Ok(ItemUpdate::default().y(s.x * 10))
        }
    });
    (calls, graph)
}

/// A worker writing `y = x * 10` whose item 1 always fails (`provider_unavailable`).
pub(crate) fn item_one_fails() -> CompiledGraph<Item> {
    worker(|s: Arc<Item>, _c: NodeCtx| async move {
        if s.x == 1 {
            return Err(fail("provider_unavailable", "down"));
        }
        Ok(ItemUpdate::default().y(s.x * 10))
    })
}

/// Failure isolation degrading a failed instance to `y = -1`, its event named
/// `event_name`.
pub(crate) fn degrade_to_minus_one(event_name: &'static str) -> Arc<dyn Middleware<Item>> {
    Arc::new(FailureIsolationMiddleware::<Item>::with_update(
        event_name,
        ItemUpdate::default().y(-1),
    ))
}

/// An instance retry with a constant 10 ms backoff.
pub(crate) fn instance_retry() -> Arc<dyn Middleware<Item>> {
    Arc::new(RetryMiddleware::new(
        RetryConfig::default().backoff(Constant(Duration::from_millis(10))),
    ))
}

pub(crate) fn batch(xs: Vec<i64>) -> Batch {
    Batch {
        xs,
        ..Batch::default()
    }
}

pub(crate) fn fail(category: &str, message: impl Into<String>) -> NodeError {
    CategorizedError::new(openarmature_graph::Category::from_name(category), message).into()
}

/// An instance count read from an int state field, as a user's callable would:
/// a negative value is the spec's `fan_out_invalid_count` (§9.1).
fn count_of(n: i64) -> Result<usize, NodeError> {
    usize::try_from(n).map_err(|_| fail("fan_out_invalid_count", format!("count {n} < 0")))
}

/// A concurrency bound read from an int state field: zero or negative is the
/// spec's `fan_out_invalid_concurrency` (§9.2).
fn bound_of(n: i64) -> Result<Option<NonZeroUsize>, NodeError> {
    usize::try_from(n)
        .ok()
        .and_then(NonZeroUsize::new)
        .map(Some)
        .ok_or_else(|| fail("fan_out_invalid_concurrency", format!("bound {n} < 1")))
}

/// Tracks how many instances run at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
    }

    fn exit(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

/// A worker that sleeps 10 ms virtual, tracked by `gauge`, logging starts.
fn gauged(gauge: &Arc<Gauge>, starts: &Shared<i64>) -> CompiledGraph<Item> {
    let (gauge, starts) = (Arc::clone(gauge), Arc::clone(starts));
    worker(move |s: Arc<Item>, _c: NodeCtx| {
        let (gauge, starts) = (Arc::clone(&gauge), Arc::clone(&starts));
        async move {
            starts.lock().unwrap().push(s.x);
            gauge.enter();
            sleep(Duration::from_millis(10)).await;
            gauge.exit();
            Ok(ItemUpdate::default().y(s.x))
        }
    })
}

fn the_fan_node(events: &Events) -> Vec<NodeEvent> {
    node_events(events)
        .into_iter()
        .filter(|e| *e.namespace == ["fan".to_owned()])
        .collect()
}

fn inner_events(events: &Events, index: usize) -> Vec<(Phase, u32, bool)> {
    node_events(events)
        .into_iter()
        .filter(|e| e.namespace.join("/") == "fan/work" && e.fan_out_index == Some(index))
        .map(|e| (e.phase, e.attempt_index, e.error.is_some()))
        .collect()
}

// ---------------------------------------------------------------------------
// Ordering and concurrency (§9.2–§9.4)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn fan_in_follows_item_order_when_instances_finish_in_reverse() {
    const N: i64 = 5;
    let finished: Shared<i64> = Arc::default();
    let log = Arc::clone(&finished);
    let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
        let log = Arc::clone(&log);
        async move {
            sleep(Duration::from_millis(((N - s.x) * 10) as u64)).await;
            log.lock().unwrap().push(s.x);
            Ok(ItemUpdate::default().y(s.x * 10))
        }
    });
    let (graph, _events) = parent(FanOutNode::over_items(graph, "xs", "x", "y", "ys"));
    let started = Instant::now();
    let out = graph
        .invoke(Batch {
            xs: (0..N).collect(),
            ys: vec![-1],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(*finished.lock().unwrap(), vec![4, 3, 2, 1, 0]);
    assert_eq!(
        out.ys,
        vec![-1, 0, 10, 20, 30, 40],
        "append after the prior value, item order"
    );
    assert!(out.after, "downstream ran");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(50),
        "instances overlap"
    );
}

#[tokio::test(start_paused = true)]
async fn a_bound_of_two_caps_concurrency_and_starts_in_index_order() {
    let (gauge, starts): (Arc<Gauge>, Shared<i64>) = Default::default();
    let fan = FanOutNode::over_items(gauged(&gauge, &starts), "xs", "x", "y", "ys")
        .concurrency(NonZeroUsize::new(2));
    let (graph, events) = parent(fan);
    let started = Instant::now();
    let out = graph.invoke(batch((0..10).collect())).await.unwrap();
    graph.drain(None).await;
    assert_eq!(gauge.max(), 2);
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(50),
        "5 waves of 10 ms"
    );
    assert_eq!(*starts.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(out.ys, (0..10).collect::<Vec<_>>());
    let config = the_fan_node(&events)[0].fan_out_config.clone().unwrap();
    assert_eq!(config.concurrency, Some(2));
    assert_eq!(config.item_count, 10);
}

#[tokio::test(start_paused = true)]
async fn unbounded_runs_every_instance_at_once() {
    let (gauge, starts): (Arc<Gauge>, Shared<i64>) = Default::default();
    let fan =
        FanOutNode::over_items(gauged(&gauge, &starts), "xs", "x", "y", "ys").concurrency(None);
    let (graph, events) = parent(fan);
    let started = Instant::now();
    let out = graph.invoke(batch((0..25).collect())).await.unwrap();
    graph.drain(None).await;
    assert_eq!(gauge.max(), 25);
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(out.ys, (0..25).collect::<Vec<_>>());
    let config = the_fan_node(&events)[0].fan_out_config.clone().unwrap();
    assert_eq!(config.concurrency, None);
}

#[tokio::test(start_paused = true)]
async fn the_default_bound_is_ten_and_a_computed_bound_reads_the_state() {
    let (gauge, starts): (Arc<Gauge>, Shared<i64>) = Default::default();
    let (graph, _events) = parent(FanOutNode::over_items(
        gauged(&gauge, &starts),
        "xs",
        "x",
        "y",
        "ys",
    ));
    graph.invoke(batch((0..30).collect())).await.unwrap();
    assert_eq!(gauge.max(), 10, "default concurrency");

    let (gauge, starts): (Arc<Gauge>, Shared<i64>) = Default::default();
    let fan = FanOutNode::over_items(gauged(&gauge, &starts), "xs", "x", "y", "ys")
        .concurrency_with(|s: &Batch| bound_of(s.n));
    let (graph, _events) = parent(fan);
    let started = Instant::now();
    graph
        .invoke(Batch {
            n: 3,
            ..batch((0..9).collect())
        })
        .await
        .unwrap();
    assert_eq!(gauge.max(), 3);
    assert_eq!(started.elapsed(), Duration::from_millis(30));
}

/// §9.1 / §9.2: a callable `count` / `concurrency` is invoked once against the
/// entry snapshot ("Concurrency is resolved exactly once at fan-out entry").
#[tokio::test(start_paused = true)]
async fn count_and_concurrency_callables_run_once_per_fan_out_execution() {
    let (counts, bounds) = (counter(), counter());
    let (c, b) = (Arc::clone(&counts), Arc::clone(&bounds));
    let fan = FanOutNode::new(times_ten(), "y", "ys")
        .count_with(move |s: &Batch| {
            c.fetch_add(1, Ordering::SeqCst);
            count_of(s.n)
        })
        .concurrency_with(move |_s: &Batch| {
            b.fetch_add(1, Ordering::SeqCst);
            Ok(NonZeroUsize::new(2))
        });
    let (graph, _events) = parent(fan);
    graph
        .invoke(Batch {
            n: 3,
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(counts.load(Ordering::SeqCst), 1, "count callable calls");
    assert_eq!(
        bounds.load(Ordering::SeqCst),
        1,
        "concurrency callable calls"
    );
}

// ---------------------------------------------------------------------------
// Error policies (§9.5)
// ---------------------------------------------------------------------------

/// Counts drops: an instance's future being dropped is its cleanup opportunity.
struct DropCount(Arc<AtomicU32>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A worker writing `y = x` whose item 1 fails (`bad_item`, "item 1 is bad") after
/// 5 ms while every other item sleeps 10 s and then counts itself in `finished`; every
/// instance body counts its drop in `dropped`.
pub(crate) fn item_one_fails_fast(
    finished: &Arc<AtomicU32>,
    dropped: &Arc<AtomicU32>,
) -> CompiledGraph<Item> {
    let (f, d) = (Arc::clone(finished), Arc::clone(dropped));
    worker(move |s: Arc<Item>, _c: NodeCtx| {
        let (finished, guard) = (Arc::clone(&f), DropCount(Arc::clone(&d)));
        async move {
            let _guard = guard;
            if s.x == 1 {
                sleep(Duration::from_millis(5)).await;
                return Err(fail("bad_item", "item 1 is bad"));
            }
            sleep(Duration::from_secs(10)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(ItemUpdate::default().y(s.x))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn fail_fast_cancels_siblings_and_propagates_the_instance_error_in_a_carrier() {
    let (finished, dropped) = (counter(), counter());
    let graph = item_one_fails_fast(&finished, &dropped);
    let (graph, events) = parent(FanOutNode::over_items(graph, "xs", "x", "y", "ys"));
    let initial = Batch {
        ys: vec![7],
        ..batch(vec![0, 1, 2])
    };
    let started = Instant::now();
    let err = graph.invoke(initial.clone()).await.unwrap_err();
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(5),
        "no wait for siblings"
    );
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        3,
        "every instance body was dropped"
    );
    sleep(Duration::from_secs(60)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0, "siblings never resumed");

    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "fan");
    assert_eq!(err.namespace(), ["fan", "work"]);
    assert_eq!(err.recoverable_state(), &initial, "the entry snapshot");
    assert_eq!(err.original_message(), "item 1 is bad");
    let classified = classify(err.cause());
    assert!(classified.chain[0].carrier, "outermost link is a carrier");
    let last = classified.chain.last().unwrap();
    assert_eq!(
        (
            last.category.as_deref(),
            last.message.as_str(),
            last.carrier
        ),
        (Some("bad_item"), "item 1 is bad", false)
    );
    assert_eq!(classified.category.as_deref(), Some("bad_item"));

    graph.drain(None).await;
    let fan = the_fan_node(&events);
    assert_eq!(fan.len(), 2, "one started, one failed completed");
    assert_eq!(fan[1].error.as_ref().unwrap().category, "node_exception");
    assert!(!node_events(&events)
        .iter()
        .any(|e| e.node_name.as_ref() == "after"));
}

#[tokio::test(start_paused = true)]
async fn fail_fast_under_a_bound_never_starts_the_pending_instances() {
    let starts: Shared<i64> = Arc::default();
    let log = Arc::clone(&starts);
    let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
        log.lock().unwrap().push(s.x);
        async move {
            sleep(Duration::from_millis(10)).await;
            if s.x == 1 {
                return Err(fail("bad_item", "item 1 is bad"));
            }
            Ok(ItemUpdate::default().y(s.x))
        }
    });
    let fan = FanOutNode::over_items(graph, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(2));
    let (graph, _events) = parent(fan);
    let err = graph.invoke(batch(vec![0, 1, 2, 3, 4])).await.unwrap_err();
    assert_eq!(classify(err.cause()).category.as_deref(), Some("bad_item"));
    sleep(Duration::from_secs(60)).await;
    // 0 and 1 start together; 0 succeeds and frees a slot for 2 just before 1
    // fails (same instant, completion order 0 then 1) — 3 and 4 never start.
    let started = starts.lock().unwrap().clone();
    assert!(started.starts_with(&[0, 1]), "{started:?}");
    assert!(
        !started.contains(&3) && !started.contains(&4),
        "{started:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_on_the_fan_out_node_redispatches_every_instance() {
    let (runs, failed_once) = (counter(), Arc::new(AtomicU32::new(0)));
    let (r, f) = (Arc::clone(&runs), Arc::clone(&failed_once));
    let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
        r.fetch_add(1, Ordering::SeqCst);
        let first = s.x == 2 && f.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                return Err(fail("provider_unavailable", "once"));
            }
            Ok(ItemUpdate::default().y(s.x))
        }
    });
    let (registration, events) = recorder();
    let retry: Arc<dyn Middleware<Batch>> = Arc::new(RetryMiddleware::new(
        RetryConfig::default().backoff(Constant(Duration::ZERO)),
    ));
    let graph = fan_only(
        FanOutNode::over_items(graph, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(1)),
    )
    .node_middleware("fan", retry)
    .observer(registration)
    .compile()
    .unwrap();
    let out = graph.invoke(batch(vec![0, 1, 2])).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.ys, vec![0, 1, 2], "only the successful attempt merged");
    assert_eq!(runs.load(Ordering::SeqCst), 6, "3 + 3 instance runs");
    let fan = the_fan_node(&events);
    let shape: Vec<(Phase, u32, bool)> = fan
        .iter()
        .map(|e| (e.phase, e.attempt_index, e.fan_out_config.is_some()))
        .collect();
    assert_eq!(
        shape,
        [
            (Phase::Started, 0, true),
            (Phase::Completed, 0, true),
            (Phase::Started, 1, true),
            (Phase::Completed, 1, true),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn collect_records_errors_and_omits_failed_slots() {
    let graph = worker(|s: Arc<Item>, _c: NodeCtx| async move {
        sleep(Duration::from_millis((10 - s.x) as u64)).await;
        if s.x % 2 == 1 {
            return Err(fail("bad_item", format!("item {} is bad", s.x)));
        }
        Ok(ItemUpdate::default().y(s.x * 10))
    });
    let fan = FanOutNode::over_items(graph, "xs", "x", "y", "ys")
        .error_policy(ErrorPolicy::Collect)
        .errors_field("errors")
        .count_field("count");
    let (graph, events) = parent(fan);
    let out = graph.invoke(batch(vec![0, 1, 2, 3, 4])).await.unwrap();
    assert_eq!(out.ys, vec![0, 20, 40], "failed slots omitted, order kept");
    assert_eq!(out.count, 5, "count_field is the resolved count");
    assert!(out.after);
    assert_eq!(out.errors.len(), 2);
    for (record, index) in out.errors.iter().zip([1, 3]) {
        assert_eq!(record["fan_out_index"], index.to_string());
        assert_eq!(record["category"], "node_exception");
        assert!(
            record["message"].contains(&format!("item {index} is bad")),
            "{record:?}"
        );
        assert_eq!(record.len(), 3, "{record:?}");
    }
    graph.drain(None).await;
    let config = the_fan_node(&events)[0].fan_out_config.clone().unwrap();
    assert_eq!(config.error_policy, "collect");
}

#[tokio::test(start_paused = true)]
async fn collect_never_raises_even_when_every_instance_fails() {
    let graph = worker(|s: Arc<Item>, _c: NodeCtx| async move {
        Err::<ItemUpdate, _>(fail("bad_item", format!("item {}", s.x)))
    });
    let fan = FanOutNode::over_items(graph, "xs", "x", "y", "ys")
        .error_policy(ErrorPolicy::Collect)
        .errors_field("errors");
    let (graph, _events) = parent(fan);
    let out = graph.invoke(batch(vec![0, 1, 2])).await.unwrap();
    assert!(out.ys.is_empty());
    let indices: Vec<&str> = out
        .errors
        .iter()
        .map(|r| r["fan_out_index"].as_str())
        .collect();
    assert_eq!(indices, ["0", "1", "2"]);
    assert!(out.after);
}

#[tokio::test(start_paused = true)]
async fn collect_on_dyn_state_writes_string_records() {
    let child = DynSchema::builder()
        .field("idx", FieldType::Int, json!(-1))
        .field("result", FieldType::Int, json!(0))
        .build();
    let parent_schema = DynSchema::builder()
        .field("items", FieldType::parse("list<int>").unwrap(), json!([]))
        .field("results", FieldType::parse("list<int>").unwrap(), json!([]))
        .reducer("results", openarmature_graph::reducers::Reducer::Append)
        .field(
            "errors",
            FieldType::parse("list<dict<string,string>>").unwrap(),
            json!([]),
        )
        .reducer("errors", openarmature_graph::reducers::Reducer::Append)
        .build();
    let sub = GraphBuilder::new(child.defaults())
        .add_node("maybe", |s: Arc<DynState>, _c: NodeCtx| async move {
            let idx = s.get("idx").and_then(|v| v.as_i64()).unwrap();
            if idx == 1 {
                return Err(fail("bad_item", "boom"));
            }
            Ok(DynUpdate::new().set("result", json!(idx * 100)))
        })
        .add_edge("maybe", END)
        .entry("maybe")
        .compile()
        .unwrap();
    let graph = GraphBuilder::new(parent_schema.defaults())
        .add_node(
            "process",
            FanOutNode::<DynState, DynState>::over_items(sub, "items", "idx", "result", "results")
                .error_policy(ErrorPolicy::Collect)
                .errors_field("errors"),
        )
        .add_edge("process", END)
        .entry("process")
        .compile()
        .unwrap();
    let initial = parent_schema
        .state_from_json(&json!({"items": [0, 1, 2]}))
        .unwrap();
    let out = graph.invoke(initial).await.unwrap();
    assert_eq!(out.get("results"), Some(&json!([0, 200])));
    let errors = out.get("errors").unwrap().as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["fan_out_index"], json!("1"));
    assert_eq!(errors[0]["category"], json!("node_exception"));
}

// ---------------------------------------------------------------------------
// Empty fan-outs and count mode (§9.1)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn on_empty_raise_is_fan_out_empty_with_the_entry_state() {
    let fan = FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").count_field("count");
    let (graph, events) = parent(fan);
    let initial = Batch {
        count: -1,
        ys: vec![5],
        ..Batch::default()
    };
    let err = graph.invoke(initial.clone()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.node(), "fan");
    assert_eq!(
        classify(err.cause()).category.as_deref(),
        Some("fan_out_empty")
    );
    assert_eq!(err.recoverable_state(), &initial, "count_field not written");
    graph.drain(None).await;
    let fan = the_fan_node(&events);
    assert_eq!(
        fan[0].phase,
        Phase::Started,
        "started fires before the count"
    );
    assert!(!node_events(&events)
        .iter()
        .any(|e| e.node_name.as_ref() == "after"));
}

#[tokio::test(start_paused = true)]
async fn on_empty_raise_also_covers_a_computed_zero_count() {
    let fan = FanOutNode::new(times_ten(), "y", "ys").count_with(|s: &Batch| count_of(s.n));
    let (graph, _events) = parent(fan);
    let err = graph.invoke(Batch::default()).await.unwrap_err();
    assert_eq!(
        classify(err.cause()).category.as_deref(),
        Some("fan_out_empty")
    );
}

#[tokio::test(start_paused = true)]
async fn on_empty_noop_writes_a_zero_count_and_continues() {
    let fan = FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys")
        .on_empty(OnEmpty::Noop)
        .count_field("count")
        .error_policy(ErrorPolicy::Collect)
        .errors_field("errors");
    let (graph, events) = parent(fan);
    let out = graph
        .invoke(Batch {
            count: -1,
            ys: vec![5],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(out.count, 0);
    assert_eq!(
        out.ys,
        vec![5],
        "empty contribution leaves the target unchanged"
    );
    assert!(out.errors.is_empty());
    assert!(out.after);
    graph.drain(None).await;
    let fan = the_fan_node(&events);
    assert_eq!(fan.len(), 2);
    assert_eq!(fan[1].phase, Phase::Completed);
    let post = fan[1].post_state.as_ref().unwrap().to_json();
    assert_eq!(post["ys"], json!([5]));
    assert_eq!(post["count"], json!(0));
    assert_eq!(fan[0].fan_out_config.as_ref().unwrap().item_count, 0);
}

#[tokio::test(start_paused = true)]
async fn count_mode_with_a_literal_count_and_inputs() {
    let graph = worker(|s: Arc<Item>, c: NodeCtx| async move {
        assert_eq!(s.x, 0, "no item projection in count mode");
        let index = c.fan_out_index().unwrap() as i64;
        Ok(ItemUpdate::default().y(s.base + index))
    });
    let fan = FanOutNode::new(graph, "y", "ys")
        .count(3)
        .inputs([("base", "base")])
        .count_field("count");
    let (graph, events) = parent(fan);
    let out = graph
        .invoke(Batch {
            base: 100,
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(out.ys, vec![100, 101, 102]);
    assert_eq!(out.count, 3);
    graph.drain(None).await;
    assert_eq!(
        the_fan_node(&events)[0].fan_out_config,
        Some(FanOutConfig {
            item_count: 3,
            concurrency: Some(10),
            error_policy: "fail_fast".into(),
            parent_node_name: "fan".into(),
        })
    );
}

#[tokio::test(start_paused = true)]
async fn count_mode_with_a_computed_count() {
    let fan = FanOutNode::new(times_ten(), "y", "ys")
        .count_with(|s: &Batch| count_of(s.n * 2))
        .count_field("count");
    let (graph, _events) = parent(fan);
    let out = graph
        .invoke(Batch {
            n: 2,
            ..Batch::default()
        })
        .await
        .unwrap();
    assert_eq!(out.ys, vec![0, 0, 0, 0], "x stays at its default");
    assert_eq!(out.count, 4);
}

#[tokio::test(start_paused = true)]
async fn a_callable_rejecting_a_negative_count_fails_with_its_category() {
    let fan = FanOutNode::new(times_ten(), "y", "ys").count_with(|s: &Batch| count_of(s.n - 10));
    let (graph, _events) = parent(fan);
    let initial = Batch {
        n: 9,
        ..Batch::default()
    };
    let err = graph.invoke(initial.clone()).await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(
        classify(err.cause()).category.as_deref(),
        Some("fan_out_invalid_count")
    );
    assert_eq!(err.recoverable_state(), &initial);
}

#[tokio::test(start_paused = true)]
async fn a_callable_rejecting_a_non_positive_bound_fails_with_its_category() {
    for bound in [0, -2] {
        let fan = FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys")
            .concurrency_with(|s: &Batch| bound_of(s.n));
        let (graph, _events) = parent(fan);
        let input = Batch {
            n: bound,
            ..batch(vec![1, 2])
        };
        let err = graph.invoke(input).await.unwrap_err();
        assert_eq!(err.category(), RuntimeCategory::NodeException);
        assert_eq!(
            classify(err.cause()).category.as_deref(),
            Some("fan_out_invalid_concurrency"),
            "bound {bound}"
        );
    }
}

// ---------------------------------------------------------------------------
// Compile errors (§9 Configuration, §9.8)
// ---------------------------------------------------------------------------

#[test]
fn neither_or_both_modes_is_fan_out_count_mode_ambiguous() {
    let neither = FanOutNode::new(times_ten(), "y", "ys");
    let both = FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").count(2);
    let item_in_count_mode = FanOutNode::new(times_ten(), "y", "ys")
        .count(2)
        .item_field("x");
    for fan in [neither, both, item_in_count_mode] {
        assert_eq!(
            compile_error(fan).category(),
            "fan_out_count_mode_ambiguous"
        );
    }
}

#[test]
fn a_non_list_items_field_is_fan_out_field_not_list() {
    let fan = FanOutNode::over_items(times_ten(), "label", "x", "y", "ys");
    assert_eq!(compile_error(fan).category(), "fan_out_field_not_list");
}

#[test]
fn undeclared_fields_are_mapping_references_undeclared_field() {
    let cases = [
        FanOutNode::over_items(times_ten(), "nope", "x", "y", "ys"),
        FanOutNode::over_items(times_ten(), "xs", "nope", "y", "ys"),
        FanOutNode::over_items(times_ten(), "xs", "x", "nope", "ys"),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "nope"),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").errors_field("nope"),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").count_field("nope"),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").inputs([("nope", "base")]),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").inputs([("base", "nope")]),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").extra_outputs([("nope", "y")]),
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys")
            .extra_outputs([("count", "nope")]),
        // count_field must be int-typed.
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").count_field("label"),
    ];
    for (i, fan) in cases.into_iter().enumerate() {
        assert_eq!(
            compile_error(fan).category(),
            "mapping_references_undeclared_field",
            "case {i}"
        );
    }
}

#[test]
fn a_static_degraded_update_without_the_collect_field_is_rejected() {
    let isolation: Arc<dyn Middleware<Item>> = Arc::new(
        FailureIsolationMiddleware::<Item>::with_update("degraded", ItemUpdate::default().x(1)),
    );
    let fan =
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").instance_middleware(isolation);
    assert_eq!(
        compile_error(fan).category(),
        "fan_out_degraded_update_missing_collect_field"
    );

    // Covering collect_field, or the callable form, compiles.
    let covering: Arc<dyn Middleware<Item>> = Arc::new(
        FailureIsolationMiddleware::<Item>::with_update("degraded", ItemUpdate::default().y(-1)),
    );
    let callable: Arc<dyn Middleware<Item>> = Arc::new(FailureIsolationMiddleware::<Item>::new(
        "degraded",
        |_s: &Item| ItemUpdate::default().x(1),
    ));
    for middleware in [covering, callable] {
        single_node::<Batch>(
            "fan",
            FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys")
                .instance_middleware(middleware),
        );
    }
}

// ---------------------------------------------------------------------------
// Instance middleware (§9.7)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn instance_retry_reruns_only_the_failing_instance() {
    let (calls, graph) = item_one_fails_once();
    let retry = instance_retry();
    let (graph, events) =
        parent(FanOutNode::over_items(graph, "xs", "x", "y", "ys").instance_middleware(retry));
    let out = graph.invoke(batch(vec![0, 1, 2])).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.ys, vec![0, 10, 20]);
    let runs: Vec<u32> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert_eq!(runs, [1, 2, 1]);

    use Phase::{Completed, Started};
    assert_eq!(
        inner_events(&events, 1),
        [
            (Started, 0, false),
            (Completed, 0, true),
            (Started, 1, false),
            (Completed, 1, false),
        ]
    );
    for sibling in [0, 2] {
        assert_eq!(
            inner_events(&events, sibling),
            [(Started, 0, false), (Completed, 0, false)]
        );
    }
    let fan = the_fan_node(&events);
    assert_eq!(fan.len(), 2, "the fan-out node is one dispatch");
    assert!(fan.iter().all(|e| e.attempt_index == 0));
}

#[tokio::test(start_paused = true)]
async fn instance_failure_isolation_degrades_one_slot() {
    let graph = item_one_fails();
    let isolation = degrade_to_minus_one("instance_degraded");
    let (graph, events) =
        parent(FanOutNode::over_items(graph, "xs", "x", "y", "ys").instance_middleware(isolation));
    let out = graph.invoke(batch(vec![0, 1, 2])).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.ys, vec![0, -1, 20], "the degraded update fills slot 1");
    assert!(out.after);

    let caught = isolation_events(&events);
    assert_eq!(caught.len(), 1);
    let event = &caught[0];
    assert_eq!(event.event_name, "instance_degraded");
    assert_eq!(event.lineage.fan_out_index, Some(1));
    assert_eq!(event.lineage.fan_out_index_chain.last(), Some(&Some(1)));
    assert_eq!(
        event.lineage.namespace.first().map(String::as_str),
        Some("fan")
    );
    assert_eq!(
        event.caught_exception.category.as_deref(),
        Some("provider_unavailable")
    );
    assert_eq!(
        event.pre_state.to_json()["x"],
        json!(1),
        "the instance's state"
    );
    assert_eq!(event.post_state, json!({"y": -1}));
}

#[tokio::test(start_paused = true)]
async fn a_callable_degrade_omitting_the_collect_field_yields_a_null_slot() {
    openarmature_graph::state! {
        /// A parent whose collection tolerates nulls.
        #[derive(Default)]
        pub struct Loose => LooseUpdate {
            /// Items.
            pub xs: Vec<i64>,
            /// Collected, nullable.
            pub ys: Vec<Option<i64>> => append,
        }
    }
    let graph = worker(|s: Arc<Item>, _c: NodeCtx| async move {
        if s.x == 1 {
            return Err(fail("provider_unavailable", "down"));
        }
        Ok(ItemUpdate::default().y(s.x))
    });
    let isolation: Arc<dyn Middleware<Item>> = Arc::new(FailureIsolationMiddleware::<Item>::new(
        "degraded",
        |_s: &Item| ItemUpdate::default().base(5),
    ));
    let graph = single_node::<Loose>(
        "fan",
        FanOutNode::<Loose, Item>::over_items(graph, "xs", "x", "y", "ys")
            .instance_middleware(isolation),
    );
    let out = graph
        .invoke(Loose {
            xs: vec![0, 1, 2],
            ..Loose::default()
        })
        .await
        .unwrap();
    assert_eq!(out.ys, vec![Some(0), None, Some(2)]);
}

// ---------------------------------------------------------------------------
// Events and lineage (graph-engine §6)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn fan_out_and_instance_events_carry_config_and_lineage() {
    let fan =
        FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(2));
    let (graph, events) = parent(fan);
    let initial = batch(vec![3, 4, 5]);
    graph.invoke(initial.clone()).await.unwrap();
    graph.drain(None).await;

    let fan = the_fan_node(&events);
    assert_eq!(
        fan.iter().map(|e| e.phase).collect::<Vec<_>>(),
        [Phase::Started, Phase::Completed]
    );
    let expected = FanOutConfig {
        item_count: 3,
        concurrency: Some(2),
        error_policy: "fail_fast".into(),
        parent_node_name: "fan".into(),
    };
    for event in &fan {
        assert_eq!(event.fan_out_config.as_ref(), Some(&expected));
        assert_eq!(event.fan_out_index, None);
        assert!(event.fan_out_index_chain.is_empty());
        assert!(event.parallel_branches_config.is_none());
    }
    let post = fan[1].post_state.as_ref().unwrap().to_json();
    assert_eq!(post["ys"], json!([30, 40, 50]));

    let inner: Vec<NodeEvent> = node_events(&events)
        .into_iter()
        .filter(|e| e.namespace.join("/") == "fan/work")
        .collect();
    assert_eq!(inner.len(), 6);
    for event in &inner {
        let index = event
            .fan_out_index
            .expect("inner events carry fan_out_index");
        assert_eq!(&*event.fan_out_index_chain, [Some(index)]);
        assert_eq!(&*event.branch_name_chain, [None], "parallel chains");
        assert_eq!(event.branch_name, None);
        assert!(event.fan_out_config.is_none());
        assert_eq!(event.parent_states.len(), 1);
        assert_eq!(
            event.parent_states[0].to_json(),
            openarmature_graph::State::to_json(&initial)
        );
        assert_eq!(event.pre_state.to_json()["x"], json!(3 + index as i64));
    }
    // Each instance gets exactly one started and one completed.
    for index in 0..3 {
        assert_eq!(
            inner_events(&events, index),
            [(Phase::Started, 0, false), (Phase::Completed, 0, false)]
        );
    }
    // Instances start in index order.
    let starts: Vec<usize> = inner
        .iter()
        .filter(|e| e.phase == Phase::Started)
        .filter_map(|e| e.fan_out_index)
        .collect();
    assert_eq!(starts, [0, 1, 2]);
}

#[tokio::test(start_paused = true)]
async fn nested_fan_out_keeps_order_and_chains_indices() {
    let work = worker(|s: Arc<Item>, _c: NodeCtx| async move {
        sleep(Duration::from_millis((100 - s.x) as u64)).await;
        Ok(ItemUpdate::default().y(s.x * 10))
    });
    let middle = single_node::<Group>(
        "inner",
        FanOutNode::<Group, Item>::over_items(work, "xs", "x", "y", "ys"),
    );
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(Outer::default())
        .add_node(
            "outer",
            FanOutNode::<Outer, Group>::over_items(middle, "groups", "xs", "ys", "all"),
        )
        .add_edge("outer", END)
        .entry("outer")
        .observer(registration)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Outer {
            groups: vec![vec![1, 2], vec![3, 4, 5]],
            ..Outer::default()
        })
        .await
        .unwrap();
    graph.drain(None).await;
    assert_eq!(out.all, vec![vec![10, 20], vec![30, 40, 50]]);

    let all = node_events(&events);
    let work_events: Vec<&NodeEvent> = all
        .iter()
        .filter(|e| e.namespace.join("/") == "outer/inner/work")
        .collect();
    assert_eq!(work_events.len(), 10);
    for event in &work_events {
        let x = event.pre_state.to_json()["x"].as_i64().unwrap();
        let (outer, inner) = if x <= 2 {
            (0, x as usize - 1)
        } else {
            (1, x as usize - 3)
        };
        assert_eq!(
            &*event.fan_out_index_chain,
            [Some(outer), Some(inner)],
            "x={x}"
        );
        assert_eq!(event.fan_out_index, Some(inner));
        assert_eq!(event.parent_states.len(), 2);
    }
    let inner_fan: Vec<&NodeEvent> = all
        .iter()
        .filter(|e| e.namespace.join("/") == "outer/inner")
        .collect();
    assert_eq!(inner_fan.len(), 4, "one pair per outer instance");
    for event in &inner_fan {
        let config = event.fan_out_config.as_ref().unwrap();
        assert_eq!(config.parent_node_name, "inner");
        let outer = event.fan_out_index.unwrap();
        assert_eq!(&*event.fan_out_index_chain, [Some(outer)]);
        assert_eq!(config.item_count, [2, 3][outer]);
    }
    let outer_fan: Vec<&NodeEvent> = all
        .iter()
        .filter(|e| e.namespace.join("/") == "outer")
        .collect();
    assert_eq!(outer_fan.len(), 2);
    assert!(outer_fan.iter().all(|e| e.fan_out_index.is_none()));
}

// ---------------------------------------------------------------------------
// Cancellation (dropping the invocation)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn dropping_the_invocation_mid_fan_out_stops_every_instance() {
    let resource = Arc::new(String::from("connection pool"));
    let (started, finished, peak) = (counter(), counter(), Arc::new(AtomicUsize::new(0)));
    let (r, s, f, p) = (
        Arc::clone(&resource),
        Arc::clone(&started),
        Arc::clone(&finished),
        Arc::clone(&peak),
    );
    let graph = worker(move |item: Arc<Item>, _c: NodeCtx| {
        let held = Arc::clone(&r);
        let (started, finished, peak) = (Arc::clone(&s), Arc::clone(&f), Arc::clone(&p));
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            peak.fetch_max(Arc::strong_count(&held), Ordering::SeqCst);
            for _ in 0..10 {
                sleep(Duration::from_millis(100)).await;
                finished.fetch_add(1, Ordering::SeqCst);
            }
            drop(held);
            Ok(ItemUpdate::default().y(item.x))
        }
    });
    let (graph, events) = parent(
        FanOutNode::over_items(graph, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(2)),
    );
    // Test + the node closure.
    let baseline = Arc::strong_count(&resource);
    assert_eq!(baseline, 2);

    let outcome = tokio::time::timeout(
        Duration::from_millis(250),
        graph.invoke(batch(vec![0, 1, 2, 3])),
    )
    .await;
    assert!(outcome.is_err(), "the invocation timed out");
    assert_eq!(
        started.load(Ordering::SeqCst),
        2,
        "bound 2: two instances ran"
    );
    assert_eq!(
        peak.load(Ordering::SeqCst),
        baseline + 2,
        "both held the resource"
    );
    let progress = finished.load(Ordering::SeqCst);
    assert_eq!(progress, 4, "two ticks each before the timeout");
    assert_eq!(
        Arc::strong_count(&resource),
        baseline,
        "no instance still holds the resource"
    );

    sleep(Duration::from_secs(3600)).await;
    tokio::task::yield_now().await;
    assert_eq!(
        finished.load(Ordering::SeqCst),
        progress,
        "no instance progressed"
    );
    assert_eq!(
        started.load(Ordering::SeqCst),
        2,
        "no pending instance started"
    );
    assert_eq!(Arc::strong_count(&resource), baseline);

    graph.drain(None).await;
    assert!(
        !node_events(&events)
            .iter()
            .any(|e| e.node_name.as_ref() == "after"),
        "nothing downstream ran"
    );
    drop(graph);
    assert_eq!(Arc::strong_count(&resource), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_invocation_during_an_instance_retry_backoff_stops_it() {
    let calls = counter();
    let c = Arc::clone(&calls);
    let graph = worker(move |_s: Arc<Item>, _c: NodeCtx| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Err::<ItemUpdate, _>(fail("provider_unavailable", "down")) }
    });
    let retry: Arc<dyn Middleware<Item>> = Arc::new(RetryMiddleware::new(
        RetryConfig::default()
            .max_attempts(100)
            .backoff(Constant(Duration::from_secs(1))),
    ));
    let (graph, _events) =
        parent(FanOutNode::over_items(graph, "xs", "x", "y", "ys").instance_middleware(retry));
    let outcome =
        tokio::time::timeout(Duration::from_millis(1500), graph.invoke(batch(vec![0, 1]))).await;
    assert!(outcome.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 4, "two attempts per instance");
    sleep(Duration::from_secs(600)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 4, "no retry after the drop");
}

/// The `observer_fn` / `Registration` / `InvokeOptions` imports stay exercised: an
/// invocation-scoped observer sees the same instance events as a graph-attached one.
#[tokio::test(start_paused = true)]
async fn invocation_scoped_observers_see_instance_events() {
    let seen: Shared<Option<usize>> = Arc::default();
    let sink = Arc::clone(&seen);
    let registration = Registration::new(
        "scoped",
        observer_fn(move |e: Arc<ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                if let Some(n) = e.as_node() {
                    if n.phase == Phase::Started && n.namespace.join("/") == "fan/work" {
                        sink.lock().unwrap().push(n.fan_out_index);
                    }
                }
                Ok::<(), openarmature_graph::BoxError>(())
            }
        }),
    );
    let (graph, _events) = parent(FanOutNode::over_items(times_ten(), "xs", "x", "y", "ys"));
    graph
        .invoke_with(
            batch(vec![1, 2]),
            InvokeOptions::default().observer(registration),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    assert_eq!(*seen.lock().unwrap(), vec![Some(0), Some(1)]);
}
