//! pipeline-utilities §9 through the dispatcher seam: the same fan-out behaviour
//! (item order, the concurrency bound, fail-fast, collect, degrade, instance retry,
//! per-instance checkpoint resume) with no dispatcher, the explicit in-process one,
//! and a dispatcher that sends every instance through a JSON round trip and runs it
//! as its own invocation, as a remote worker would. Virtual time throughout.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{Checkpointer, InMemoryCheckpointer, InstanceState};
use openarmature_graph::{
    CategorizedError, Category, CompiledGraph, InvokeOptions, NodeCtx, NodeError, RuntimeCategory,
    State,
};
use openarmature_pipeline::dispatch::{
    decode_state, run_job, InstanceFailure, InstanceJob, InstanceKey, InstanceRequest,
};
use openarmature_pipeline::{
    classify, ErrorPolicy, FanOutDispatcher, FanOutNode, InProcessDispatcher,
};
use serde_json::{json, Value};
use tokio::time::sleep;

use crate::common::single_node;
use crate::common::{counter, isolation_events, recorder, Group, Outer};
use crate::fan_out::{
    batch, degrade_to_minus_one, fail, fan_only, instance_retry, item_one_fails,
    item_one_fails_fast, item_one_fails_once, worker, Batch, Item, ItemUpdate,
};

/// Sends each instance through JSON to a "worker" ([`run_job`]) and its answer back,
/// recording every dispatch and how many are pending at once.
#[derive(Default)]
struct RoundTrip {
    sent: Mutex<Vec<(String, u32)>>,
    runs: Mutex<Vec<String>>,
    pending: AtomicUsize,
    max_pending: AtomicUsize,
}

impl RoundTrip {
    /// The keys dispatched so far, in dispatch order.
    fn keys(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.0.clone())
            .collect()
    }
}

impl<C: State> FanOutDispatcher<C> for RoundTrip {
    fn dispatch<'a>(
        &'a self,
        request: InstanceRequest<'a, C>,
    ) -> BoxFuture<'a, Result<C, NodeError>> {
        Box::pin(async move {
            let now = self.pending.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_pending.fetch_max(now, Ordering::SeqCst);
            let sent = (request.key().to_string(), request.attempt());
            self.sent.lock().unwrap().push(sent);
            self.runs.lock().unwrap().push(request.key().run_key());
            let wire = serde_json::to_string(&request.job()).unwrap();
            let job: InstanceJob = serde_json::from_str(&wire).unwrap();
            let answer = run_job(request.graph(), &job).await;
            let wire = serde_json::to_string(&answer).unwrap();
            let answer: Result<Value, InstanceFailure> = serde_json::from_str(&wire).unwrap();
            self.pending.fetch_sub(1, Ordering::SeqCst);
            match answer {
                Ok(state) => decode_state(request.graph().defaults(), state),
                Err(failure) => Err(request.failure(failure)),
            }
        })
    }
}

/// The dispatchers every behaviour runs under.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// No dispatcher set (the default path).
    Default,
    /// [`InProcessDispatcher`] set explicitly.
    InProcess,
    /// [`RoundTrip`].
    RoundTrip,
}

const MODES: [Mode; 3] = [Mode::Default, Mode::InProcess, Mode::RoundTrip];

impl Mode {
    /// `fan` with this mode's dispatcher, and the round-trip one to inspect.
    fn apply<P: State>(self, fan: FanOutNode<P, Item>) -> (FanOutNode<P, Item>, Arc<RoundTrip>) {
        let round_trip = Arc::new(RoundTrip::default());
        let fan = match self {
            Mode::Default => fan,
            Mode::InProcess => fan.dispatcher(Arc::new(InProcessDispatcher)),
            Mode::RoundTrip => fan.dispatcher(Arc::clone(&round_trip) as _),
        };
        (fan, round_trip)
    }
}

fn parent(fan: FanOutNode<Batch, Item>) -> CompiledGraph<Batch> {
    single_node::<Batch>("fan", fan)
}

