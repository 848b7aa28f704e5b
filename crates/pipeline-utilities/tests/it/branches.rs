//! pipeline-utilities §11 — parallel branches: declaration-order merge, error
//! policies, `when` skips, inline-callable branches, branch middleware, compile
//! errors, and cancellation. Virtual time throughout (`start_paused`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    CategorizedError, CompileError, CompiledGraph, DynSchema, DynState, DynUpdate, FieldType,
    GraphBuilder, Middleware, NodeCtx, NodeError, NodeEvent, ParallelBranchesConfig, Phase,
    RuntimeCategory, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    classify, Branch, CallBranch, ErrorPolicy, FailureIsolationMiddleware, ParallelBranchesNode,
    RetryMiddleware, SubgraphBranch,
};
use serde_json::json;
use tokio::time::{sleep, Instant};

use crate::common::single_node;
use crate::common::{isolation_events, node_events, recorder, Events};

openarmature_graph::state! {
    /// The parent graph.
    #[derive(Default, PartialEq)]
    pub struct P => PUpdate {
        /// Read by branches.
        pub input: i64,
        /// Written by several branches (last write wins).
        pub winner: String,
        /// Written by several branches (append).
        pub log: Vec<String> => append,
        /// Branch A's output.
        pub a_out: i64,
        /// Branch B's output.
        pub b_out: i64,
        /// `collect` error records.
        pub errors: Vec<BTreeMap<String, String>> => append,
        /// Written by the downstream node.
        pub after: bool,
    }
}

openarmature_graph::state! {
    /// A branch subgraph's state.
    #[derive(Default, PartialEq)]
    pub struct B => BUpdate {
        /// Projected in.
        pub x: i64,
        /// Projected out.
        pub out: i64,
        /// Projected out to `winner`.
        pub name: String,
        /// Projected out to `log`.
        pub trail: Vec<String> => append,
    }
}

type Shared<T> = Arc<Mutex<Vec<T>>>;

fn counter() -> Arc<AtomicU32> {
    Arc::new(AtomicU32::new(0))
}

fn load(c: &Arc<AtomicU32>) -> u32 {
    c.load(Ordering::SeqCst)
}

fn fail(category: &str, message: impl Into<String>) -> NodeError {
    CategorizedError::new(openarmature_graph::Category::from_name(category), message).into()
}

/// A one-node subgraph (`work`) running `body`.
fn sub<F, Fut>(body: F) -> CompiledGraph<B>
where
    F: Fn(Arc<B>, NodeCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<BUpdate, NodeError>> + Send + 'static,
{
    single_node::<B>("work", body)
}

/// `par` → `after` → END, with a recording observer.
/// The default parent state with `input` set.
fn with_input(input: i64) -> P {
    P {
        input,
        ..P::default()
    }
}

fn parent(node: ParallelBranchesNode<P>) -> (CompiledGraph<P>, Events) {
    let (registration, events) = recorder();
    let graph = GraphBuilder::new(P::default())
        .add_node("par", node)
        .add_node("after", |_s: Arc<P>, _c: NodeCtx| async {
            Ok(PUpdate::default().after(true))
        })
        .add_edge("par", "after")
        .add_edge("after", END)
        .entry("par")
        .observer(registration)
        .compile()
        .unwrap();
    (graph, events)
}

fn compile_error(node: ParallelBranchesNode<P>) -> CompileError {
    GraphBuilder::new(P::default())
        .add_node("par", node)
        .add_edge("par", END)
        .entry("par")
        .compile()
        .err()
        .expect("the graph must not compile")
}

fn call_ok(update: PUpdate) -> CallBranch<P> {
    CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
        let update = update.clone();
        async move { Ok(update) }
    })
}

fn events_named(events: &Events, namespace: &str) -> Vec<NodeEvent> {
    node_events(events)
        .into_iter()
        .filter(|e| e.namespace.join("/") == namespace)
        .collect()
}

