//! The three-piece pattern end to end (pipeline-utilities §6.3 *Composition with
//! §6.1*) and the §6.4 classification primitive.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    CategorizedError, CauseLink, GraphBuilder, Middleware, NodeError, Phase, SubgraphNode, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    classify, FailureIsolationMiddleware, RetryMiddleware, TimingMiddleware, TimingRecord,
};
use serde_json::json;

use crate::common::*;

const N: u32 = 3;

fn isolate(on_caught_log: &Arc<Mutex<Vec<String>>>) -> Arc<dyn Middleware<S>> {
    let log = Arc::clone(on_caught_log);
    Arc::new(
        FailureIsolationMiddleware::<S>::new("extract_failed", |s: &S| {
            SUpdate::default().result(format!("degraded({})", s.log.len()))
        })
        .on_caught(move |e: Arc<dyn StdError + Send + Sync>| {
            log.lock().unwrap().push(e.to_string());
            async {}
        }),
    )
}

fn retry() -> Arc<dyn Middleware<S>> {
    Arc::new(RetryMiddleware::new(
        RetryConfig::default()
            .max_attempts(N)
            .backoff(Constant(Duration::from_secs(1))),
    ))
}

#[tokio::test(start_paused = true)]
async fn retry_inside_isolation_retries_n_times_then_degrades_once() {
    let calls = counter();
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let (graph, events) = then_next(
        "extract",
        failing(&calls, Some("provider_unavailable")),
        vec![isolate(&caught), retry()],
    );
    let started = tokio::time::Instant::now();
    let out = graph.invoke(S::default()).await.unwrap();
    let elapsed = started.elapsed();
    graph.drain(None).await;

    assert_eq!(count(&calls), N);
    assert_eq!(out.result, "degraded(0)");
    assert_eq!(out.log, vec!["next"], "routing continued after the degrade");
    assert_eq!(elapsed, Duration::from_secs(u64::from(N - 1)));

    let extract = node_events_of(&events, "extract");
    assert_eq!(extract.len(), 2 * N as usize, "2N node events");
    for (i, pair) in extract.chunks(2).enumerate() {
        assert_eq!(pair[0].phase, Phase::Started);
        assert_eq!(pair[1].phase, Phase::Completed);
        assert_eq!(pair[0].attempt_index, i as u32);
        assert_eq!(pair[1].attempt_index, i as u32);
        let error = pair[1].error.as_ref().expect("each attempt failed");
        assert_eq!(error.message, format!("fail {i}"));
        assert!(pair[1].post_state.is_none());
    }

    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1, "exactly one isolation event");
    let ev = &isolation[0];
    assert_eq!(ev.lineage.attempt_index, N - 1, "the last retry attempt");
    assert_eq!(&*ev.lineage.namespace, ["extract".to_owned()]);
    assert_eq!(ev.post_state, json!({"result": "degraded(0)"}));
    assert_eq!(ev.caught_exception.message, format!("fail {}", N - 1));
    assert_eq!(
        ev.caught_exception.category.as_deref(),
        Some("provider_unavailable")
    );
    assert_eq!(*caught.lock().unwrap(), vec![format!("fail {}", N - 1)]);

    assert_eq!(
        trace(&events),
        vec![
            "started extract#0",
            "completed extract#0 err",
            "started extract#1",
            "completed extract#1 err",
            "started extract#2",
            "completed extract#2 err",
            "isolation extract_failed#2",
            "started next#0",
            "completed next#0 ok",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_non_transient_escapes_retry_at_once_and_degrades() {
    let calls = counter();
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let (graph, events) = then_next(
        "extract",
        failing(&calls, Some("provider_authentication")),
        vec![isolate(&caught), retry()],
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(count(&calls), 1);
    assert_eq!(out.result, "degraded(0)");
    assert_eq!(node_events_of(&events, "extract").len(), 2);
    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    assert_eq!(isolation[0].lineage.attempt_index, 0);
}

#[tokio::test(start_paused = true)]
async fn a_transient_that_recovers_under_retry_never_reaches_isolation() {
    let calls = counter();
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let (graph, events) = then_next(
        "extract",
        flaky("extract", &calls, 1, Some("provider_rate_limit")),
        vec![isolate(&caught), retry()],
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.result, "ok");
    assert_eq!(out.log, vec!["extract", "next"]);
    assert!(isolation_events(&events).is_empty());
    assert!(caught.lock().unwrap().is_empty());
    assert_eq!(
        trace(&events)[..4],
        [
            "started extract#0",
            "completed extract#0 err",
            "started extract#1",
            "completed extract#1 ok",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn isolation_inside_retry_swallows_transients_before_retry_sees_them() {
    let calls = counter();
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let (graph, events) = then_next(
        "extract",
        flaky("extract", &calls, 1, Some("provider_unavailable")),
        vec![retry(), isolate(&caught)],
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(count(&calls), 1, "the order is load-bearing");
    assert_eq!(out.result, "degraded(0)");
    assert_eq!(isolation_events(&events).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn per_graph_timing_around_the_three_piece_chain_sees_the_total() {
    let records: Arc<Mutex<Vec<TimingRecord>>> = Arc::default();
    let r = Arc::clone(&records);
    let timing = TimingMiddleware::for_graph(move |rec: TimingRecord| {
        r.lock().unwrap().push(rec);
        async { Ok::<(), NodeError>(()) }
    });
    let calls = counter();
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let graph = GraphBuilder::new(S::default())
        .add_node("extract", failing(&calls, Some("provider_unavailable")))
        .add_node("next", logging("next"))
        .graph_middleware(Arc::new(timing))
        .node_middleware("extract", isolate(&caught))
        .node_middleware("extract", retry())
        .add_edge("extract", "next")
        .add_edge("next", END)
        .entry("extract")
        .compile()
        .unwrap();
    graph.invoke(S::default()).await.unwrap();
    let records = records.lock().unwrap().clone();
    let summary: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (r.node_name.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(summary, vec![("extract", "success"), ("next", "success")]);
    let total = f64::from(N - 1) * 1000.0;
    assert!(
        (total..total + 1.0).contains(&records[0].duration_ms),
        "{} ms",
        records[0].duration_ms
    );
}

fn link(category: Option<&str>, message: &str, carrier: bool) -> CauseLink {
    CauseLink {
        category: category.map(str::to_owned),
        message: message.to_owned(),
        carrier,
    }
}

/// A graph whose subgraph node `sub/call` raises `invalid_response("bad json")`
/// caused by `rate_limit("slow")`.
async fn subgraph_failure() -> openarmature_graph::GraphError<S> {
    let child = single_node::<Child>(
        "call",
        child_flaky(&counter(), u32::MAX, |_| {
            CategorizedError::new(
                openarmature_graph::Category::PROVIDER_INVALID_RESPONSE,
                "bad json",
            )
            .with_source(CategorizedError::new(
                openarmature_graph::Category::PROVIDER_RATE_LIMIT,
                "slow",
            ))
            .into()
        }),
    );
    let graph = single_node::<S>("sub", SubgraphNode::<S, Child>::new(child));
    graph.invoke(S::default()).await.unwrap_err()
}

#[tokio::test]
async fn classify_walks_the_chain_outermost_first_marking_the_carrier() {
    let err = subgraph_failure().await;
    let c = classify(err.cause());
    assert_eq!(
        c.chain.len(),
        3,
        "one carrier link per boundary: {:?}",
        c.chain
    );
    assert!(c.chain[0].carrier);
    assert_eq!(c.chain[0].category.as_deref(), Some("node_exception"));
    assert!(
        c.chain[0].message.contains("bad json"),
        "{}",
        c.chain[0].message
    );
    assert_eq!(
        c.chain[1..],
        [
            link(Some("provider_invalid_response"), "bad json", false),
            link(Some("provider_rate_limit"), "slow", false),
        ]
    );
}

#[tokio::test]
async fn classify_derives_the_category_skipping_carriers() {
    let err = subgraph_failure().await;
    let c = classify(err.cause());
    assert_eq!(c.category.as_deref(), Some("provider_invalid_response"));
    assert_eq!(c.message, "bad json");
    assert_eq!(err.original_message(), "bad json");

    // Nested subgraphs: two carriers, same derivation.
    let middle = nested_call(child_flaky(&counter(), u32::MAX, down));
    let graph = single_node::<S>("sub", SubgraphNode::<S, Child>::new(middle));
    let err = graph.invoke(S::default()).await.unwrap_err();
    let c = classify(err.cause());
    let carriers: Vec<bool> = c.chain.iter().map(|l| l.carrier).collect();
    assert_eq!(carriers, vec![true, true, false]);
    assert_eq!(c.category.as_deref(), Some("provider_unavailable"));
    assert_eq!(c.message, "down");
    assert_eq!(
        err.namespace(),
        ["sub".to_owned(), "inner_sub".to_owned(), "call".to_owned()]
    );
}

#[test]
fn classify_plain_errors() {
    let plain: NodeError = "plain".into();
    let c = classify(&*plain);
    assert_eq!(c.chain, vec![link(None, "plain", false)]);
    assert_eq!(c.category, None);
    assert_eq!(c.message, "plain");

    // No categorised link: the outermost non-carrier's message.
    let wrapped = CategorizedError::uncategorized("outer")
        .with_source(CategorizedError::uncategorized("inner"));
    let c = classify(&wrapped);
    assert_eq!(c.category, None);
    assert_eq!(c.message, "outer");
    assert_eq!(c.chain.len(), 2);

    // An empty category does not count.
    let e =
        CategorizedError::new(openarmature_graph::Category::from_name(""), "blank").with_source(
            CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "down"),
        );
    let c = classify(&e);
    assert_eq!(c.category.as_deref(), Some("provider_unavailable"));
    assert_eq!(c.message, "down");
}

#[tokio::test(start_paused = true)]
async fn three_piece_around_a_subgraph_reports_the_last_attempt_in_the_lineage() {
    let calls = counter();
    let child = single_node::<Child>(
        "call",
        child_flaky(&calls, u32::MAX, |n| {
            CategorizedError::new(
                openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                format!("down {n}"),
            )
            .into()
        }),
    );
    let caught: Arc<Mutex<Vec<String>>> = Arc::default();
    let (graph, events) = then_next(
        "sub",
        SubgraphNode::<S, Child>::new(child),
        vec![isolate(&caught), retry()],
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(count(&calls), N);
    assert_eq!(out.result, "degraded(0)");

    let inner: Vec<u32> = node_events_of(&events, "sub/call")
        .iter()
        .map(|e| e.attempt_index)
        .collect();
    assert_eq!(inner, vec![0, 0, 1, 1, 2, 2]);
    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    assert_eq!(&*isolation[0].lineage.namespace, ["sub".to_owned()]);
    assert_eq!(
        isolation[0].caught_exception.category.as_deref(),
        Some("provider_unavailable")
    );
    assert_eq!(
        isolation[0].lineage.attempt_index,
        N - 1,
        "the wrapped subgraph node's lineage carries the last retry attempt, as for a plain node"
    );
}
