//! Chunked dispatch without a Restate server: a mock ingress answers the instance
//! service's `run_chunk` / `run` calls, and records their paths and idempotency keys.
//! What it pins: a fan-out execution's concurrent calls travel as one job per chunk of
//! consecutive instances (k capped by the concurrency bound), keyed by the chunk's
//! bounds; the fan-in stays in item order; an instance a chunk's answer lacks is
//! dispatched alone under its own key; a resumed run's chunk that cannot fill (some of
//! its instances were recorded complete) is sent partial after the linger, with only
//! the unrecorded instances.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::checkpoint::{Checkpointer, InMemoryCheckpointer, InstanceState};
use openarmature_graph::{CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_pipeline::FanOutNode;
use openarmature_restate::RestateDispatcher;
use openarmature_testkit::http::{MockServer, Reply, Script};
use serde_json::{json, Value};

use crate::graphs::{classify, label, Batch, BatchUpdate, Item};

/// The mock's answer for one instance job: the item labelled.
fn completed(job: &Value) -> Value {
    let item = job["state"]["item"].as_i64().unwrap_or(-1);
    json!({"outcome": "completed", "state": {"item": item, "label": label(item)}})
}

/// A mock ingress; chunk answers leave out the instance `omit`, and answer the
/// instance `fail` with a failure the first time.
async fn ingress_failing(omit: Option<u64>, fail: Option<u64>) -> MockServer {
    let failed_once = AtomicBool::new(false);
    Script::handler(move |request| {
        let body = request.json().unwrap_or_default();
        if request.path.ends_with("/run_chunk") {
            let answers: Vec<Value> = body["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|job| job["key"]["index"].as_u64() != omit)
                .map(|job| {
                    let index = job["key"]["index"].as_u64();
                    let answer = if index == fail && !failed_once.swap(true, Ordering::SeqCst) {
                        json!({"outcome": "failed", "failure": {
                            "category": "node_exception", "cause_category": "provider_unavailable",
                            "message": "injected", "node": "classify", "namespace": []}})
                    } else {
                        completed(job)
                    };
                    json!({"index": job["key"]["index"], "answer": answer})
                })
                .collect();
            Reply::json(200, json!({ "answers": answers }))
        } else {
            Reply::json(200, completed(&body))
        }
    })
    .start()
    .await
    .unwrap()
}

async fn ingress(omit: Option<u64>) -> MockServer {
    ingress_failing(omit, None).await
}

/// A graph whose only node fans out over `items` through `dispatcher`.
fn fan_out(dispatcher: RestateDispatcher, concurrency: usize) -> CompiledGraph<Batch> {
    fan_out_with(dispatcher, concurrency, GraphBuilder::new(Batch::default()))
}

fn fan_out_with(
    dispatcher: RestateDispatcher,
    concurrency: usize,
    builder: GraphBuilder<Batch>,
) -> CompiledGraph<Batch> {
    // The subgraph only supplies the instance state's type here: the mock answers.
    let fan = FanOutNode::<Batch, Item>::over_items(
        classify("http://127.0.0.1:9"),
        "items",
        "item",
        "label",
        "labels",
    )
    .concurrency(NonZeroUsize::new(concurrency))
    .dispatcher(Arc::new(dispatcher));
    builder
        .add_node("start", |_s: Arc<Batch>, _c: NodeCtx| async move {
            Ok(BatchUpdate::default())
        })
        .add_node("fan", fan)
        .add_edge("start", "fan")
        .add_edge("fan", END)
        .entry("start")
        .compile()
        .unwrap()
}

/// Runs `items` items; returns the labels and the (path, idempotency key) of each call.
async fn run(
    items: i64,
    chunk: usize,
    concurrency: usize,
    omit: Option<u64>,
) -> (Vec<String>, Vec<(String, String)>) {
    let mock = ingress(omit).await;
    let dispatcher = RestateDispatcher::new(mock.origin())
        .chunk_size(NonZeroUsize::new(chunk).unwrap())
        .chunk_linger(Duration::from_millis(5));
    let graph = fan_out(dispatcher, concurrency);
    let initial = Batch {
        items: (0..items).collect(),
        ..Batch::default()
    };
    let done = graph.invoke(initial).await.unwrap();
    let calls = mock
        .requests()
        .iter()
        .map(|r| {
            let key = r.header("idempotency-key").unwrap_or_default();
            // Keep the part after the run id: `{fan-out}/{bounds}`.
            let tail = key.split_once('/').map_or(key, |(_, t)| t).to_owned();
            (r.path.clone(), tail)
        })
        .collect();
    (done.labels.clone(), calls)
}

fn labels(items: i64) -> Vec<String> {
    (0..items).map(label).collect()
}

fn chunk_keys(calls: &[(String, String)]) -> Vec<&str> {
    let mut keys: Vec<&str> = calls
        .iter()
        .filter(|(path, _)| path.ends_with("/run_chunk"))
        .map(|(_, key)| key.as_str())
        .collect();
    keys.sort_unstable();
    keys
}

pub async fn consecutive_instances_travel_as_one_job() {
    let (got, calls) = run(10, 4, 4, None).await;
    assert_eq!(got, labels(10), "item order");
    assert_eq!(chunk_keys(&calls), ["fan/0-3", "fan/4-7", "fan/8-9"]);
    assert_eq!(calls.len(), 3, "no instance sent alone: {calls:?}");
}

pub async fn a_chunk_never_exceeds_the_concurrency_bound() {
    let (got, calls) = run(10, 4, 3, None).await;
    assert_eq!(got, labels(10));
    assert_eq!(
        chunk_keys(&calls),
        ["fan/0-2", "fan/3-5", "fan/6-8", "fan/9-9"]
    );
}

pub async fn chunk_size_one_sends_every_instance_alone() {
    let (got, calls) = run(5, 1, 4, None).await;
    assert_eq!(got, labels(5));
    let mut keys: Vec<&str> = calls.iter().map(|(_, k)| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["fan/0", "fan/1", "fan/2", "fan/3", "fan/4"]);
    assert!(calls.iter().all(|(path, _)| path.ends_with("/run")));
}

pub async fn an_instance_the_answer_lacks_is_sent_alone() {
    let (got, calls) = run(8, 4, 8, Some(5)).await;
    assert_eq!(got, labels(8), "every item, in order");
    assert_eq!(chunk_keys(&calls), ["fan/0-3", "fan/4-7"]);
    let alone: Vec<&str> = calls
        .iter()
        .filter(|(path, _)| path.ends_with("/run"))
        .map(|(_, key)| key.as_str())
        .collect();
    assert_eq!(alone, ["fan/5"]);
}

/// The instance indices of each `run_chunk` call `mock` received.
fn chunk_members(mock: &MockServer) -> Vec<Vec<u64>> {
    mock.requests()
        .iter()
        .filter(|r| r.path.ends_with("/run_chunk"))
        .map(|r| {
            let body = r.json().unwrap_or_default();
            body["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|job| job["key"]["index"].as_u64())
                .collect()
        })
        .collect()
}

pub async fn a_resumed_run_sends_only_unrecorded_instances_in_partial_chunks() {
    let mock = ingress_failing(None, Some(1)).await;
    let store = Arc::new(InMemoryCheckpointer::new());
    let dispatcher = RestateDispatcher::new(mock.origin())
        .chunk_size(NonZeroUsize::new(4).unwrap())
        .chunk_linger(Duration::from_millis(5));
    let builder = GraphBuilder::new(Batch::default()).checkpointer(Arc::clone(&store));
    let graph = fan_out_with(dispatcher, 4, builder);
    let initial = Batch {
        items: (0..8).collect(),
        ..Batch::default()
    };
    // Fail-fast (the default policy): instance 1's failure ends the first run.
    let first = graph
        .invoke_with(
            initial.clone(),
            InvokeOptions::default().invocation_id("resume-1"),
        )
        .await;
    assert!(first.is_err(), "the injected failure ends the first run");
    let record = store.load("resume-1").await.unwrap().expect("a checkpoint");
    let recorded: Vec<u64> = record
        .fan_out_progress
        .iter()
        .flat_map(|p| p.instances.iter().enumerate())
        .filter(|(_, i)| i.state == InstanceState::Completed)
        .map(|(index, _)| index as u64)
        .collect();
    let sent_first = chunk_members(&mock).len();

    let done = graph
        .invoke_with(
            initial,
            InvokeOptions::default().resume_invocation("resume-1"),
        )
        .await
        .unwrap();
    assert_eq!(done.state.labels, labels(8), "every item, in order");
    let resumed: Vec<Vec<u64>> = chunk_members(&mock).split_off(sent_first);
    let mut sent: Vec<u64> = resumed.iter().flatten().copied().collect();
    sent.sort_unstable();
    let expected: Vec<u64> = (0..8).filter(|i| !recorded.contains(i)).collect();
    assert_eq!(
        sent, expected,
        "only the unrecorded instances, each once (recorded {recorded:?})"
    );
    // Instance 0 was recorded before instance 1's failure was seen: chunk 0-3 cannot
    // fill on resume and goes partial after the linger.
    assert!(recorded.contains(&0), "recorded {recorded:?}");
    assert!(
        resumed
            .iter()
            .any(|members| members.len() < 4 && members.iter().all(|i| *i < 4)),
        "a partial chunk 0-3: {resumed:?}"
    );
}