/// A subgraph branch that sleeps `ms`, then names itself `name`, logs `name` and
/// writes `out = 2 * x`; it records its completion in `done`.
fn slow_branch(name: &'static str, ms: u64, done: &Shared<&'static str>) -> SubgraphBranch<P, B> {
    let done = Arc::clone(done);
    let graph = sub(move |s: Arc<B>, _c: NodeCtx| {
        let done = Arc::clone(&done);
        async move {
            sleep(Duration::from_millis(ms)).await;
            done.lock().unwrap().push(name);
            Ok(BUpdate::default()
                .name(name.into())
                .trail(vec![name.into()])
                .out(s.x * 2))
        }
    });
    SubgraphBranch::new(graph)
        .inputs([("x", "input")])
        .outputs([("winner", "name"), ("log", "trail")])
}

// ---------------------------------------------------------------------------
// Fan-in order (§11.4, §11.8)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn last_write_wins_goes_to_the_later_declared_branch_whatever_finishes_first() {
    let done: Shared<&'static str> = Arc::default();
    let done_call = Arc::clone(&done);
    let node = ParallelBranchesNode::new()
        .branch("alpha", Branch::subgraph(slow_branch("alpha", 30, &done)))
        .branch(
            "beta",
            Branch::call(CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
                let done = Arc::clone(&done_call);
                async move {
                    sleep(Duration::from_millis(10)).await;
                    done.lock().unwrap().push("beta");
                    Ok(PUpdate::default().winner("beta".into()))
                }
            })),
        );
    let (graph, _events) = parent(node);
    let started = Instant::now();
    let out = graph.invoke(P::default()).await.unwrap();
    assert_eq!(*done.lock().unwrap(), ["beta", "alpha"], "completion order");
    assert_eq!(out.winner, "beta", "declaration order decides");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(30),
        "branches overlap"
    );
    assert!(out.after);
}

#[tokio::test(start_paused = true)]
async fn subgraph_branches_project_inputs_and_outputs() {
    let doubler = SubgraphBranch::new(sub(|s: Arc<B>, _c: NodeCtx| async move {
        Ok(BUpdate::default().out(s.x * 2))
    }))
    .inputs([("x", "input")])
    .outputs([("a_out", "out")]);
    let tripler = SubgraphBranch::new(sub(|s: Arc<B>, _c: NodeCtx| async move {
        Ok(BUpdate::default().out(s.x * 3).name("ignored".into()))
    }))
    .inputs([("x", "input")])
    .outputs([("b_out", "out")]);
    let node = ParallelBranchesNode::new()
        .branch("double", Branch::subgraph(doubler))
        .branch("triple", Branch::subgraph(tripler));
    let (graph, _events) = parent(node);
    let out = graph.invoke(with_input(7)).await.unwrap();
    assert_eq!((out.a_out, out.b_out), (14, 21));
    assert_eq!(out.winner, "", "unprojected subgraph fields are discarded");
}

/// §11.4: "For `append` reducers, contributions are appended in branch order."
#[tokio::test(start_paused = true)]
async fn append_contributions_from_every_branch_are_kept_in_declaration_order() {
    let done: Shared<&'static str> = Arc::default();
    let node = ParallelBranchesNode::new()
        .branch("alpha", Branch::subgraph(slow_branch("alpha", 30, &done)))
        .branch("beta", Branch::subgraph(slow_branch("beta", 20, &done)))
        .branch(
            "gamma",
            Branch::call(call_ok(PUpdate::default().log(vec!["gamma".into()]))),
        );
    let (graph, _events) = parent(node);
    let out = graph
        .invoke(P {
            log: vec!["start".into()],
            ..P::default()
        })
        .await
        .unwrap();
    assert_eq!(out.winner, "beta");
    assert_eq!(out.log, ["start", "alpha", "beta", "gamma"]);
}

