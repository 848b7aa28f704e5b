//! The durable checkpoint cost on PostgreSQL: time per node step of a linear graph of
//! trivial nodes saving a full snapshot after every node to the PostgreSQL
//! Checkpointer (one upsert per step, over a loopback connection), against the same
//! graph with no checkpointer and with the SQLite Checkpointer (a WAL file under the
//! temp dir), in one run so the ratios compare on the same machine load; the 10 / 1000
//! ratio shows whether a save's cost grows with the run. `checkpoint_postgres_fan_out`:
//! the saves of one fan-out of 10 or 1000 instances, one per finished instance
//! (`openarmature_testkit::workload::fan_out_saves`), straight against the store;
//! throughput is instances, so the time per element is the per-instance save cost.
//! Needs `OPENARMATURE_TEST_POSTGRES_URL` (see `.ci/services.sh`); without it the bench
//! prints a notice and measures nothing.

#![allow(clippy::expect_used, missing_docs)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::CompiledGraph;
use openarmature_pipeline::SqliteCheckpointer;
use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_testkit::workload::{counting_chain, invoke_once, timed_fan_outs, Counter};

fn graph(nodes: usize, store: Option<Arc<dyn Checkpointer>>) -> CompiledGraph<Counter> {
    let mut b = counting_chain(nodes);
    if let Some(store) = store {
        b = b.checkpointer(store);
    }
    b.compile().expect("valid graph")
}

fn bench(c: &mut Criterion) {
    let Ok(url) = std::env::var("OPENARMATURE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: set OPENARMATURE_TEST_POSTGRES_URL (see .ci/services.sh)");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let schema = format!("oa_bench_{}", std::process::id());
    let backend = rt
        .block_on(PgBackend::connect(PgConfig::new(url).schema(&schema)))
        .expect("database");
    let sqlite_path = std::env::temp_dir().join(format!("{schema}.db"));
    let mut group = c.benchmark_group("checkpoint_postgres");
    group.sample_size(10);
    for nodes in [10usize, 100, 1000] {
        group.throughput(Throughput::Elements(nodes as u64));
        let plain = graph(nodes, None);
        group.bench_with_input(BenchmarkId::new("none", nodes), &nodes, |b, _| {
            b.iter(|| invoke_once(&rt, &plain))
        });
        let durable = graph(nodes, Some(Arc::new(backend.checkpointer())));
        group.bench_with_input(BenchmarkId::new("postgres", nodes), &nodes, |b, _| {
            b.iter(|| invoke_once(&rt, &durable))
        });
        let sqlite = graph(
            nodes,
            Some(Arc::new(
                SqliteCheckpointer::open(&sqlite_path).expect("sqlite file"),
            )),
        );
        group.bench_with_input(BenchmarkId::new("sqlite", nodes), &nodes, |b, _| {
            b.iter(|| invoke_once(&rt, &sqlite))
        });
    }
    group.finish();
    let store = backend.checkpointer();
    let mut group = c.benchmark_group("checkpoint_postgres_fan_out");
    group.sample_size(10);
    for width in [10usize, 1000] {
        group.throughput(Throughput::Elements(width as u64));
        group.bench_with_input(BenchmarkId::new("postgres", width), &width, |b, &width| {
            b.iter_custom(|iters| timed_fan_outs(&rt, &store, width, iters))
        });
    }
    group.finish();
    rt.block_on(async {
        let client = backend.pool().get().await.expect("connection");
        client
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .expect("cleanup");
    });
    for suffix in ["", "-wal", "-shm"] {
        let mut p = sqlite_path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
