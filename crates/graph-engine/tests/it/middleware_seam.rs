//! The middleware seam: chain order, re-attempts through `next`, short-circuits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use openarmature_graph::{
    middleware_fn, state, CompiledGraph, GraphBuilder, Middleware, NodeCtx, NodeError, Phase, END,
};

use crate::observe::{collector, Events};
use crate::support::Reattempt;

state! {
    /// Visited nodes.
    #[derive(Default, PartialEq)]
    pub struct Doc => DocUpdate {
        /// Visited nodes.
        pub log: Vec<String> => append,
        /// A value a middleware may set.
        pub note: String,
    }
}

type Log = Arc<Mutex<Vec<String>>>;

fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// The one node `name` (a [`logging_node`]) under the node middleware `mw`, its
/// events collected: the graph and the events.
fn observed_single(
    name: &'static str,
    mw: Arc<dyn Middleware<Doc>>,
) -> (CompiledGraph<Doc>, Events) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = GraphBuilder::new(Doc::default())
        .add_node(name, logging_node(name, &new_log()))
        .entry(name)
        .node_middleware(name, mw)
        .observer(collector("collector", &events))
        .compile()
        .unwrap();
    (graph, events)
}

/// Records entry and exit around `next`.
fn recorder(label: &'static str, log: &Log) -> Arc<dyn Middleware<Doc>> {
    let log = Arc::clone(log);
    Arc::new(middleware_fn(move |state, ctx: NodeCtx, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            let entry = format!("{label}>{}", ctx.node_name());
            log.lock().unwrap().push(entry);
            let out = next.run(state, ctx.clone()).await;
            log.lock()
                .unwrap()
                .push(format!("{label}<{}", ctx.node_name()));
            out
        })
    }))
}

fn logging_node(
    name: &'static str,
    log: &Log,
) -> impl Fn(Arc<Doc>, NodeCtx) -> futures::future::Ready<Result<DocUpdate, NodeError>>
       + Send
       + Sync
       + 'static {
    let log = Arc::clone(log);
    move |_s: Arc<Doc>, _c: NodeCtx| {
        log.lock().unwrap().push(format!("run {name}"));
        futures::future::ready(Ok(DocUpdate::default().log(vec![name.to_owned()])))
    }
}

#[tokio::test]
async fn graph_middleware_wraps_node_middleware_outer_to_inner() {
    let log = new_log();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("a", logging_node("a", &log))
        .add_node("b", logging_node("b", &log))
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .node_middleware("a", recorder("N1", &log))
        .node_middleware("a", recorder("N2", &log))
        .graph_middleware(recorder("G1", &log))
        .graph_middleware(recorder("G2", &log))
        .compile()
        .unwrap();
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(out.log, vec!["a", "b"]);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "G1>a", "G2>a", "N1>a", "N2>a", "run a", "N2<a", "N1<a", "G2<a", "G1<a",
            // b has no per-node middleware: only the graph's.
            "G1>b", "G2>b", "run b", "G2<b", "G1<b",
        ]
    );
}

#[test]
fn node_middleware_for_an_undeclared_node_fails_compilation() {
    let log = new_log();
    let err = GraphBuilder::new(Doc::default())
        .add_node("a", logging_node("a", &log))
        .node_middleware("ghost", recorder("N", &log))
        .entry("a")
        .compile()
        .err()
        .expect("compile must fail");
    assert_eq!(err.category(), "dangling_edge");
}