/// The same on a `DynState` parent (whose updates keep every write in order).
#[tokio::test(start_paused = true)]
async fn append_contributions_on_dyn_state_are_kept_in_declaration_order() {
    let schema = DynSchema::builder()
        .field("log", FieldType::List(None), json!([]))
        .reducer("log", openarmature_graph::reducers::Reducer::Append)
        .build();
    let branch = |name: &'static str, ms: u64| {
        Branch::call(CallBranch::new(
            move |_s: Arc<DynState>, _c: NodeCtx| async move {
                sleep(Duration::from_millis(ms)).await;
                Ok(DynUpdate::new().set("log", json!([name])))
            },
        ))
    };
    let graph = GraphBuilder::new(schema.defaults())
        .add_node(
            "par",
            ParallelBranchesNode::new()
                .branch("a", branch("a", 20))
                .branch("b", branch("b", 10)),
        )
        .add_edge("par", END)
        .entry("par")
        .compile()
        .unwrap();
    let out = graph.invoke(schema.defaults()).await.unwrap();
    assert_eq!(out.get("log"), Some(&json!(["a", "b"])));
}

// ---------------------------------------------------------------------------
// Error policies (§11.5, §11.9)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn fail_fast_names_the_branch_cancels_the_others_and_keeps_the_entry_state() {
    let finished = counter();
    let f = Arc::clone(&finished);
    let slow = CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
        let finished = Arc::clone(&f);
        async move {
            sleep(Duration::from_secs(10)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(PUpdate::default().a_out(1))
        }
    });
    let bad = SubgraphBranch::new(sub(|_s: Arc<B>, _c: NodeCtx| async {
        sleep(Duration::from_millis(5)).await;
        Err::<BUpdate, _>(fail("bad_thing", "branch broke"))
    }))
    .outputs([("b_out", "out")]);
    let node = ParallelBranchesNode::new()
        .branch("slow", Branch::call(slow))
        .branch("bad", Branch::subgraph(bad));
    let (graph, events) = parent(node);
    let initial = P {
        input: 3,
        log: vec!["entry".into()],
        ..P::default()
    };
    let started = Instant::now();
    let err = graph.invoke(initial.clone()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(5));
    sleep(Duration::from_secs(60)).await;
    assert_eq!(load(&finished), 0, "the slow branch was cancelled");

    assert_eq!(err.category(), RuntimeCategory::NodeException);
    assert_eq!(err.category_name(), "parallel_branches_branch_failed");
    assert_eq!(err.branch_name(), Some("bad"));
    assert_eq!(err.node(), "par");
    assert_eq!(err.recoverable_state(), &initial, "no contribution applied");
    assert_eq!(err.original_message(), "branch broke");
    let classified = classify(err.cause());
    assert_eq!(classified.category.as_deref(), Some("bad_thing"));
    assert!(classified.chain[0].carrier);
    assert_eq!(
        classified.chain[0].category.as_deref(),
        Some("parallel_branches_branch_failed")
    );

    graph.drain(None).await;
    let par = events_named(&events, "par");
    assert_eq!(par.len(), 2);
    assert!(par[1].error.is_some());
    assert!(events_named(&events, "after").is_empty());
}

#[tokio::test(start_paused = true)]
async fn fail_fast_on_a_callable_branch() {
    let node = ParallelBranchesNode::new()
        .branch("fine", Branch::call(call_ok(PUpdate::default().a_out(1))))
        .branch(
            "broken",
            Branch::call(CallBranch::new(|_s: Arc<P>, _c: NodeCtx| async {
                Err::<PUpdate, _>(fail("bad_thing", "callable broke"))
            })),
        );
    let (graph, _events) = parent(node);
    let err = graph.invoke(P::default()).await.unwrap_err();
    assert_eq!(err.category_name(), "parallel_branches_branch_failed");
    assert_eq!(err.branch_name(), Some("broken"));
    assert_eq!(err.recoverable_state(), &P::default());
    assert_eq!(classify(err.cause()).category.as_deref(), Some("bad_thing"));
}