#[tokio::test(start_paused = true)]
async fn fan_in_follows_item_order_and_keys_name_each_instance() {
    for mode in MODES {
        let graph = worker(|s: Arc<Item>, _c: NodeCtx| async move {
            sleep(Duration::from_millis(10 - s.x as u64)).await;
            Ok(ItemUpdate::default().y(s.x * 10))
        });
        let (fan, sent) = mode.apply(FanOutNode::over_items(graph, "xs", "x", "y", "ys"));
        let out = parent(fan)
            .invoke_with(
                batch(vec![0, 1, 2, 3]),
                InvokeOptions::default().invocation_id("inv-1"),
            )
            .await
            .unwrap();
        assert_eq!(out.state.ys, [0, 10, 20, 30], "{mode:?}");
        if let Mode::RoundTrip = mode {
            let mut keys = sent.sent.lock().unwrap().clone();
            keys.sort();
            let want: Vec<(String, u32)> = (0..4).map(|i| (format!("inv-1/fan/{i}"), 0)).collect();
            assert_eq!(keys, want);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_bound_caps_instances_in_flight_and_starts_in_index_order() {
    for mode in MODES {
        let (now, max, starts) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(Mutex::new(Vec::new())),
        );
        let (n, m, log) = (Arc::clone(&now), Arc::clone(&max), Arc::clone(&starts));
        let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
            let (n, m, log) = (Arc::clone(&n), Arc::clone(&m), Arc::clone(&log));
            async move {
                log.lock().unwrap().push(s.x);
                m.fetch_max(n.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                sleep(Duration::from_millis(10)).await;
                n.fetch_sub(1, Ordering::SeqCst);
                Ok(ItemUpdate::default().y(s.x))
            }
        });
        let fan =
            FanOutNode::over_items(graph, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(2));
        let (fan, sent) = mode.apply(fan);
        let out = parent(fan)
            .invoke(batch(vec![0, 1, 2, 3, 4, 5]))
            .await
            .unwrap();
        assert_eq!(out.ys, [0, 1, 2, 3, 4, 5], "{mode:?}");
        assert_eq!(max.load(Ordering::SeqCst), 2, "{mode:?}");
        assert_eq!(*starts.lock().unwrap(), [0, 1, 2, 3, 4, 5], "{mode:?}");
        if let Mode::RoundTrip = mode {
            assert_eq!(sent.max_pending.load(Ordering::SeqCst), 2);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn fail_fast_cancels_siblings_and_keeps_the_instance_category() {
    for mode in MODES {
        let finished = counter();
        let graph = item_one_fails_fast(&finished, &counter());
        let (fan, _) = mode.apply(FanOutNode::over_items(graph, "xs", "x", "y", "ys"));
        let err = parent(fan).invoke(batch(vec![0, 1, 2])).await.unwrap_err();
        sleep(Duration::from_secs(60)).await;
        assert_eq!(
            finished.load(Ordering::SeqCst),
            0,
            "{mode:?}: siblings never finish"
        );
        assert_eq!(err.category(), RuntimeCategory::NodeException, "{mode:?}");
        assert_eq!(err.node(), "fan", "{mode:?}");
        assert_eq!(err.original_message(), "item 1 is bad", "{mode:?}");
        assert_eq!(err.namespace(), ["fan", "work"], "{mode:?}");
        let classified = classify(err.cause());
        assert!(classified.chain[0].carrier, "{mode:?}");
        assert_eq!(classified.category.as_deref(), Some("bad_item"), "{mode:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn collect_records_each_failure_and_keeps_the_others_in_order() {
    for mode in MODES {
        let graph = worker(|s: Arc<Item>, _c: NodeCtx| async move {
            sleep(Duration::from_millis(10 - s.x as u64)).await;
            if s.x % 2 == 1 {
                return Err(fail("bad_item", format!("item {} is bad", s.x)));
            }
            Ok(ItemUpdate::default().y(s.x * 10))
        });
        let fan = FanOutNode::over_items(graph, "xs", "x", "y", "ys")
            .error_policy(ErrorPolicy::Collect)
            .errors_field("errors");
        let (fan, _) = mode.apply(fan);
        let out = parent(fan)
            .invoke(batch(vec![0, 1, 2, 3, 4]))
            .await
            .unwrap();
        assert_eq!(out.ys, [0, 20, 40], "{mode:?}");
        let indices: Vec<&str> = out
            .errors
            .iter()
            .map(|r| r["fan_out_index"].as_str())
            .collect();
        assert_eq!(indices, ["1", "3"], "{mode:?}");
        for (record, index) in out.errors.iter().zip([1, 3]) {
            assert_eq!(record["category"], "node_exception", "{mode:?}");
            let message = format!("item {index} is bad");
            assert!(record["message"].contains(&message), "{mode:?}: {record:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn instance_failure_isolation_degrades_one_slot() {
    for mode in MODES {
        let graph = item_one_fails();
        let isolation = degrade_to_minus_one("degraded");
        let fan =
            FanOutNode::over_items(graph, "xs", "x", "y", "ys").instance_middleware(isolation);
        let (fan, _) = mode.apply(fan);
        let (registration, events) = recorder();
        let graph = fan_only(fan).observer(registration).compile().unwrap();
        let out = graph.invoke(batch(vec![0, 1, 2])).await.unwrap();
        graph.drain(None).await;
        assert_eq!(out.ys, [0, -1, 20], "{mode:?}");
        let caught = isolation_events(&events);
        assert_eq!(caught.len(), 1, "{mode:?}");
        assert_eq!(caught[0].lineage.fan_out_index, Some(1), "{mode:?}");
        let category = caught[0].caught_exception.category.as_deref();
        assert_eq!(category, Some("provider_unavailable"), "{mode:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn instance_retry_redispatches_only_the_failing_instance() {
    for mode in MODES {
        let (calls, graph) = item_one_fails_once();
        let retry = instance_retry();
        let fan = FanOutNode::over_items(graph, "xs", "x", "y", "ys").instance_middleware(retry);
        let (fan, sent) = mode.apply(fan);
        let out = parent(fan).invoke(batch(vec![0, 1, 2])).await.unwrap();
        assert_eq!(out.ys, [0, 10, 20], "{mode:?}");
        let runs: Vec<u32> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        assert_eq!(runs, [1, 2, 1], "{mode:?}");
        if let Mode::RoundTrip = mode {
            let mut attempts: Vec<(String, u32)> = sent.sent.lock().unwrap().clone();
            attempts.retain(|(key, _)| key.ends_with("/1"));
            assert_eq!(attempts.iter().map(|a| a.1).collect::<Vec<_>>(), [0, 1]);
        }
    }
}

#[tokio::test]
async fn a_resumed_run_dispatches_only_the_instances_not_completed() {
    for mode in MODES {
        let (ran, failing) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicBool::new(true)),
        );
        let (log, flag) = (Arc::clone(&ran), Arc::clone(&failing));
        let graph = worker(move |s: Arc<Item>, _c: NodeCtx| {
            log.lock().unwrap().push(s.x);
            let fails = flag.load(Ordering::SeqCst) && s.x == 30;
            async move {
                if fails {
                    return Err(fail("bad_item", "scripted"));
                }
                Ok(ItemUpdate::default().y(s.x))
            }
        });
        let fan =
            FanOutNode::over_items(graph, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(1));
        let (fan, sent) = mode.apply(fan);
        let store = InMemoryCheckpointer::new();
        let graph = fan_only(fan)
            .checkpointer(Arc::new(store.clone()))
            .compile()
            .unwrap();
        let err = graph.invoke(batch(vec![10, 20, 30, 40])).await.unwrap_err();
        let saved = store.load(err.invocation_id()).await.unwrap().unwrap();
        let states: Vec<InstanceState> = saved.fan_out_progress[0]
            .instances
            .iter()
            .map(|i| i.state)
            .collect();
        use InstanceState::{Completed, InFlight, NotStarted};
        // In process the failing inner node saves the instance `in_flight`; a remote
        // worker cannot save into this invocation's record, so the last save is the
        // one after instance 1 completed. Both resume the same way.
        let at_failure = match mode {
            Mode::RoundTrip => NotStarted,
            _ => InFlight,
        };
        assert_eq!(
            states,
            [Completed, Completed, at_failure, NotStarted],
            "{mode:?}"
        );

        failing.store(false, Ordering::SeqCst);
        ran.lock().unwrap().clear();
        let resume = InvokeOptions::default().resume_invocation(err.invocation_id());
        let out = graph.invoke_with(Batch::default(), resume).await.unwrap();
        assert_eq!(*ran.lock().unwrap(), [30, 40], "{mode:?}");
        assert_eq!(out.state.ys, [10, 20, 30, 40], "{mode:?}");
        if let Mode::RoundTrip = mode {
            // A checkpoint resume is a new invocation id; the run key stays.
            let (first, resumed) = (err.invocation_id(), &out.invocation_id);
            assert_ne!(first, resumed);
            let keys = sent.keys();
            assert_eq!(keys[0], format!("{first}/fan/0"));
            assert_eq!(
                keys[3..],
                [format!("{resumed}/fan/2"), format!("{resumed}/fan/3")]
            );
            let runs = sent.runs.lock().unwrap().clone();
            assert_eq!(runs.len(), 5, "0, 1, 2 (failed), then 2 and 3: {runs:?}");
            assert_eq!(
                runs[3], runs[2],
                "instance 2 keeps its run key across the resume"
            );
            assert!(
                runs[2].ends_with("/fan/2") && runs[4].ends_with("/fan/3"),
                "{runs:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_nested_fan_out_keys_its_instances_by_the_enclosing_instance() {
    let leaf = worker(|s: Arc<Item>, _c: NodeCtx| async move { Ok(ItemUpdate::default().y(-s.x)) });
    let (inner, sent) = Mode::RoundTrip.apply(FanOutNode::<Group, Item>::over_items(
        leaf, "xs", "x", "y", "ys",
    ));
    let group = single_node::<Group>("inner", inner);
    let graph = single_node::<Outer>(
        "outer",
        FanOutNode::<Outer, Group>::over_items(group, "groups", "xs", "ys", "all"),
    );
    let input = Outer {
        groups: vec![vec![1, 2], vec![3]],
        ..Outer::default()
    };
    let out = graph
        .invoke_with(input, InvokeOptions::default().invocation_id("n"))
        .await
        .unwrap();
    assert_eq!(out.state.all, [vec![-1, -2], vec![-3]]);
    let mut keys = sent.keys();
    keys.sort();
    assert_eq!(
        keys,
        [
            "n/outer[0]/inner/0",
            "n/outer[0]/inner/1",
            "n/outer[1]/inner/0"
        ]
    );
}

#[test]
fn the_wire_helpers_reject_bad_input_with_a_category_and_keep_transience() {
    let err = decode_state(&Item::default(), json!([1, 2])).unwrap_err();
    assert_eq!(
        classify(&err).category.as_deref(),
        Some("state_validation_error")
    );
    let err = decode_state(&Item::default(), json!({"nope": 1})).unwrap_err();
    assert!(openarmature_graph::category_of(&err).is_some(), "{err}");
    let ok = decode_state(&Item::default(), json!({"x": 4, "y": 5})).unwrap();
    assert_eq!(
        ok,
        Item {
            x: 4,
            y: 5,
            base: 0
        }
    );

    let key = InstanceKey::new("inv", Some("corr".into()), "outer[1]/inner", 7);
    let wire = serde_json::to_value(&key).unwrap();
    assert_eq!(
        wire,
        json!({"invocation_id": "inv", "correlation_id": "corr", "fan_out": "outer[1]/inner", "index": 7})
    );
    let back: InstanceKey = serde_json::from_value(wire).unwrap();
    assert_eq!(back, key);
    assert_eq!(
        (key.to_string(), key.run_key()),
        (
            "inv/outer[1]/inner/7".to_owned(),
            "corr/outer[1]/inner/7".to_owned()
        )
    );

    let failure = InstanceFailure::new(Category::PROVIDER_RATE_LIMIT, "slow down");
    assert_eq!(failure.category(), Category::PROVIDER_RATE_LIMIT);
    let error = failure.into_error(&["fan".to_owned()]);
    let classified = classify(&error);
    assert_eq!(classified.category.as_deref(), Some("provider_rate_limit"));
    let cause = openarmature_core::find_in::<CategorizedError>(&error).unwrap();
    assert!(
        cause.is_transient(),
        "the cause keeps its category's transience"
    );
}
