//! One worker SIGKILLed in the middle of a fan-out of a few hundred LLM items, then
//! restarted: the invocation completes with every item in order; no item recorded
//! complete before the kill is asked again; the requests sent twice are at most those
//! in flight at the kill. Three times: with the fan-out in the parent's process (the
//! worker running it is killed), with each instance a Restate job, and with chunks of
//! [`CHUNK`] consecutive instances per job (the worker running the parent turn is
//! killed, with the instances or chunks it was serving).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, Checkpointer, InstanceState,
};
use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_restate::{RestateClient, Step};
use openarmature_testkit::services::unique_name;
use serde_json::json;

use crate::cluster::{Cluster, Fleet};
use crate::graphs::{label, CONCURRENCY};
use crate::mock::Mock;
use crate::Servers;

const ITEMS: i64 = 300;
const WORKERS: usize = 3;
/// The kill comes once this many items were asked.
const KILL_AFTER: usize = 100;
/// Instances per Restate job in the chunked run (the concurrency bound holds two
/// chunks).
const CHUNK: usize = 4;

/// The newest record of the invocation keyed `key`.
async fn newest(store: &dyn Checkpointer, key: &str) -> CheckpointRecord {
    let filter = CheckpointFilter::new().correlation_id(key);
    let newest = store
        .list(Some(&filter))
        .await
        .unwrap()
        .into_iter()
        .max_by_key(|r| r.last_saved_at)
        .expect("a checkpoint exists by the kill");
    store.load(&newest.invocation_id).await.unwrap().unwrap()
}

/// The fan-out items `record` lists as completed.
fn completed(record: &CheckpointRecord) -> BTreeSet<i64> {
    let mut done = BTreeSet::new();
    for progress in &record.fan_out_progress {
        for (index, instance) in progress.instances.iter().enumerate() {
            if instance.state == InstanceState::Completed {
                done.insert(i64::try_from(index).unwrap());
            }
        }
    }
    done
}

/// The worker that ran the parent turn, as its state recorded it.
fn parent_worker(record: &CheckpointRecord) -> String {
    let outer = record.parent_states.first().unwrap_or(&record.state);
    outer["prepared_by"]
        .as_str()
        .expect("prepared_by recorded")
        .to_owned()
}

/// Which worker the kill hits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Victim {
    /// The one running the parent turn.
    Parent,
    /// Another one, the last to have sent an LLM request (running instances).
    Other,
}

pub async fn in_process(servers: Servers) {
    scenario(servers, "batch", 1, Victim::Parent).await;
}

pub async fn dispatched(servers: Servers) {
    scenario(servers, "dispatched", 1, Victim::Parent).await;
}

pub async fn chunked(servers: Servers) {
    scenario(servers, "dispatched", CHUNK, Victim::Parent).await;
}

pub async fn chunk_worker(servers: Servers) {
    scenario(servers, "dispatched", CHUNK, Victim::Other).await;
}