#[tokio::test(start_paused = true)]
async fn collect_records_branch_errors_and_merges_the_successes() {
    let ok = SubgraphBranch::new(sub(|s: Arc<B>, _c: NodeCtx| async move {
        sleep(Duration::from_millis(20)).await;
        Ok(BUpdate::default().out(s.x + 1))
    }))
    .inputs([("x", "input")])
    .outputs([("a_out", "out")]);
    let bad = SubgraphBranch::new(sub(|_s: Arc<B>, _c: NodeCtx| async {
        Err::<BUpdate, _>(fail("bad_thing", "beta broke"))
    }))
    .outputs([("b_out", "out")]);
    let node = ParallelBranchesNode::new()
        .branch("alpha", Branch::subgraph(ok))
        .branch("beta", Branch::subgraph(bad))
        .error_policy(ErrorPolicy::Collect)
        .errors_field("errors");
    let (graph, events) = parent(node);
    let out = graph
        .invoke(P {
            input: 4,
            b_out: -7,
            ..P::default()
        })
        .await
        .unwrap();
    assert_eq!(out.a_out, 5);
    assert_eq!(out.b_out, -7, "the failed branch's outputs do not fire");
    assert!(out.after, "the run continues");
    assert_eq!(out.errors.len(), 1);
    let record = &out.errors[0];
    assert_eq!(record["branch_name"], "beta");
    assert_eq!(record["category"], "node_exception");
    assert!(record["message"].contains("beta broke"), "{record:?}");
    graph.drain(None).await;
    let config = events_named(&events, "par")[0]
        .parallel_branches_config
        .clone()
        .unwrap();
    assert_eq!(config.error_policy, "collect");
}

// ---------------------------------------------------------------------------
// Conditional branches (§11.10)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_false_when_skips_the_branch_entirely() {
    let (on_calls, off_calls) = (counter(), counter());
    let (on, off) = (Arc::clone(&on_calls), Arc::clone(&off_calls));
    let node = ParallelBranchesNode::new()
        .branch(
            "on",
            Branch::call(CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
                on.fetch_add(1, Ordering::SeqCst);
                async { Ok(PUpdate::default().a_out(1)) }
            }))
            .when(|s: &P| s.input > 0),
        )
        .branch(
            "off",
            Branch::subgraph(
                SubgraphBranch::new(sub(move |_s: Arc<B>, _c: NodeCtx| {
                    off.fetch_add(1, Ordering::SeqCst);
                    async { Ok(BUpdate::default().out(9)) }
                }))
                .outputs([("b_out", "out")]),
            )
            .when(|s: &P| s.input > 100),
        );
    let (graph, events) = parent(node);
    let out = graph.invoke(with_input(1)).await.unwrap();
    graph.drain(None).await;
    assert_eq!((out.a_out, out.b_out), (1, 0));
    assert_eq!((load(&on_calls), load(&off_calls)), (1, 0));
    assert!(
        node_events(&events)
            .iter()
            .all(|e| !e.namespace.iter().any(|n| n == "off")
                && e.branch_name.as_deref() != Some("off")),
        "a skipped branch emits no events"
    );
    let par = events_named(&events, "par");
    assert_eq!(par.len(), 2);
    for event in &par {
        assert_eq!(
            event.parallel_branches_config,
            Some(ParallelBranchesConfig {
                branch_names: vec!["on".into(), "off".into()],
                branch_count: 1,
                dispatched: vec!["on".into()],
                error_policy: "fail_fast".into(),
                parent_node_name: "par".into(),
            })
        );
        assert_eq!(event.branch_name, None);
    }
}

