//! Observer registration, ordering, phase subscription and failure isolation;
//! the serial delivery queue, `drain`, `drain_events_for` and `NodeCtx::drain_events`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    observer_fn, state, sync_observer_fn, timeout_from_secs, BoxError, CompiledGraph, DrainSummary,
    GraphBuilder, InvokeOptions, NodeCtx, NodeError, Observer, ObserverEvent, Phase, PhaseSet,
    Registration, END,
};
use serde_json::{json, Value};

use crate::observe::{collector, event_json, Events};

state! {
    /// Visited nodes.
    #[derive(Default, PartialEq)]
    pub struct Trail => TrailUpdate {
        /// Visited nodes.
        pub log: Vec<String> => append,
    }
}

type Log = Arc<Mutex<Vec<String>>>;

fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn visit(
    name: &'static str,
) -> impl Fn(Arc<Trail>, NodeCtx) -> futures::future::Ready<Result<TrailUpdate, NodeError>>
       + Send
       + Sync
       + 'static {
    move |_s: Arc<Trail>, _c: NodeCtx| {
        futures::future::ready(Ok(TrailUpdate::default().log(vec![name.to_owned()])))
    }
}

/// a -> b -> c -> END.
fn builder() -> GraphBuilder<Trail> {
    GraphBuilder::new(Trail::default())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c", visit("c"))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .entry("a")
}

/// An observer appending `label` to `log` for every event.
fn labeller(label: &'static str, log: Log) -> Registration {
    Registration::new(
        label,
        observer_fn(move |_e: Arc<ObserverEvent>| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(label.to_owned());
                Ok(())
            }
        }),
    )
}

/// An observer that sleeps `delay` (virtual) per event, then counts it.
fn slow_counter(name: &'static str, delay: Duration, count: Arc<AtomicUsize>) -> Registration {
    Registration::new(
        name,
        observer_fn(move |_e: Arc<ObserverEvent>| {
            let count = Arc::clone(&count);
            async move {
                tokio::time::sleep(delay).await;
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }),
    )
}

/// The `slow_counter` most drain tests use: "slow", one second per event.
fn one_second_counter(count: &Arc<AtomicUsize>) -> Registration {
    slow_counter("slow", Duration::from_secs(1), Arc::clone(count))
}

/// a -> b -> c under [`one_second_counter`], and the count it delivers into.
fn slow_graph() -> (CompiledGraph<Trail>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let graph = builder()
        .observer(one_second_counter(&count))
        .compile()
        .unwrap();
    (graph, count)
}

/// a -> b -> c with every node event collected: the graph and the events.
fn collected_graph() -> (CompiledGraph<Trail>, Events) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = builder()
        .observer(collector("c", &events))
        .compile()
        .unwrap();
    (graph, events)
}

/// Runs `graph` once from the default state under the invocation id `id`; the id
/// the run reports.
async fn invoke_as(graph: &CompiledGraph<Trail>, id: &str) -> String {
    let done = graph
        .invoke_with(Trail::default(), InvokeOptions::default().invocation_id(id))
        .await
        .unwrap();
    done.invocation_id.to_string()
}

const CLEAN: DrainSummary = DrainSummary {
    undelivered_count: 0,
    timeout_reached: false,
};

/// Guards against hangs: with paused time, an idle runtime auto-advances to this
/// deadline and the test fails instead of hanging.
async fn guarded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(3600), f)
        .await
        .expect("operation hung")
}

#[tokio::test(start_paused = true)]
async fn graph_attached_observers_fire_before_invocation_scoped_in_registration_order() {
    let log = new_log();
    let graph = builder()
        .observer(labeller("g1", Arc::clone(&log)))
        .observer(labeller("g2", Arc::clone(&log)))
        .compile()
        .unwrap();
    graph.attach_observer(labeller("g3", Arc::clone(&log)));
    let opts = InvokeOptions::default()
        .observer(labeller("i1", Arc::clone(&log)))
        .observer(labeller("i2", Arc::clone(&log)));
    graph.invoke_with(Trail::default(), opts).await.unwrap();
    assert_eq!(graph.drain(None).await, CLEAN);
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 6 * 5);
    for chunk in log.chunks(5) {
        assert_eq!(chunk, ["g1", "g2", "g3", "i1", "i2"]);
    }
}

