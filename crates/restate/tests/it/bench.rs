//! The fleet benchmark (ignored by default; run it with
//! `cargo test -p openarmature-restate --test it -- --ignored fleet_throughput --nocapture`
//! after `source .ci/services.sh && oa_services_start`): items/s of a fan-out over a
//! latency-bound mock LLM, in one worker's process vs dispatched over 1 and 3 workers,
//! the per-item cost of durable dispatch with no latency and no concurrency, and
//! dispatched in chunks of 1 / 16 / 64 instances per job. `OA_BENCH=chunks` runs only
//! the chunk rows.
//! Prints figures; asserts only that every item completed.

use std::time::{Duration, Instant};

use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_restate::{RestateClient, Step};
use openarmature_testkit::services::unique_name;
use serde_json::json;

use crate::cluster::{Cluster, Fleet};
use crate::mock::Mock;
use crate::Servers;

#[derive(Clone, Copy)]
struct Case {
    graph: &'static str,
    chunk: usize,
    workers: usize,
    latency: Duration,
    concurrency: usize,
    items: i64,
}

pub async fn fleet_throughput(servers: Servers) {
    let ms = Duration::from_millis;
    // The loaded cases (200 ms node latency, 50 in flight) and the unloaded ones
    // (no latency, one at a time) each vary only the graph and the worker count.
    let loaded = Case {
        chunk: 1,
        graph: "batch",
        workers: 1,
        latency: ms(200),
        concurrency: 50,
        items: 1000,
    };
    let unloaded = Case {
        latency: ms(0),
        concurrency: 1,
        items: 200,
        ..loaded
    };
    let cases = [
        loaded,
        Case {
            graph: "dispatched",
            ..loaded
        },
        Case {
            graph: "dispatched",
            workers: 3,
            ..loaded
        },
        unloaded,
        Case {
            graph: "dispatched",
            ..unloaded
        },
    ];
    let chunk_rows = [1, 16, 64].into_iter().flat_map(|chunk| {
        [ms(0), ms(200)].map(|latency| Case {
            graph: "dispatched",
            chunk,
            workers: 3,
            latency,
            concurrency: 64,
            items: 640,
        })
    });
    let only_chunks = std::env::var("OA_BENCH").is_ok_and(|b| b == "chunks");
    let cases: Vec<Case> = if only_chunks {
        chunk_rows.collect()
    } else {
        cases.into_iter().chain(chunk_rows).collect()
    };
    for case in cases {
        let schema = unique_name("oa_restate_bench");
        // Connecting creates and migrates the schema the workers share.
        let _backend = PgBackend::connect(PgConfig::new(&servers.postgres).schema(&schema))
            .await
            .unwrap();
        let (mock, mock_url) = Mock::start(case.latency).await;
        let fleet = Fleet {
            graph: case.graph,
            concurrency: case.concurrency,
            chunk: case.chunk,
            ingress: servers.ingress.clone(),
            pg_url: servers.postgres.clone(),
            pg_schema: schema,
            mock_url,
        };
        let _cluster = Cluster::start(fleet, case.workers, &servers.haproxy, &servers.admin).await;
        let client = RestateClient::new(&servers.ingress);
        let key = unique_name("bench");
        let items: Vec<i64> = (0..case.items).collect();
        let started = Instant::now();
        client
            .submit(&key, &json!({ "items": items }))
            .await
            .unwrap();
        let step = client.attach(&key).await.unwrap();
        let elapsed = started.elapsed();
        let Step::CompletionResponse { state, .. } = &step else {
            panic!("did not complete: {step:?}");
        };
        assert_eq!(state["labels"].as_array().map(Vec::len), Some(items.len()));
        #[allow(clippy::cast_precision_loss)]
        let per_item_ms = elapsed.as_secs_f64() * 1000.0 / case.items as f64;
        #[allow(clippy::cast_precision_loss)]
        let rate = case.items as f64 / elapsed.as_secs_f64();
        println!(
            "restate bench: {:<10} chunk {:>2} workers {} latency {:>3} ms concurrency {:>2} items {:>4}: {:.2} s, {rate:.1} items/s, {per_item_ms:.2} ms/item, requests {}",
            case.graph,
            case.chunk,
            case.workers,
            case.latency.as_millis(),
            case.concurrency,
            case.items,
            elapsed.as_secs_f64(),
            mock.total()
        );
    }
}