#[tokio::test(start_paused = true)]
async fn every_branch_skipped_is_a_no_op() {
    let node = ParallelBranchesNode::new()
        .branch(
            "only",
            Branch::call(call_ok(PUpdate::default().a_out(1))).when(|_s: &P| false),
        )
        .errors_field("errors");
    let (graph, events) = parent(node);
    let out = graph.invoke(P::default()).await.unwrap();
    assert_eq!(
        out,
        P {
            after: true,
            ..P::default()
        }
    );
    graph.drain(None).await;
    let par = events_named(&events, "par");
    assert_eq!(par.len(), 2);
    assert_eq!(
        par[0]
            .parallel_branches_config
            .as_ref()
            .unwrap()
            .branch_count,
        0
    );
}

/// §11.10: `when` is "evaluated **once at dispatch**".
#[tokio::test(start_paused = true)]
async fn a_when_predicate_is_evaluated_once_per_dispatch() {
    let evaluations = counter();
    let e = Arc::clone(&evaluations);
    let node = ParallelBranchesNode::new().branch(
        "only",
        Branch::call(call_ok(PUpdate::default().a_out(1))).when(move |_s: &P| {
            e.fetch_add(1, Ordering::SeqCst);
            true
        }),
    );
    let (graph, _events) = parent(node);
    graph.invoke(P::default()).await.unwrap();
    assert_eq!(load(&evaluations), 1, "`when` evaluations for one dispatch");
}

// ---------------------------------------------------------------------------
// Events (§11.6, graph-engine §6)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_callable_branch_is_one_synthetic_event_pair_named_after_the_branch() {
    let node = ParallelBranchesNode::new()
        .branch("fetch", Branch::call(call_ok(PUpdate::default().a_out(42))))
        .branch(
            "compute",
            Branch::subgraph(
                SubgraphBranch::new(sub(|_s: Arc<B>, _c: NodeCtx| async {
                    Ok(BUpdate::default().out(1))
                }))
                .outputs([("b_out", "out")]),
            ),
        );
    let (graph, events) = parent(node);
    let initial = with_input(5);
    graph.invoke(initial.clone()).await.unwrap();
    graph.drain(None).await;

    let fetch = events_named(&events, "par/fetch");
    assert_eq!(
        fetch.iter().map(|e| e.phase).collect::<Vec<_>>(),
        [Phase::Started, Phase::Completed]
    );
    for event in &fetch {
        assert_eq!(&*event.node_name, "fetch");
        assert_eq!(event.branch_name.as_deref(), Some("fetch"));
        assert_eq!(&*event.branch_name_chain, [Some("fetch".to_owned())]);
        assert_eq!(event.fan_out_index, None);
        assert_eq!(event.attempt_index, 0);
        assert!(event.parallel_branches_config.is_none());
        assert_eq!(event.pre_state.to_json()["input"], json!(5));
    }
    let post = fetch[1].post_state.as_ref().unwrap().to_json();
    assert_eq!(post["a_out"], json!(42));

    // A subgraph branch's inner nodes sit under the parallel-branches node (the
    // dispatch boundary), told apart by `branch_name`.
    let compute = events_named(&events, "par/work");
    assert_eq!(compute.len(), 2);
    for event in &compute {
        assert_eq!(event.branch_name.as_deref(), Some("compute"));
        assert_eq!(&*event.branch_name_chain, [Some("compute".to_owned())]);
        assert_eq!(event.parent_states.len(), 1);
        assert_eq!(&*event.fan_out_index_chain, [None]);
    }
    // The parallel-branches node itself: one pair, no branch name.
    let par = events_named(&events, "par");
    assert_eq!(par.len(), 2);
    assert!(par.iter().all(|e| e.branch_name.is_none()));
    assert_eq!(
        par[0]
            .parallel_branches_config
            .as_ref()
            .unwrap()
            .branch_count,
        2
    );
    // Dispatch follows declaration order: fetch starts before compute's node.
    let order: Vec<String> = node_events(&events)
        .iter()
        .filter(|e| e.phase == Phase::Started)
        .map(|e| e.namespace.join("/"))
        .collect();
    assert_eq!(order, ["par", "par/fetch", "par/work", "after"]);
}

