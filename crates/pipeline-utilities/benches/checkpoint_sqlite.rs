//! The durable checkpoint cost: time per node step of a linear graph of trivial nodes
//! saving a full snapshot after every node to the SQLite Checkpointer (a WAL-mode file
//! under the temp dir), against the same graph with no checkpointer. The 10 / 1000
//! ratio shows whether a save's cost grows with the run (it should not: a save appends
//! only its new completed positions).

#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, Target, END};
use openarmature_pipeline::SqliteCheckpointer;

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

fn graph(nodes: usize, store: Option<SqliteCheckpointer>) -> CompiledGraph<Counter> {
    let mut b = GraphBuilder::new(Counter::default());
    for i in 0..nodes {
        let next = if i + 1 < nodes {
            Target::from(format!("n{}", i + 1))
        } else {
            END
        };
        b = b
            .add_node(format!("n{i}"), |s: Arc<Counter>, _c: NodeCtx| async move {
                Ok(CounterUpdate::default().n(s.n + 1))
            })
            .add_edge(format!("n{i}"), next);
    }
    if let Some(store) = store {
        b = b.checkpointer(Arc::new(store));
    }
    b.entry("n0").compile().expect("valid graph")
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
            b.iter(|| {
                rt.block_on(plain.invoke(black_box(Counter::default())))
                    .expect("run")
            })
        });
        let durable = graph(nodes, Some(store.clone()));
        group.bench_with_input(BenchmarkId::new("sqlite", nodes), &nodes, |b, _| {
            b.iter(|| {
                rt.block_on(durable.invoke(black_box(Counter::default())))
                    .expect("run")
            })
        });
    }
    group.finish();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
