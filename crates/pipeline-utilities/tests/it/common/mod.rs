//! Shared fixtures for the pipeline-utilities integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use futures::future::{ready, Ready};
use openarmature_graph::{state, CategorizedError, FailureIsolationEvent};
use openarmature_graph::{CompiledGraph, Completed, GraphBuilder, GraphError, InvokeOptions};
use openarmature_graph::{Middleware, NodeCtx, NodeError, NodeEvent, ObserverEvent, Phase};
use openarmature_graph::{Registration, State, SubgraphNode, END};
use openarmature_testkit::observe::recording;

pub use openarmature_testkit::graphs::single_node;

state! {
    /// The test pipeline's state.
    #[derive(Default, PartialEq)]
    pub struct S => SUpdate {
        /// Visited nodes, in order.
        pub log: Vec<String> => append,
        /// A result slot.
        pub result: String,
        /// Read by a state-aware retry classifier.
        pub retryable: bool,
    }
}

state! {
    /// A subgraph's state (shares `result` and `log` with [`S`]).
    #[derive(Default, PartialEq)]
    pub struct Child => ChildUpdate {
        /// Visited nodes, in order.
        pub log: Vec<String> => append,
        /// A result slot.
        pub result: String,
    }
}

state! {
    /// The middle level of a nested fan-out (one outer instance).
    #[derive(Default, PartialEq)]
    pub struct Group => GroupUpdate {
        /// This group's items.
        pub xs: Vec<i64>,
        /// This group's outputs.
        pub ys: Vec<i64> => append,
    }
}

state! {
    /// The outer level of a nested fan-out.
    #[derive(Default, PartialEq)]
    pub struct Outer => OuterUpdate {
        /// Groups of items, one per outer instance.
        pub groups: Vec<Vec<i64>>,
        /// One output list per group.
        pub all: Vec<Vec<i64>> => append,
    }
}

/// A fresh database path `oa-<name>-<pid>-<nanos>.db` under the system temp dir,
/// removed (with its WAL files) on drop.
pub struct TempDb(pub std::path::PathBuf);

impl TempDb {
    /// A new path for `name`.
    pub fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let file = format!("oa-{name}-{}-{nanos}.db", std::process::id());
        TempDb(std::env::temp_dir().join(file))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Resumes invocation `id` of `graph` from the default initial state.
pub async fn resume<T: State + Default>(
    graph: &CompiledGraph<T>,
    id: &str,
) -> Result<Completed<T>, GraphError<T>> {
    graph
        .invoke_with(T::default(), InvokeOptions::default().resume_invocation(id))
        .await
}

pub use openarmature_testkit::observe::Events;

/// A recording observer and its log.
pub fn recorder() -> (Registration, Events) {
    let events: Events = Arc::default();
    (recording("recorder", &events), events)
}

/// The node events seen so far.
pub fn node_events(events: &Events) -> Vec<NodeEvent> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_node().cloned())
        .collect()
}

/// The node events of one node (by namespace joined with `/`).
pub fn node_events_of(events: &Events, namespace: &str) -> Vec<NodeEvent> {
    node_events(events)
        .into_iter()
        .filter(|e| e.namespace.join("/") == namespace)
        .collect()
}

/// The failure-isolation events seen so far.
pub fn isolation_events(events: &Events) -> Vec<FailureIsolationEvent> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::FailureIsolation(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

/// A compact trace of the delivered events: `started a#0`, `completed a#0 err`,
/// `completed a#0 ok`, `isolation <event_name>#<attempt>`.
pub fn trace(events: &Events) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .map(|e| match &**e {
            ObserverEvent::Node(n) => {
                let outcome = match (n.phase, &n.error, &n.post_state) {
                    (Phase::Started, _, _) => String::new(),
                    (_, Some(_), None) => " err".to_owned(),
                    (_, None, Some(_)) => " ok".to_owned(),
                    (_, error, post) => {
                        format!(
                            " INVALID(error={}, post={})",
                            error.is_some(),
                            post.is_some()
                        )
                    }
                };
                format!(
                    "{} {}#{}{}",
                    n.phase.as_str(),
                    n.namespace.join("/"),
                    n.attempt_index,
                    outcome
                )
            }
            ObserverEvent::FailureIsolation(f) => {
                format!("isolation {}#{}", f.event_name, f.lineage.attempt_index)
            }
            _ => "other".to_owned(),
        })
        .collect()
}

/// A fresh call counter.
pub fn counter() -> Arc<AtomicU32> {
    Arc::new(AtomicU32::new(0))
}