// ---------------------------------------------------------------------------
// Branch middleware (§11.7)
// ---------------------------------------------------------------------------

fn retry(ms: u64) -> RetryMiddleware {
    RetryMiddleware::new(RetryConfig::default().backoff(Constant(Duration::from_millis(ms))))
}

#[tokio::test(start_paused = true)]
async fn branch_retry_reruns_only_that_branch() {
    let (flaky_calls, steady_calls) = (counter(), counter());
    let (f, s) = (Arc::clone(&flaky_calls), Arc::clone(&steady_calls));
    let flaky = SubgraphBranch::new(sub(move |_s: Arc<B>, _c: NodeCtx| {
        let n = f.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                return Err(fail("provider_unavailable", "flaky"));
            }
            Ok(BUpdate::default().out(10))
        }
    }))
    .outputs([("a_out", "out")])
    .middleware(Arc::new(retry(10)) as Arc<dyn Middleware<B>>);
    let steady = CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
        s.fetch_add(1, Ordering::SeqCst);
        async { Ok(PUpdate::default().b_out(20)) }
    });
    let node = ParallelBranchesNode::new()
        .branch("flaky", Branch::subgraph(flaky))
        .branch("steady", Branch::call(steady));
    let (graph, events) = parent(node);
    let out = graph.invoke(P::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!((out.a_out, out.b_out), (10, 20));
    assert_eq!((load(&flaky_calls), load(&steady_calls)), (2, 1));

    let inner: Vec<(Phase, u32, bool)> = events_named(&events, "par/work")
        .iter()
        .map(|e| {
            assert_eq!(e.branch_name.as_deref(), Some("flaky"));
            (e.phase, e.attempt_index, e.error.is_some())
        })
        .collect();
    use Phase::{Completed, Started};
    assert_eq!(
        inner,
        [
            (Started, 0, false),
            (Completed, 0, true),
            (Started, 1, false),
            (Completed, 1, false),
        ]
    );
    assert_eq!(events_named(&events, "par/steady").len(), 2);
    assert!(events_named(&events, "par")
        .iter()
        .all(|e| e.attempt_index == 0));
}