#[tokio::test(start_paused = true)]
async fn invocation_scoped_observers_fire_only_for_their_invocation() {
    let log = new_log();
    let graph = builder().compile().unwrap();
    graph
        .invoke_with(
            Trail::default(),
            InvokeOptions::default().observer(labeller("once", Arc::clone(&log))),
        )
        .await
        .unwrap();
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(log.lock().unwrap().len(), 6);
}

#[test]
fn empty_phase_set_is_rejected() {
    assert!(PhaseSet::new(&[]).is_err());
    assert!(PhaseSet::new(&[Phase::Completed]).is_ok());
    let both = PhaseSet::new(&[Phase::Started, Phase::Completed]).unwrap();
    assert_eq!(both, PhaseSet::ALL);
    assert_eq!(PhaseSet::default(), PhaseSet::ALL);
}

#[tokio::test(start_paused = true)]
async fn phase_subscription_filters_delivery() {
    let completed = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(Mutex::new(Vec::new()));
    let all = Arc::new(Mutex::new(Vec::new()));
    let graph = builder()
        .observer(
            collector("completed-only", &completed)
                .phases(PhaseSet::new(&[Phase::Completed]).unwrap()),
        )
        .observer(
            collector("started-only", &started).phases(PhaseSet::new(&[Phase::Started]).unwrap()),
        )
        .compile()
        .unwrap();
    graph
        .invoke_with(
            Trail::default(),
            InvokeOptions::default().observer(collector("all", &all)),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let completed = completed.lock().unwrap();
    assert_eq!(completed.len(), 3);
    assert!(completed.iter().all(|e| e.phase == Phase::Completed));
    assert_eq!(
        completed.iter().map(|e| &*e.node_name).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    let started = started.lock().unwrap();
    assert_eq!(started.len(), 3);
    assert!(started.iter().all(|e| e.phase == Phase::Started));
    assert_eq!(all.lock().unwrap().len(), 6);
}

type Reports = Arc<Mutex<Vec<(String, String)>>>;

fn sink(reports: Reports) -> openarmature_graph::ObserverErrorSink {
    Arc::new(move |name: &str, err: &BoxError| {
        reports
            .lock()
            .unwrap()
            .push((name.to_owned(), err.to_string()));
    })
}

#[tokio::test(start_paused = true)]
async fn failing_and_panicking_observers_are_isolated_and_reported() {
    let reports: Reports = Arc::new(Mutex::new(Vec::new()));
    let before = new_log();
    let after = new_log();
    let graph = builder()
        .observer(labeller("before", Arc::clone(&before)))
        .observer(Registration::new(
            "erroring",
            observer_fn(|_e: Arc<ObserverEvent>| async move {
                Err::<(), BoxError>("observer says no".into())
            }),
        ))
        .observer(Registration::new(
            "panicking",
            observer_fn(|_e: Arc<ObserverEvent>| async move {
                panic!("observer panic (expected by the test)");
                #[allow(unreachable_code)]
                Ok(())
            }),
        ))
        .observer(labeller("after", Arc::clone(&after)))
        .on_observer_error(sink(Arc::clone(&reports)))
        .compile()
        .unwrap();
    let out = graph.invoke(Trail::default()).await.unwrap();
    assert_eq!(out.log, vec!["a", "b", "c"]);
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    assert_eq!(before.lock().unwrap().len(), 6);
    assert_eq!(after.lock().unwrap().len(), 6);
    {
        let reports = reports.lock().unwrap();
        let erroring: Vec<_> = reports.iter().filter(|(n, _)| n == "erroring").collect();
        let panicking: Vec<_> = reports.iter().filter(|(n, _)| n == "panicking").collect();
        assert_eq!(erroring.len(), 6);
        assert!(erroring.iter().all(|(_, m)| m == "observer says no"));
        assert_eq!(panicking.len(), 6);
        assert_eq!(reports.len(), 12);
    }

    // The graph keeps working for the next invocation.
    graph.invoke(Trail::default()).await.unwrap();
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    assert_eq!(after.lock().unwrap().len(), 12);
    assert_eq!(reports.lock().unwrap().len(), 24);
}

/// An observer whose `on_event` panics before it even returns its future (a
/// hand-written `Observer` impl doing synchronous work up front).
struct PanicsEagerly;

impl Observer for PanicsEagerly {
    fn on_event(&self, _event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        panic!("eager observer panic (expected by the test)");
    }
}

#[tokio::test(start_paused = true)]
async fn observer_panicking_synchronously_in_on_event_is_isolated() {
    let reports: Reports = Arc::new(Mutex::new(Vec::new()));
    let after = new_log();
    let graph = builder()
        .observer(Registration::new("eager", PanicsEagerly))
        .observer(labeller("after", Arc::clone(&after)))
        .on_observer_error(sink(Arc::clone(&reports)))
        .compile()
        .unwrap();
    graph.invoke(Trail::default()).await.unwrap();
    let summary = tokio::time::timeout(Duration::from_secs(60), graph.drain(None)).await;
    assert_eq!(summary, Ok(CLEAN), "drain(None) must complete");
    assert_eq!(
        after.lock().unwrap().len(),
        6,
        "later observers still get every event"
    );
    assert_eq!(
        reports
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| n == "eager")
            .count(),
        6
    );
}

/// Handles events at once (`on_event_now`) and counts any call of `on_event`, which
/// the queue must then not make.
struct HandlesAtOnce {
    seen: Arc<AtomicUsize>,
    futures: Arc<AtomicUsize>,
}

impl Observer for HandlesAtOnce {
    fn on_event(&self, _event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.futures.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }

    fn on_event_now(&self, _event: &Arc<ObserverEvent>) -> Option<Result<(), BoxError>> {
        self.seen.fetch_add(1, Ordering::SeqCst);
        Some(Ok(()))
    }
}

#[tokio::test(start_paused = true)]
async fn observers_handling_events_at_once_keep_order_isolation_and_make_no_future() {
    let reports: Reports = Arc::new(Mutex::new(Vec::new()));
    let log = new_log();
    let (seen, futures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let sync_log = Arc::clone(&log);
    let graph = builder()
        .observer(labeller("first", Arc::clone(&log)))
        .observer(Registration::new(
            "sync",
            sync_observer_fn(move |_e: &Arc<ObserverEvent>| {
                sync_log.lock().unwrap().push("sync".to_owned());
                Ok(())
            }),
        ))
        .observer(Registration::new(
            "sync-erroring",
            sync_observer_fn(|_e: &Arc<ObserverEvent>| Err("sync says no".into())),
        ))
        .observer(Registration::new(
            "sync-panicking",
            sync_observer_fn(|_e: &Arc<ObserverEvent>| {
                panic!("sync observer panic (expected by the test)")
            }),
        ))
        .observer(Registration::new(
            "at-once",
            HandlesAtOnce {
                seen: Arc::clone(&seen),
                futures: Arc::clone(&futures),
            },
        ))
        .observer(labeller("last", Arc::clone(&log)))
        .on_observer_error(sink(Arc::clone(&reports)))
        .compile()
        .unwrap();
    graph.invoke(Trail::default()).await.unwrap();
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 18);
    assert!(
        log.chunks(3).all(|c| c == ["first", "sync", "last"]),
        "{log:?}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 6);
    assert_eq!(futures.load(Ordering::SeqCst), 0);
    let reports = reports.lock().unwrap();
    let count = |name: &str| reports.iter().filter(|(n, _)| n == name).count();
    assert_eq!((count("sync-erroring"), count("sync-panicking")), (6, 6));
    assert!(reports
        .iter()
        .any(|(n, m)| n == "sync-erroring" && m == "sync says no"));
}

#[tokio::test(start_paused = true)]
async fn events_of_a_three_step_run_have_the_spec_shape() {
    let (graph, events) = collected_graph();
    let done = graph
        .invoke_with(
            Trail::default(),
            InvokeOptions::default()
                .invocation_id("inv-42")
                .correlation_id("corr-7"),
        )
        .await
        .unwrap();
    assert_eq!(done.invocation_id, "inv-42");
    graph.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 6);
    let names = ["a", "b", "c"];
    for (i, pair) in events.chunks(2).enumerate() {
        let (s, c) = (&pair[0], &pair[1]);
        assert_eq!(s.phase, Phase::Started);
        assert_eq!(c.phase, Phase::Completed);
        for e in [s, c] {
            assert_eq!(&*e.node_name, names[i]);
            assert_eq!(&*e.namespace, [names[i].to_owned()]);
            assert_eq!(e.step, i as u64);
            assert_eq!(e.attempt_index, 0);
            assert!(e.parent_states.is_empty());
            assert_eq!(e.fan_out_index, None);
            assert_eq!(e.branch_name, None);
            assert_eq!(&*e.invocation_id, "inv-42");
            assert_eq!(e.correlation_id.as_deref(), Some("corr-7"));
            assert!(e.error.is_none());
        }
        assert!(s.post_state.is_none());
        let prior: Vec<&str> = names[..i].to_vec();
        let after: Vec<&str> = names[..=i].to_vec();
        assert_eq!(s.pre_state.to_json(), json!({ "log": prior }));
        assert_eq!(c.pre_state.to_json(), json!({ "log": prior }));
        let post = c.post_state.as_ref().expect("completed carries post_state");
        assert_eq!(post.to_json(), json!({ "log": after }));
        let typed = post
            .as_any()
            .downcast_ref::<Trail>()
            .expect("typed snapshot");
        assert_eq!(typed.log.len(), i + 1);
    }
}

#[tokio::test(start_paused = true)]
async fn failed_node_completed_event_carries_the_error() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = GraphBuilder::new(Trail::default())
        .add_node("a", visit("a"))
        .add_node("b", |_s: Arc<Trail>, _c: NodeCtx| async move {
            Err::<TrailUpdate, NodeError>("b failed".into())
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .observer(collector("c", &events))
        .compile()
        .unwrap();
    graph.invoke(Trail::default()).await.unwrap_err();
    graph.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 4);
    let last = &events[3];
    assert_eq!(last.phase, Phase::Completed);
    assert_eq!(&*last.node_name, "b");
    assert!(last.post_state.is_none());
    let err = last.error.as_ref().expect("error populated");
    assert_eq!(err.category, "node_exception");
    assert_eq!(err.message, "b failed");
}

#[tokio::test(start_paused = true)]
async fn invoke_returns_before_slow_observers_and_drain_delivers_everything() {
    let (graph, count) = slow_graph();
    let t0 = tokio::time::Instant::now();
    graph.invoke(Trail::default()).await.unwrap();
    assert_eq!(
        t0.elapsed(),
        Duration::ZERO,
        "invoke never waits for observers"
    );
    assert!(count.load(Ordering::SeqCst) < 6);
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    assert_eq!(count.load(Ordering::SeqCst), 6);
    // Strictly serial: six one-second deliveries.
    assert!(t0.elapsed() >= Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn drain_timeout_cancels_delivery_and_graph_stays_usable() {
    let (graph, first) = slow_graph();
    graph.invoke(Trail::default()).await.unwrap();
    let t0 = tokio::time::Instant::now();
    let summary = graph.drain(Some(Duration::from_millis(50))).await;
    assert!(t0.elapsed() <= Duration::from_millis(50));
    assert!(summary.timeout_reached);
    assert!(summary.undelivered_count > 0, "{summary:?}");
    assert_eq!(
        summary.undelivered_count, 6,
        "the first event was still in flight"
    );

    // Cancelled: nothing more is delivered for the first invocation.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let delivered_first = first.load(Ordering::SeqCst);
    assert!(delivered_first < 6);

    // A new invocation works and drains cleanly.
    let second = Arc::new(AtomicUsize::new(0));
    let out = graph
        .invoke_with(
            Trail::default(),
            InvokeOptions::default().observer(slow_counter(
                "second",
                Duration::from_millis(10),
                Arc::clone(&second),
            )),
        )
        .await
        .unwrap();
    assert_eq!(out.state.log, vec!["a", "b", "c"]);
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    assert_eq!(second.load(Ordering::SeqCst), 6);
    assert_eq!(first.load(Ordering::SeqCst), delivered_first + 6);
}

#[tokio::test(start_paused = true)]
async fn drain_without_invocations_is_clean_and_immediate() {
    let graph = builder().compile().unwrap();
    let t0 = tokio::time::Instant::now();
    assert_eq!(graph.drain(None).await, CLEAN);
    assert_eq!(graph.drain(Some(Duration::ZERO)).await, CLEAN);
    assert_eq!(t0.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn drain_events_for_unknown_or_finished_invocation_returns_immediately() {
    let (graph, count) = slow_graph();
    let t0 = tokio::time::Instant::now();
    assert_eq!(
        graph.drain_events_for("no-such-invocation", None).await,
        CLEAN
    );
    assert_eq!(t0.elapsed(), Duration::ZERO);

    let done = graph
        .invoke_with(Trail::default(), InvokeOptions::default())
        .await
        .unwrap();
    guarded(graph.drain(None)).await;
    assert_eq!(count.load(Ordering::SeqCst), 6);
    let t1 = tokio::time::Instant::now();
    assert_eq!(
        graph
            .drain_events_for(&done.invocation_id, Some(Duration::from_millis(1)))
            .await,
        CLEAN
    );
    assert_eq!(
        graph.drain_events_for(&done.invocation_id, None).await,
        CLEAN
    );
    assert_eq!(t1.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn drain_events_for_waits_for_that_invocation_and_its_timeout_never_cancels() {
    let (graph, count) = slow_graph();
    let id = invoke_as(&graph, "x").await;
    let summary = graph
        .drain_events_for(&id, Some(Duration::from_millis(1500)))
        .await;
    assert!(summary.timeout_reached);
    assert!(
        summary.undelivered_count > 0 && summary.undelivered_count < 6,
        "{summary:?}"
    );
    // Not cancelled: delivery continues.
    assert_eq!(guarded(graph.drain_events_for("x", None)).await, CLEAN);
    assert_eq!(count.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn node_ctx_drain_events_sees_all_earlier_events_without_waiting_for_its_own_completed() {
    let count = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Option<(usize, DrainSummary)>>> = Arc::new(Mutex::new(None));
    let seen_in_node = Arc::clone(&seen);
    let counter = Arc::clone(&count);
    let graph = GraphBuilder::new(Trail::default())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c", move |_s: Arc<Trail>, ctx: NodeCtx| {
            let seen = Arc::clone(&seen_in_node);
            let counter = Arc::clone(&counter);
            async move {
                let summary = ctx.drain_events(None).await;
                *seen.lock().unwrap() = Some((counter.load(Ordering::SeqCst), summary));
                Ok(TrailUpdate::default().log(vec!["c".into()]))
            }
        })
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .entry("a")
        .observer(one_second_counter(&count))
        .compile()
        .unwrap();
    let out = guarded(graph.invoke(Trail::default())).await.unwrap();
    assert_eq!(out.log, vec!["a", "b", "c"]);
    let (delivered, summary) = seen.lock().unwrap().expect("node c ran");
    // started a, completed a, started b, completed b, started c.
    assert_eq!(delivered, 5);
    assert_eq!(summary, CLEAN);
    guarded(graph.drain(None)).await;
    assert_eq!(count.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn node_ctx_drain_events_with_timeout_reports_undelivered() {
    let count = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Option<DrainSummary>>> = Arc::new(Mutex::new(None));
    let seen_in_node = Arc::clone(&seen);
    let graph = GraphBuilder::new(Trail::default())
        .add_node("a", visit("a"))
        .add_node("b", move |_s: Arc<Trail>, ctx: NodeCtx| {
            let seen = Arc::clone(&seen_in_node);
            async move {
                *seen.lock().unwrap() =
                    Some(ctx.drain_events(Some(Duration::from_millis(10))).await);
                Ok(TrailUpdate::default())
            }
        })
        .add_edge("a", "b")
        .entry("a")
        .observer(one_second_counter(&count))
        .compile()
        .unwrap();
    guarded(graph.invoke(Trail::default())).await.unwrap();
    let summary = seen.lock().unwrap().expect("node b ran");
    assert!(summary.timeout_reached);
    assert_eq!(summary.undelivered_count, 3);
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

#[test]
fn drain_timeouts_reject_negative_and_nan() {
    assert!(timeout_from_secs(-1.0).is_err());
    assert!(timeout_from_secs(-0.001).is_err());
    assert!(timeout_from_secs(f64::NAN).is_err());
    assert_eq!(timeout_from_secs(0.0), Ok(Duration::ZERO));
    assert_eq!(timeout_from_secs(0.05), Ok(Duration::from_millis(50)));
    assert_eq!(timeout_from_secs(2.0), Ok(Duration::from_secs(2)));
}

#[tokio::test(start_paused = true)]
async fn detach_observer_stops_delivery_from_the_next_invocation() {
    let log = new_log();
    let graph: CompiledGraph<Trail> = builder().compile().unwrap();
    graph.attach_observer(labeller("x", Arc::clone(&log)));
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(log.lock().unwrap().len(), 6);
    assert!(graph.detach_observer("x"));
    assert!(!graph.detach_observer("x"));
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(log.lock().unwrap().len(), 6);
}

#[tokio::test(start_paused = true)]
async fn observer_attached_during_a_run_takes_effect_from_the_next_invocation() {
    let log = new_log();
    let cell: Arc<OnceLock<CompiledGraph<Trail>>> = Arc::new(OnceLock::new());
    let attached = Arc::new(AtomicBool::new(false));
    let (cell_in, log_in, attached_in) =
        (Arc::clone(&cell), Arc::clone(&log), Arc::clone(&attached));
    let graph = GraphBuilder::new(Trail::default())
        .add_node("a", move |_s: Arc<Trail>, _c: NodeCtx| {
            if !attached_in.swap(true, Ordering::SeqCst) {
                let graph = cell_in.get().expect("graph stored before invoke");
                graph.attach_observer(labeller("late", Arc::clone(&log_in)));
            }
            futures::future::ready(Ok::<_, NodeError>(
                TrailUpdate::default().log(vec!["a".into()]),
            ))
        })
        .add_node("b", visit("b"))
        .add_edge("a", "b")
        .entry("a")
        .compile()
        .unwrap();
    assert!(cell.set(graph.clone()).is_ok());
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(
        log.lock().unwrap().len(),
        0,
        "not for the in-flight invocation"
    );
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(log.lock().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn event_json_is_serialisable_for_assertions() {
    // Sanity check of the helper used by the determinism test.
    let (graph, events) = collected_graph();
    graph.invoke(Trail::default()).await.unwrap();
    graph.drain(None).await;
    let first = event_json(&events.lock().unwrap()[0]);
    assert_eq!(first["phase"], json!("started"));
    assert_eq!(first["node"], json!("a"));
    assert_eq!(first["post"], Value::Null);
}

/// An observer recording, per event, whether it ran inside a spawned task.
fn task_recorder(log: Arc<Mutex<Vec<bool>>>) -> Registration {
    Registration::new(
        "where",
        observer_fn(move |_e: Arc<ObserverEvent>| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(tokio::task::try_id().is_some());
                Ok(())
            }
        }),
    )
}

#[tokio::test]
async fn a_drain_delivers_the_queued_events_itself_when_no_delivery_has_started() {
    // Single-threaded: the delivery run spawned by the first event cannot start
    // before the test body yields, so the drain finds the events queued and
    // delivers them on its own caller (no task), in order.
    let log = Arc::new(Mutex::new(Vec::new()));
    let order = new_log();
    let graph = builder()
        .observer(task_recorder(Arc::clone(&log)))
        .observer(labeller("order", Arc::clone(&order)))
        .compile()
        .unwrap();
    graph.invoke(Trail::default()).await.unwrap();
    assert!(log.lock().unwrap().is_empty(), "nothing delivered yet");
    assert_eq!(graph.drain(None).await, CLEAN);
    assert_eq!(
        *log.lock().unwrap(),
        vec![false; 6],
        "all on the drain's caller"
    );
    assert_eq!(order.lock().unwrap().len(), 6);
    // The stale run, when it gets to run, delivers nothing twice.
    tokio::task::yield_now().await;
    assert_eq!(log.lock().unwrap().len(), 6);
}

#[tokio::test(start_paused = true)]
async fn a_drain_given_up_mid_delivery_loses_nothing_and_keeps_the_order() {
    // The caller abandons a per-invocation drain (its own timeout) while the drain
    // is delivering inline: the interrupted event goes back first in line, from the
    // interrupted observer, and a delivery run finishes the queue.
    let log = new_log();
    let slow_once = Arc::new(AtomicBool::new(true));
    let graph = builder()
        .observer(labeller("fast", Arc::clone(&log)))
        .observer(Registration::new(
            "slow",
            observer_fn({
                let log = Arc::clone(&log);
                let slow_once = Arc::clone(&slow_once);
                move |_e: Arc<ObserverEvent>| {
                    let log = Arc::clone(&log);
                    let slow = slow_once.swap(false, Ordering::SeqCst);
                    async move {
                        if slow {
                            tokio::time::sleep(Duration::from_secs(10)).await;
                        }
                        log.lock().unwrap().push("slow".to_owned());
                        Ok(())
                    }
                }
            }),
        ))
        .compile()
        .unwrap();
    let id = invoke_as(&graph, "y").await;
    let abandoned =
        tokio::time::timeout(Duration::from_secs(1), graph.drain_events_for(&id, None)).await;
    assert!(abandoned.is_err(), "the caller gave up");
    assert_eq!(*log.lock().unwrap(), vec!["fast"]);
    assert_eq!(guarded(graph.drain(None)).await, CLEAN);
    let expected: Vec<String> = (0..6)
        .flat_map(|_| ["fast", "slow"])
        .map(String::from)
        .collect();
    assert_eq!(
        *log.lock().unwrap(),
        expected,
        "every event once per observer, in order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_of_one_poll_of_the_invocation_are_delivered_by_one_run() {
    // The whole run completes in one poll of the invocation (no node waits). Its six
    // events are held back until that poll ends and then delivered by one delivery
    // run, not a run per event racing the graph on the other worker. The drain only
    // waits (a timeout: it never delivers inline), so the run delivers them all.
    let tasks: Arc<Mutex<Vec<Option<tokio::task::Id>>>> = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&tasks);
    let graph = builder()
        .observer(Registration::new(
            "task",
            observer_fn(move |_e: Arc<ObserverEvent>| {
                let recorded = Arc::clone(&recorded);
                async move {
                    recorded.lock().unwrap().push(tokio::task::try_id());
                    Ok(())
                }
            }),
        ))
        .compile()
        .unwrap();
    for round in 0..20 {
        tasks.lock().unwrap().clear();
        let id = invoke_as(&graph, &format!("poll-{round}")).await;
        let summary = graph
            .drain_events_for(&id, Some(Duration::from_secs(30)))
            .await;
        assert_eq!(summary, CLEAN);
        let tasks = tasks.lock().unwrap();
        assert_eq!(tasks.len(), 6);
        assert!(tasks[0].is_some(), "delivered by a run");
        assert!(
            tasks.iter().all(|t| *t == tasks[0]),
            "one run for the poll's events: {tasks:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_dispatched_from_another_task_are_delivered_without_the_invocation_yielding() {
    // A task the node spawned dispatches while the invocation's poll is busy (the node
    // blocks its thread until the event was delivered): that event is not held back.
    let delivered = Arc::new(std::sync::Barrier::new(2));
    let in_observer = Arc::clone(&delivered);
    let graph = GraphBuilder::new(Trail::default())
        .add_node("a", move |_s: Arc<Trail>, ctx: NodeCtx| {
            let delivered = Arc::clone(&delivered);
            async move {
                let from_task = ctx.clone();
                tokio::spawn(async move {
                    let ping = openarmature_graph::ExtensionEvent::new(
                        &from_task,
                        "test.ping",
                        serde_json::Map::new(),
                    );
                    from_task.dispatch_event(ObserverEvent::Extension(ping));
                });
                tokio::task::block_in_place(|| delivered.wait());
                Ok(TrailUpdate::default().log(vec!["a".into()]))
            }
        })
        .add_edge("a", END)
        .entry("a")
        .observer(Registration::new(
            "ping",
            observer_fn(move |e: Arc<ObserverEvent>| {
                let in_observer = Arc::clone(&in_observer);
                async move {
                    if matches!(&*e, ObserverEvent::Extension(_)) {
                        in_observer.wait();
                    }
                    Ok(())
                }
            }),
        ))
        .compile()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), graph.invoke(Trail::default()))
        .await
        .expect("the spawned task's event reached the observer while the node blocked")
        .unwrap();
    assert_eq!(out.log, vec!["a"]);
    assert_eq!(graph.drain(None).await, CLEAN);
}

#[tokio::test(start_paused = true)]
async fn on_a_current_thread_runtime_delivery_runs_start_without_waiting_for_a_tick() {
    // A spawn wakes no other thread here, so runs are not paced: five invocations'
    // runs deliver as soon as the test yields, with no time passing.
    let log = Arc::new(Mutex::new(Vec::new()));
    let graph = builder()
        .observer(task_recorder(Arc::clone(&log)))
        .compile()
        .unwrap();
    let before = tokio::time::Instant::now();
    for _ in 0..5 {
        graph.invoke(Trail::default()).await.unwrap();
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(*log.lock().unwrap(), vec![true; 30], "delivered by runs");
    // A drain right after an invocation delivers its events itself.
    graph.invoke(Trail::default()).await.unwrap();
    assert_eq!(graph.drain(None).await, CLEAN);
    assert_eq!(
        log.lock().unwrap()[30..],
        [false; 6],
        "on the drain's caller"
    );
    assert_eq!(tokio::time::Instant::now(), before, "no tick waited for");
}

/// A multi-thread runtime with one worker (its delivery runs are paced).
fn one_worker_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits, up to 2 s, until `log` holds `n` entries (delivered by runs elsewhere).
async fn logged(log: &Mutex<Vec<bool>>, n: usize) {
    for _ in 0..400 {
        if log.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn a_pacer_task_stuck_on_a_blocked_runtime_is_replaced() {
    // `stuck` has one worker, blocked below, so the pacer task an invocation there
    // spawns never runs. An invocation on `other` later must still be delivered by
    // a run, without a drain: its run replaces the stalled pacer task.
    let stuck = one_worker_runtime();
    let other = one_worker_runtime();
    let log = Arc::new(Mutex::new(Vec::new()));
    let graph = builder()
        .observer(task_recorder(Arc::clone(&log)))
        .compile()
        .unwrap();
    let (blocked_tx, blocked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    stuck.spawn(async move {
        blocked_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    blocked_rx.recv().unwrap();
    stuck.block_on(graph.invoke(Trail::default())).unwrap();
    other.block_on(async {
        // Long enough for the pacer task on `stuck` to count as stalled.
        tokio::time::sleep(Duration::from_millis(50)).await;
        graph.invoke(Trail::default()).await.unwrap();
        logged(&log, 6).await;
    });
    assert_eq!(
        *log.lock().unwrap(),
        vec![true; 6],
        "other's events delivered by a run"
    );
    // Once `stuck`'s worker is free, its own run delivers there.
    release_tx.send(()).unwrap();
    for _ in 0..400 {
        if log.lock().unwrap().len() >= 12 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*log.lock().unwrap(), vec![true; 12]);
}

#[test]
fn a_pacer_left_on_an_idle_runtime_does_not_hold_up_another_runtimes_runs() {
    // `idle` is a current-thread runtime nobody drives after its `block_on` returns:
    // its invocation's run waits there (no pacer task does: current-thread runtimes
    // are not paced). An invocation on `busy` afterwards must still have its events
    // delivered by a run, without a drain.
    let idle = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let busy = one_worker_runtime();
    let log = Arc::new(Mutex::new(Vec::new()));
    let graph = builder()
        .observer(task_recorder(Arc::clone(&log)))
        .compile()
        .unwrap();
    idle.block_on(graph.invoke(Trail::default())).unwrap();
    assert!(
        log.lock().unwrap().is_empty(),
        "idle's events wait for idle"
    );
    busy.block_on(async {
        graph.invoke(Trail::default()).await.unwrap();
        logged(&log, 6).await;
    });
    assert_eq!(
        *log.lock().unwrap(),
        vec![true; 6],
        "busy's events delivered by a run on busy"
    );
    // idle's own events are delivered once idle is driven again.
    assert_eq!(idle.block_on(graph.drain(None)), CLEAN);
    assert_eq!(log.lock().unwrap().len(), 12);
}