/// How many chunk jobs of the invocation keyed `key` Restate ran (its admin API's
/// invocation table: the chunk jobs' idempotency keys start with the key).
async fn chunk_jobs(admin: &str, key: &str) -> usize {
    let query = format!(
        "select count(*) as n from sys_invocation where target = 'OpenArmatureInstance/run_chunk' and idempotency_key like '{key}/%'"
    );
    let answer: serde_json::Value = reqwest::Client::new()
        .post(format!("{admin}/query"))
        .header("accept", "application/json")
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["rows"][0]["n"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or_else(|| panic!("no count in {answer}"))
}

async fn scenario(servers: Servers, graph: &'static str, chunk: usize, target: Victim) {
    let schema = unique_name("oa_restate_kill");
    let backend = PgBackend::connect(PgConfig::new(&servers.postgres).schema(&schema))
        .await
        .unwrap();
    let store: Arc<dyn Checkpointer> = Arc::new(backend.checkpointer());
    let (mock, mock_url) = Mock::start(crate::mock::DELAY).await;
    let fleet = Fleet {
        graph,
        concurrency: CONCURRENCY,
        chunk,
        ingress: servers.ingress.clone(),
        pg_url: servers.postgres.clone(),
        pg_schema: schema,
        mock_url,
    };
    let mut cluster = Cluster::start(fleet, WORKERS, &servers.haproxy, &servers.admin).await;
    let client = RestateClient::new(&servers.ingress);
    let key = unique_name("batch");
    let started = Instant::now();
    let items: Vec<i64> = (0..ITEMS).collect();
    let submitted = client
        .submit(&key, &json!({ "items": items }))
        .await
        .unwrap();
    assert!(!submitted.previously_accepted);

    let deadline = Instant::now() + Duration::from_secs(60);
    while mock.total() < KILL_AFTER {
        assert!(
            Instant::now() < deadline,
            "the fan-out never got going: {} requests",
            mock.total()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let parent = parent_worker(&newest(&*store, &key).await);
    let victim = match target {
        Victim::Parent => parent.clone(),
        Victim::Other => mock
            .arrivals()
            .iter()
            .rev()
            .find(|a| a.worker != parent && a.worker != "parent")
            .map(|a| a.worker.clone())
            .expect("instances ran on another worker than the parent"),
    };
    let index = Cluster::index(&victim);
    cluster.kill(index).await;
    let killed_at = Instant::now();
    let before_kill = mock.arrivals();
    let asked_at_kill = mock.per_item();
    let done_at_kill = completed(&newest(&*store, &key).await);
    cluster.restart(index).await;

    // A re-send of the same invocation id is deduplicated by Restate.
    let again = client
        .submit(&key, &json!({ "items": items }))
        .await
        .unwrap();
    assert!(again.previously_accepted, "{again:?}");

    let step = client.attach(&key).await.unwrap();
    let total = started.elapsed();
    let Step::CompletionResponse { state, .. } = &step else {
        panic!("the fan-out did not complete: {step:?}");
    };
    let expected: Vec<String> = items.iter().map(|i| label(*i)).collect();
    assert_eq!(
        state["labels"],
        json!(expected),
        "every item, in item order"
    );

    let counts = mock.per_item();
    let arrivals = mock.arrivals();
    let recovery = arrivals
        .iter()
        .filter(|a| a.at > killed_at)
        .map(|a| a.at - killed_at)
        .min()
        .expect("requests after the kill");
    // The resumed parent: the first item nobody had asked before the kill.
    let resumed = arrivals
        .iter()
        .filter(|a| a.at > killed_at && !asked_at_kill.contains_key(&a.item))
        .map(|a| a.at - killed_at)
        .min()
        .expect("new items after the kill");
    let workers_before: BTreeSet<&str> = before_kill.iter().map(|a| a.worker.as_str()).collect();
    let twice: Vec<i64> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(i, _)| *i)
        .collect();
    let in_flight: BTreeSet<i64> = asked_at_kill
        .keys()
        .copied()
        .filter(|i| !done_at_kill.contains(i))
        .collect();
    let on_victim: BTreeSet<i64> = before_kill
        .iter()
        .filter(|a| a.worker == victim && in_flight.contains(&a.item))
        .map(|a| a.item)
        .collect();
    let mode = if chunk > 1 {
        format!("{graph}, {chunk} per job")
    } else {
        graph.to_owned()
    };
    println!(
        "restate kill ({mode}): {ITEMS} items over {WORKERS} workers (concurrency {CONCURRENCY}); {} {victim} SIGKILLed \
         after {} requests from {workers_before:?} ({} items recorded complete, {} asked but not recorded, {} of them on {victim}); \
         first request after the kill {:.0} ms later, first new item (the parent resumed) {:.0} ms later; {} requests in all, {} items asked twice {twice:?}; total {:.2} s; per worker {:?}",
        if target == Victim::Parent { "parent" } else { "instance worker" },
        asked_at_kill.values().sum::<usize>(),
        done_at_kill.len(),
        in_flight.len(),
        on_victim.len(),
        recovery.as_secs_f64() * 1000.0,
        resumed.as_secs_f64() * 1000.0,
        counts.values().sum::<usize>(),
        twice.len(),
        total.as_secs_f64(),
        mock.per_worker(),
    );
    if chunk > 1 {
        // One job per chunk: the resumed parent's re-sends attached to them.
        let jobs = chunk_jobs(&servers.admin, &key).await;
        println!("restate kill ({mode}): {jobs} chunk jobs");
        assert_eq!(jobs, items.len().div_ceil(chunk));
    }
    for i in &items {
        assert!(
            counts.get(i).copied().unwrap_or(0) >= 1,
            "item {i} never asked"
        );
        assert!(counts[i] <= 2, "item {i} asked {} times", counts[i]);
    }
    assert!(!done_at_kill.is_empty());
    for i in &done_at_kill {
        assert_eq!(
            counts[i], 1,
            "item {i} was recorded complete before the kill and ran again"
        );
    }
    for i in &twice {
        assert!(
            in_flight.contains(i),
            "item {i} asked twice but was not in flight at the kill"
        );
    }
    assert!(
        in_flight.len() <= CONCURRENCY + 1,
        "{} in flight > concurrency",
        in_flight.len()
    );
    if graph == "dispatched" {
        // Instances ran on several workers; the ones in flight elsewhere were attached
        // to by the resumed parent (same idempotency key), not asked again.
        assert!(workers_before.len() >= 2, "{workers_before:?}");
        for i in &twice {
            assert!(
                on_victim.contains(i),
                "item {i} was in flight on a surviving worker and ran again"
            );
        }
    } else {
        assert_eq!(workers_before, BTreeSet::from([victim.as_str()]));
    }
}
