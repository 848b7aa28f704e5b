//! Fan-out throughput on a current-thread tokio runtime (issue 19): 100,000 trivial
//! instances (one node each) at concurrency 64, and 1,000 at concurrency 10 beside
//! the per-step cost of a linear graph of 1,000 trivial nodes (the row "fan-out per
//! instance within 3× a linear node step"). The `elements` throughput line gives
//! instances (or steps) per second.
//!
//! Run: `cargo bench -p openarmature-pipeline --bench fan_out`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod fan;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn fan_out(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("fan_out");
    for (instances, concurrency, name) in [
        (100_000, 64, "100k_trivial_instances_c64_current_thread"),
        (1_000, 10, "1k_trivial_instances_c10_current_thread"),
    ] {
        let graph = fan::fan_graph(concurrency);
        let initial = fan::batch(instances);
        group.throughput(Throughput::Elements(instances as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(10));
        group.bench_function(name, |b| {
            b.iter_batched(
                || initial.clone(),
                |state| runtime.block_on(fan::fan_once(&graph, state)),
                BatchSize::PerIteration,
            );
        });
    }
    const NODES: usize = 1_000;
    let linear = fan::linear_graph(NODES);
    group.throughput(Throughput::Elements(NODES as u64));
    group.bench_function("linear_1000_nodes_current_thread", |b| {
        b.iter(|| runtime.block_on(fan::linear_once(&linear, NODES)));
    });
    group.finish();
}

criterion_group!(benches, fan_out);
criterion_main!(benches);