#[tokio::test(start_paused = true)]
async fn branch_retry_on_a_callable_branch() {
    let calls = counter();
    let c = Arc::clone(&calls);
    let flaky = CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                return Err(fail("provider_rate_limit", "slow down"));
            }
            Ok(PUpdate::default().a_out(3))
        }
    })
    .middleware(Arc::new(retry(0)) as Arc<dyn Middleware<P>>);
    let (graph, events) = parent(ParallelBranchesNode::new().branch("flaky", Branch::call(flaky)));
    let out = graph.invoke(P::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.a_out, 3);
    assert_eq!(load(&calls), 2);
    let attempts: Vec<(Phase, u32)> = events_named(&events, "par/flaky")
        .iter()
        .map(|e| (e.phase, e.attempt_index))
        .collect();
    assert_eq!(
        attempts,
        [
            (Phase::Started, 0),
            (Phase::Completed, 0),
            (Phase::Started, 1),
            (Phase::Completed, 1),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn branch_failure_isolation_skips_an_uncovered_output() {
    let broken = SubgraphBranch::new(sub(|_s: Arc<B>, _c: NodeCtx| async {
        Err::<BUpdate, _>(fail("provider_unavailable", "down"))
    }))
    .outputs([("a_out", "out"), ("winner", "name")])
    .middleware(Arc::new(FailureIsolationMiddleware::<B>::with_update(
        "branch_isolated",
        BUpdate::default().name("fallback".into()),
    )) as Arc<dyn Middleware<B>>);
    let (graph, events) =
        parent(ParallelBranchesNode::new().branch("only", Branch::subgraph(broken)));
    let out = graph
        .invoke(P {
            a_out: 99,
            ..P::default()
        })
        .await
        .unwrap();
    graph.drain(None).await;
    assert_eq!(out.a_out, 99, "uncovered output keeps the prior value");
    assert_eq!(out.winner, "fallback");
    let caught = isolation_events(&events);
    assert_eq!(caught.len(), 1);
    assert_eq!(caught[0].lineage.branch_name.as_deref(), Some("only"));
}

// ---------------------------------------------------------------------------
// Compile errors (§11.9)
// ---------------------------------------------------------------------------

#[test]
fn an_empty_branch_mapping_is_parallel_branches_no_branches() {
    assert_eq!(
        compile_error(ParallelBranchesNode::new()).category(),
        "parallel_branches_no_branches"
    );
}

#[test]
fn a_branch_without_or_with_two_pieces_of_work_is_invalid() {
    let neither = ParallelBranchesNode::new()
        .branch("ok", Branch::call(call_ok(PUpdate::default())))
        .branch("empty", Branch::empty());
    let both = ParallelBranchesNode::new().branch(
        "both",
        Branch::call(call_ok(PUpdate::default())).also(SubgraphBranch::<P, B>::new(sub(
            |_s: Arc<B>, _c: NodeCtx| async { Ok(BUpdate::default()) },
        ))),
    );
    let two_calls = ParallelBranchesNode::new().branch(
        "twice",
        Branch::call(call_ok(PUpdate::default())).also(call_ok(PUpdate::default())),
    );
    for node in [neither, both, two_calls] {
        assert_eq!(
            compile_error(node).category(),
            "parallel_branches_invalid_branch_spec"
        );
    }
}

#[test]
fn undeclared_projection_fields_are_mapping_references_undeclared_field() {
    let graph = || sub(|_s: Arc<B>, _c: NodeCtx| async { Ok(BUpdate::default()) });
    let cases = [
        SubgraphBranch::new(graph()).inputs([("nope", "input")]),
        SubgraphBranch::new(graph()).inputs([("x", "nope")]),
        SubgraphBranch::new(graph()).outputs([("nope", "out")]),
        SubgraphBranch::new(graph()).outputs([("a_out", "nope")]),
    ];
    for (i, branch) in cases.into_iter().enumerate() {
        let node = ParallelBranchesNode::new().branch("b", Branch::subgraph(branch));
        assert_eq!(
            compile_error(node).category(),
            "mapping_references_undeclared_field",
            "case {i}"
        );
    }
    let node = ParallelBranchesNode::new()
        .branch("b", Branch::call(call_ok(PUpdate::default())))
        .errors_field("nope");
    assert_eq!(
        compile_error(node).category(),
        "mapping_references_undeclared_field"
    );
}

// ---------------------------------------------------------------------------
// Cancellation (dropping the invocation)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn dropping_the_invocation_stops_every_branch() {
    let resource = Arc::new(());
    let ticks = counter();
    let make = |name: &'static str| {
        let (r, t) = (Arc::clone(&resource), Arc::clone(&ticks));
        Branch::call(CallBranch::new(move |_s: Arc<P>, _c: NodeCtx| {
            let (held, ticks) = (Arc::clone(&r), Arc::clone(&t));
            async move {
                for _ in 0..10 {
                    sleep(Duration::from_millis(100)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
                drop(held);
                Ok(PUpdate::default().log(vec![name.into()]))
            }
        }))
    };
    let node = ParallelBranchesNode::new()
        .branch("a", make("a"))
        .branch("b", make("b"));
    let (graph, _events) = parent(node);
    let baseline = Arc::strong_count(&resource);
    let outcome =
        tokio::time::timeout(Duration::from_millis(250), graph.invoke(P::default())).await;
    assert!(outcome.is_err());
    assert_eq!(load(&ticks), 4);
    assert_eq!(Arc::strong_count(&resource), baseline);
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(load(&ticks), 4, "no branch progressed after the drop");
    drop(graph);
    assert_eq!(Arc::strong_count(&resource), 1);
}
