//! `progress::ProgressCounter`: fan-out item counts from the events of scripted
//! runs, replayed one event at a time (the counting, not any terminal drawing).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    observer_fn, CategorizedError, Category, CompiledGraph, GraphBuilder, NodeCtx, NodeError,
    ObserverEvent, Registration, END,
};
use openarmature_observability::progress::{FanOutProgress, ProgressCounter};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use serde_json::json;

use crate::fan_support::{fan_graph, run_items, Batch, Item, ItemUpdate};

/// How an item's `work` node behaves.
#[derive(Clone, Copy)]
struct Script {
    /// Fails once (a transient error), then succeeds.
    flaky: i64,
    /// Always fails.
    broken: i64,
}

fn transient() -> NodeError {
    NodeError::new(CategorizedError::new(Category::PROVIDER_UNAVAILABLE, "503"))
}

/// `fan` over `items` (concurrency 2); each instance runs `prep` → `work` (or `work`
/// alone), `work` behind isolation (optional) → retry (2 attempts) → the body.
fn graph(script: Script, isolate: bool, with_prep: bool) -> CompiledGraph<Batch> {
    let calls = Arc::new(AtomicU32::new(0));
    let work = move |s: Arc<Item>, _ctx: NodeCtx| {
        let calls = Arc::clone(&calls);
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if s.item == script.broken
                || (s.item == script.flaky && calls.fetch_add(1, Ordering::SeqCst) == 0)
            {
                return Err(transient());
            }
            Ok(ItemUpdate::default().result(json!(s.item * 10)))
        }
    };
    let mut builder = GraphBuilder::new(Item::default()).add_node("work", work);
    if isolate {
        builder = builder.node_middleware(
            "work",
            Arc::new(FailureIsolationMiddleware::<Item>::new(
                "work_degraded",
                |_s: &Item| ItemUpdate::default().result(json!("degraded")),
            )),
        );
    }
    builder = builder
        .node_middleware(
            "work",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(2)
                    .backoff(Constant(Duration::from_millis(5))),
            )),
        )
        .add_edge("work", END);
    builder = if with_prep {
        builder
            .add_node("prep", |_s: Arc<Item>, _ctx: NodeCtx| async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(ItemUpdate::default().prepared(true))
            })
            .add_edge("prep", "work")
            .entry("prep")
    } else {
        builder.entry("work")
    };
    fan_graph(builder.compile().unwrap(), 2)
}

/// Every event of one run, in delivery order.
async fn events_of(graph: &CompiledGraph<Batch>, items: Vec<i64>) -> Vec<Arc<ObserverEvent>> {
    let seen: Arc<Mutex<Vec<Arc<ObserverEvent>>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let observer = observer_fn(move |e: Arc<ObserverEvent>| {
        let sink = Arc::clone(&sink);
        async move {
            sink.lock().unwrap().push(e);
            Ok(())
        }
    });
    run_items(graph, items, Registration::new("all", observer)).await;
    let events = seen.lock().unwrap().clone();
    events
}

/// Replays `events` into `counter`; returns the counts after each event (of the one
/// fan-out, once it was seen).
fn replay(counter: &ProgressCounter, events: &[Arc<ObserverEvent>]) -> Vec<FanOutProgress> {
    events
        .iter()
        .filter_map(|e| {
            counter.observe(e);
            counter.snapshot().into_iter().next()
        })
        .collect()
}

/// What every step of a replay satisfies.
fn check_invariants(steps: &[FanOutProgress], concurrency: usize) {
    let mut finished = 0;
    for s in steps {
        assert!(s.in_flight <= concurrency, "{s:?}");
        assert!(s.finished() + s.in_flight <= s.total, "{s:?}");
        assert!(s.finished() >= finished, "finished went back: {s:?}");
        finished = s.finished();
    }
}

