//! Fan-out throughput: 100,000 trivial instances (one node each) at concurrency
//! 64 on a current-thread tokio runtime. Criterion reports the time per fan-out;
//! the `elements` throughput line gives instances per second (time per instance =
//! reported time / 100,000).
//!
//! Run: `cargo bench -p openarmature-pipeline --bench fan_out`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, END};
use openarmature_pipeline::FanOutNode;

state! {
    /// One instance.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// Input.
        pub x: i64,
        /// Output.
        pub y: i64,
    }
}

state! {
    /// The parent.
    #[derive(Default)]
    pub struct Batch => BatchUpdate {
        /// Items.
        pub xs: Vec<i64>,
        /// Outputs, in item order.
        pub ys: Vec<i64> => append,
    }
}

const INSTANCES: usize = 100_000;
const CONCURRENCY: usize = 64;

fn graph() -> CompiledGraph<Batch> {
    let work: CompiledGraph<Item> = GraphBuilder::new(Item::default())
        .add_node("work", |s: Arc<Item>, _c: NodeCtx| async move {
            Ok(ItemUpdate::default().y(s.x + 1))
        })
        .add_edge("work", END)
        .entry("work")
        .compile()
        .unwrap();
    GraphBuilder::new(Batch::default())
        .add_node(
            "fan",
            FanOutNode::over_items(work, "xs", "x", "y", "ys")
                .concurrency(NonZeroUsize::new(CONCURRENCY)),
        )
        .add_edge("fan", END)
        .entry("fan")
        .compile()
        .unwrap()
}

fn fan_out(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let graph = graph();
    let initial = Batch {
        xs: (0..INSTANCES as i64).collect(),
        ..Batch::default()
    };
    let mut group = c.benchmark_group("fan_out");
    group.throughput(Throughput::Elements(INSTANCES as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("100k_trivial_instances_c64_current_thread", |b| {
        b.iter_batched(
            || initial.clone(),
            |state| {
                let out = runtime.block_on(graph.invoke(state)).unwrap();
                assert_eq!(out.ys.len(), INSTANCES);
                out
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, fan_out);
criterion_main!(benches);
