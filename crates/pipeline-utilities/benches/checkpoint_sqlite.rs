//! The durable checkpoint cost: time per node step of a linear graph of trivial nodes
//! saving a full snapshot after every node to the SQLite Checkpointer (a WAL-mode file
//! under the temp dir), against the same graph with no checkpointer. The 10 / 1000
//! ratio shows whether a save's cost grows with the run (it should not: a save appends
//! only its new completed positions).
//!
//! `checkpoint_fan_out`: the saves of one fan-out of 10 or 1000 instances, one save per
//! finished instance (`openarmature_testkit::workload::fan_out_saves`), straight against
//! the SQLite and the in-memory Checkpointer; throughput is instances, so the time per
//! element is the per-instance save cost. The 10 / 1000 ratio shows whether a save's
//! cost grows with the fan-out's width (it should not: a save writes only the changed
//! instances).

#![allow(clippy::expect_used, missing_docs)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::checkpoint::{Checkpointer, InMemoryCheckpointer};
use openarmature_graph::CompiledGraph;
use openarmature_pipeline::SqliteCheckpointer;
use openarmature_testkit::workload::{counting_chain, invoke_once, timed_fan_outs, Counter};

fn graph(nodes: usize, store: Option<SqliteCheckpointer>) -> CompiledGraph<Counter> {
    let mut b = counting_chain(nodes);
    if let Some(store) = store {
        b = b.checkpointer(Arc::new(store));
    }
    b.compile().expect("valid graph")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let path = std::env::temp_dir().join(format!("oa-bench-{}.db", std::process::id()));
    let store = SqliteCheckpointer::open(&path).expect("database");
    let mut group = c.benchmark_group("checkpoint_sqlite");
    group.sample_size(10);
    for nodes in [10usize, 100, 1000] {
        group.throughput(Throughput::Elements(nodes as u64));
        let plain = graph(nodes, None);
        group.bench_with_input(BenchmarkId::new("none", nodes), &nodes, |b, _| {
            b.iter(|| invoke_once(&rt, &plain))
        });
        let durable = graph(nodes, Some(store.clone()));
        group.bench_with_input(BenchmarkId::new("sqlite", nodes), &nodes, |b, _| {
            b.iter(|| invoke_once(&rt, &durable))
        });
    }
    group.finish();
    fan_out(c, &rt, &store);
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn fan_out(c: &mut Criterion, rt: &tokio::runtime::Runtime, sqlite: &SqliteCheckpointer) {
    let mut group = c.benchmark_group("checkpoint_fan_out");
    group.sample_size(10);
    let memory = InMemoryCheckpointer::new();
    let stores: [(&str, &dyn Checkpointer); 2] = [("sqlite", sqlite), ("memory", &memory)];
    for width in [10usize, 1000] {
        group.throughput(Throughput::Elements(width as u64));
        for (name, store) in stores {
            group.bench_with_input(BenchmarkId::new(name, width), &width, |b, &width| {
                b.iter_custom(|iters| timed_fan_outs(rt, store, width, iters))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