/// Reads a call counter.
pub fn count(calls: &Arc<AtomicU32>) -> u32 {
    calls.load(Ordering::SeqCst)
}

/// A node that fails its first `failures` runs with `CategorizedError(category,
/// "fail <n>")` (n = 0-based run), then writes `result = "ok"` and logs `name`.
pub fn flaky(
    name: &'static str,
    calls: &Arc<AtomicU32>,
    failures: u32,
    category: Option<&'static str>,
) -> impl Fn(Arc<S>, NodeCtx) -> Ready<Result<SUpdate, NodeError>> + Send + Sync + 'static {
    let calls = Arc::clone(calls);
    move |_s: Arc<S>, _c: NodeCtx| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        ready(if n < failures {
            Err(CategorizedError::with_category(
                category.map(openarmature_graph::Category::from_name),
                format!("fail {n}"),
            )
            .into())
        } else {
            Ok(SUpdate::default()
                .result("ok".into())
                .log(vec![name.to_owned()]))
        })
    }
}

/// A node that always fails with `CategorizedError(category, "fail <n>")`.
pub fn failing(
    calls: &Arc<AtomicU32>,
    category: Option<&'static str>,
) -> impl Fn(Arc<S>, NodeCtx) -> Ready<Result<SUpdate, NodeError>> + Send + Sync + 'static {
    flaky("never", calls, u32::MAX, category)
}

/// A node that logs `name`.
pub fn logging(
    name: &'static str,
) -> impl Fn(Arc<S>, NodeCtx) -> Ready<Result<SUpdate, NodeError>> + Send + Sync + 'static {
    move |_s: Arc<S>, _c: NodeCtx| ready(Ok(SUpdate::default().log(vec![name.to_owned()])))
}

/// A `Child` graph of two levels: node `inner_sub` runs, as a subgraph, a graph whose
/// only node is `call`.
pub fn nested_call(call: impl openarmature_graph::Node<Child>) -> CompiledGraph<Child> {
    let inner = GraphBuilder::new(Child::default())
        .add_node("call", call)
        .add_edge("call", END)
        .entry("call")
        .compile()
        .unwrap();
    GraphBuilder::new(Child::default())
        .add_node("inner_sub", SubgraphNode::<Child, Child>::new(inner))
        .add_edge("inner_sub", END)
        .entry("inner_sub")
        .compile()
        .unwrap()
}

/// A one-node graph: `node` under `name`, wrapped in `middleware`.
pub fn wrapped(
    name: &'static str,
    node: impl openarmature_graph::Node<S>,
    middleware: Arc<dyn Middleware<S>>,
) -> CompiledGraph<S> {
    GraphBuilder::new(S::default())
        .add_node(name, node)
        .node_middleware(name, middleware)
        .add_edge(name, END)
        .entry(name)
        .compile()
        .unwrap()
}

/// A `provider_unavailable` error with message "down".
pub fn down(_run: u32) -> NodeError {
    CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "down").into()
}

/// A subgraph node that fails its first `failures` runs with `error(n)`, then writes
/// `result = "ok"`.
pub fn child_flaky(
    calls: &Arc<AtomicU32>,
    failures: u32,
    error: impl Fn(u32) -> NodeError + Send + Sync + 'static,
) -> impl Fn(Arc<Child>, NodeCtx) -> Ready<Result<ChildUpdate, NodeError>> + Send + Sync + 'static {
    let calls = Arc::clone(calls);
    move |_s: Arc<Child>, _c: NodeCtx| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        ready(if n < failures {
            Err(error(n))
        } else {
            Ok(ChildUpdate::default()
                .result("ok".into())
                .log(vec!["call".to_owned()]))
        })
    }
}

/// `first` → `next` (a [`logging`] node) → END, observed by a [`recorder`]; `chain` is
/// `first`'s per-node middleware, outermost first.
pub fn then_next(
    first: &'static str,
    node: impl openarmature_graph::Node<S>,
    chain: Vec<Arc<dyn Middleware<S>>>,
) -> (CompiledGraph<S>, Events) {
    let (registration, events) = recorder();
    let mut builder = GraphBuilder::new(S::default())
        .add_node(first, node)
        .add_node("next", logging("next"))
        .add_edge(first, "next")
        .add_edge("next", END)
        .entry(first)
        .observer(registration);
    for m in chain {
        builder = builder.node_middleware(first, m);
    }
    (builder.compile().unwrap(), events)
}