#[tokio::test]
async fn items_succeed_degrade_and_run_at_most_concurrency_at_once() {
    let script = Script {
        flaky: 1,
        broken: 3,
    };
    let events = events_of(&graph(script, true, false), vec![0, 1, 2, 3, 4]).await;
    let counter = ProgressCounter::new();
    let steps = replay(&counter, &events);
    check_invariants(&steps, 2);

    let first = &steps[0];
    assert_eq!(
        (
            first.fan_out.as_str(),
            first.total,
            first.finished(),
            first.in_flight
        ),
        ("fan", 5, 0, 0),
        "the fan-out's started event announces the items"
    );
    assert_eq!(steps.iter().map(|s| s.in_flight).max(), Some(2));
    // The degradation is counted when its failure-isolation event arrives.
    let at = events
        .iter()
        .position(|e| matches!(**e, ObserverEvent::FailureIsolation(_)))
        .unwrap();
    let before = ProgressCounter::new();
    let partial = replay(&before, &events[..at]);
    assert_eq!(partial.last().unwrap().degraded, 0);
    let partial = replay(&before, &events[at..=at]);
    assert_eq!(partial.last().unwrap().degraded, 1);

    let last = counter.snapshot();
    assert_eq!(last.len(), 1);
    let last = &last[0];
    assert_eq!(
        (
            last.total,
            last.succeeded,
            last.degraded,
            last.failed,
            last.cancelled,
            last.in_flight
        ),
        (5, 4, 1, 0, 0, 0),
        "{last:?}"
    );
}

#[tokio::test]
async fn an_instance_error_collected_by_the_fan_out_counts_as_failed() {
    let script = Script {
        flaky: -1,
        broken: 2,
    };
    let events = events_of(&graph(script, false, false), vec![0, 1, 2]).await;
    let counter = ProgressCounter::new();
    let steps = replay(&counter, &events);
    check_invariants(&steps, 2);
    // Until the fan-out completes, the failed instance's retries keep it open.
    let fan_out_done = events
        .iter()
        .rposition(|e| e.as_node().is_some_and(|n| n.fan_out_config.is_some()))
        .unwrap();
    let before = ProgressCounter::new();
    let open = replay(&before, &events[..fan_out_done]);
    assert_eq!(open.last().unwrap().failed, 0);
    let last = &counter.snapshot()[0];
    assert_eq!(
        (last.succeeded, last.degraded, last.failed, last.in_flight),
        (2, 0, 1, 0),
        "{last:?}"
    );
}

#[tokio::test]
async fn a_named_item_node_keeps_a_multi_node_item_in_flight_until_it_completes() {
    let script = Script {
        flaky: -1,
        broken: -1,
    };
    let events = events_of(&graph(script, true, true), vec![0, 1]).await;
    // The first `prep` completion of each instance.
    let prep_done = events
        .iter()
        .position(|e| {
            e.as_node()
                .is_some_and(|n| &*n.node_name == "prep" && n.post_state.is_some())
        })
        .unwrap();

    let named = ProgressCounter::new().item_node("work");
    let steps = replay(&named, &events[..=prep_done]);
    let at_prep = steps.last().unwrap();
    assert_eq!(
        (at_prep.succeeded, at_prep.in_flight),
        (0, 2),
        "{at_prep:?}"
    );
    replay(&named, &events[prep_done + 1..]);
    let last = &named.snapshot()[0];
    assert_eq!((last.succeeded, last.in_flight), (2, 0), "{last:?}");

    // Without the name, the first node's success finishes the item.
    let unnamed = ProgressCounter::new();
    let steps = replay(&unnamed, &events[..=prep_done]);
    assert_eq!(steps.last().unwrap().succeeded, 1);
}

#[cfg(feature = "progress")]
#[tokio::test]
async fn the_progress_observer_counts_a_live_run() {
    use openarmature_observability::progress::ProgressObserver;

    let script = Script {
        flaky: 0,
        broken: 1,
    };
    let graph = graph(script, true, false);
    let progress = ProgressObserver::hidden();
    run_items(&graph, vec![0, 1, 2], progress.registration()).await;
    progress.finish();
    let last = &progress.counter().snapshot()[0];
    assert_eq!(
        (last.total, last.succeeded, last.degraded, last.in_flight),
        (3, 2, 1, 0)
    );
}