#[tokio::test]
async fn reattempting_middleware_produces_one_event_pair_per_attempt_sharing_one_step() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let seen_attempts = Arc::new(Mutex::new(Vec::new()));
    let (c, sa) = (Arc::clone(&calls), Arc::clone(&seen_attempts));
    let log = new_log();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("first", logging_node("first", &log))
        .add_node("flaky", move |_s: Arc<Doc>, ctx: NodeCtx| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            sa.lock().unwrap().push((ctx.attempt_index(), ctx.step()));
            futures::future::ready(if n < 2 {
                Err::<DocUpdate, NodeError>(format!("transient {n}").into())
            } else {
                Ok(DocUpdate::default().log(vec!["flaky".into()]))
            })
        })
        .add_edge("first", "flaky")
        .add_edge("flaky", END)
        .entry("first")
        .node_middleware("flaky", Arc::new(Reattempt { attempts: 3 }))
        .observer(collector("collector", &events))
        .compile()
        .unwrap();
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(out.log, vec!["first", "flaky"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(*seen_attempts.lock().unwrap(), vec![(0, 1), (1, 1), (2, 1)]);
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let flaky: Vec<(Phase, u32, u64, Option<String>, bool)> = events
        .iter()
        .filter(|e| &*e.node_name == "flaky")
        .map(|e| {
            (
                e.phase,
                e.attempt_index,
                e.step,
                e.error.as_ref().map(|x| x.category.clone()),
                e.post_state.is_some(),
            )
        })
        .collect();
    let ne = Some("node_exception".to_owned());
    assert_eq!(
        flaky,
        vec![
            (Phase::Started, 0, 1, None, false),
            (Phase::Completed, 0, 1, ne.clone(), false),
            (Phase::Started, 1, 1, None, false),
            (Phase::Completed, 1, 1, ne, false),
            (Phase::Started, 2, 1, None, false),
            (Phase::Completed, 2, 1, None, true),
        ]
    );
}

/// What the extension test attaches to a node execution.
#[derive(Default)]
struct Attempts(AtomicUsize);

#[tokio::test]
async fn extensions_are_shared_by_the_attempts_of_one_node_execution() {
    // Every attempt of "calls" sees the entry the first one attached (attempts 0 and 1
    // fail); the next node execution starts with an empty map.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let graph = GraphBuilder::new(Doc::default())
        .add_node("calls", move |_s: Arc<Doc>, ctx: NodeCtx| {
            let entry = ctx.extensions().get_or_insert_with(Attempts::default);
            let count = entry.0.fetch_add(1, Ordering::SeqCst) + 1;
            sink.lock().unwrap().push((ctx.attempt_index(), count));
            futures::future::ready(if ctx.attempt_index() < 2 {
                Err::<DocUpdate, NodeError>("again".into())
            } else {
                Ok(DocUpdate::default())
            })
        })
        .add_node("next", |_s: Arc<Doc>, ctx: NodeCtx| {
            futures::future::ready(if ctx.extensions().is_empty() {
                Ok(DocUpdate::default().note("fresh".to_owned()))
            } else {
                Err::<DocUpdate, NodeError>("a new node execution starts empty".into())
            })
        })
        .add_edge("calls", "next")
        .add_edge("next", END)
        .entry("calls")
        .node_middleware("calls", Arc::new(Reattempt { attempts: 3 }))
        .compile()
        .unwrap();
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(out.note, "fresh");
    assert_eq!(*seen.lock().unwrap(), vec![(0, 1), (1, 2), (2, 3)]);
}

#[tokio::test]
async fn reattempts_exhausted_surface_the_last_error() {
    let graph = GraphBuilder::new(Doc::default())
        .add_node("always", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            Err::<DocUpdate, NodeError>(format!("fail {}", ctx.attempt_index()).into())
        })
        .entry("always")
        .node_middleware("always", Arc::new(Reattempt { attempts: 3 }))
        .compile()
        .unwrap();
    let err = graph.invoke(Doc::default()).await.unwrap_err();
    assert_eq!(err.category().as_str(), "node_exception");
    assert_eq!(err.original_message(), "fail 2");
}

/// Calls `next` twice, both succeeding, and keeps the second update
/// (e.g. a "run twice, keep the latest" middleware).
fn run_twice() -> impl Middleware<Doc> {
    middleware_fn(|state: Arc<Doc>, ctx: NodeCtx, next| {
        Box::pin(async move {
            let _first = next
                .run(Arc::clone(&state), ctx.with_attempt_index(0))
                .await?;
            next.run(state, ctx.with_attempt_index(1)).await
        })
    })
}

#[tokio::test]
async fn every_attempt_gets_exactly_one_terminal_event() {
    // graph-engine §6: "Each node attempt produces exactly one `started` event
    // followed by exactly one terminal event".
    let (graph, events) = observed_single("twice", Arc::new(run_twice()));
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(out.log, vec!["twice"]);
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let shape: Vec<(Phase, u32)> = events.iter().map(|e| (e.phase, e.attempt_index)).collect();
    assert_eq!(
        shape,
        vec![
            (Phase::Started, 0),
            (Phase::Completed, 0),
            (Phase::Started, 1),
            (Phase::Completed, 1),
        ]
    );
}

/// Never calls `next`: answers from a "cache".
fn short_circuit() -> impl Middleware<Doc> {
    middleware_fn(|_state: Arc<Doc>, _ctx, _next| {
        let cached = DocUpdate::default()
            .log(vec!["cached".into()])
            .note("from cache".into());
        Box::pin(async move { Ok(cached) })
    })
}

#[tokio::test]
async fn short_circuiting_middleware_emits_no_events_and_its_update_is_merged() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = new_log();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("a", logging_node("a", &log))
        .add_node("cached", logging_node("cached-node-body", &log))
        .add_node("c", logging_node("c", &log))
        .add_edge("a", "cached")
        .add_edge("cached", "c")
        .entry("a")
        .node_middleware("cached", short_circuit())
        .observer(collector("collector", &events))
        .compile()
        .unwrap();
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(out.log, vec!["a", "cached", "c"]);
    assert_eq!(out.note, "from cache");
    assert_eq!(
        *log.lock().unwrap(),
        vec!["run a", "run c"],
        "node body never ran"
    );
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let names: Vec<&str> = events.iter().map(|e| &*e.node_name).collect();
    assert_eq!(names, vec!["a", "a", "c", "c"]);
    // c saw the cached update in its pre_state.
    let c_started = &events[2];
    assert_eq!(
        c_started.pre_state.to_json()["log"],
        serde_json::json!(["a", "cached"])
    );
}

/// Rewrites the state going in and the update coming out.
fn transform() -> impl Middleware<Doc> {
    middleware_fn(|state: Arc<Doc>, ctx, next| {
        Box::pin(async move {
            let mut modified = (*state).clone();
            modified.note = "seen-by-middleware".into();
            let mut update = next.run(Arc::new(modified), ctx).await?;
            if let Some(log) = update.log.as_mut() {
                log.push("post".into());
            }
            Ok(update)
        })
    })
}

#[tokio::test]
async fn middleware_can_transform_input_state_and_output_update() {
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = Arc::clone(&seen);
    let graph = GraphBuilder::new(Doc::default())
        .add_node("a", move |s: Arc<Doc>, _c: NodeCtx| {
            *s2.lock().unwrap() = s.note.clone();
            futures::future::ready(Ok::<_, NodeError>(
                DocUpdate::default().log(vec!["a".into()]),
            ))
        })
        .entry("a")
        .graph_middleware(transform())
        .compile()
        .unwrap();
    let out = graph.invoke(Doc::default()).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), "seen-by-middleware");
    assert_eq!(out.log, vec!["a", "post"]);
    // The state the middleware rewrote is not the graph's state.
    assert_eq!(out.note, "");
}

/// Fails after the node succeeded (a post-phase failure).
fn fail_after() -> impl Middleware<Doc> {
    middleware_fn(|state: Arc<Doc>, ctx, next| {
        Box::pin(async move {
            let _ = next.run(state, ctx).await?;
            Err("post-phase failed".into())
        })
    })
}

#[tokio::test]
async fn middleware_post_phase_failure_completes_the_attempt_with_an_error() {
    let (graph, events) = observed_single("a", Arc::new(fail_after()));
    let err = graph.invoke(Doc::default()).await.unwrap_err();
    assert_eq!(err.category().as_str(), "node_exception");
    assert_eq!(err.original_message(), "post-phase failed");
    assert_eq!(err.recoverable_state(), &Doc::default());
    graph.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].phase, Phase::Completed);
    assert_eq!(
        events[1].error.as_ref().map(|e| e.message.as_str()),
        Some("post-phase failed")
    );
}
