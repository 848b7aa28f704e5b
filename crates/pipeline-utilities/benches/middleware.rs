//! Middleware overhead per node step (retry + timing + failure isolation around a
//! trivial node vs the bare node) and the cost of one extra retry attempt with
//! zero backoff; and (issue 19) the degrade path — failure isolation around retry(3),
//! every attempt failing — against retry(3) ending in success (`degrade`).

#![allow(clippy::expect_used, missing_docs)]

mod degrade;

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::{
    state, CategorizedError, CompiledGraph, GraphBuilder, NodeCtx, NodeError, Target, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    FailureIsolationMiddleware, RetryMiddleware, TimingMiddleware, TimingRecord,
};

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

const NODES: usize = 100;

fn graph(stack: bool) -> CompiledGraph<Counter> {
    let mut b = GraphBuilder::new(Counter::default());
    for i in 0..NODES {
        let name = format!("n{i}");
        b = b
            .add_node(name.clone(), |s: Arc<Counter>, _c: NodeCtx| async move {
                Ok(CounterUpdate::default().n(s.n + 1))
            })
            .add_edge(
                name.clone(),
                if i + 1 < NODES {
                    Target::from(format!("n{}", i + 1))
                } else {
                    END
                },
            );
        if stack {
            b = b
                .node_middleware(
                    &name,
                    Arc::new(FailureIsolationMiddleware::<Counter>::new("bench", |_| {
                        CounterUpdate::default()
                    })),
                )
                .node_middleware(
                    &name,
                    Arc::new(TimingMiddleware::new(
                        name.clone(),
                        |_r: TimingRecord| async { Ok(()) },
                    )),
                )
                .node_middleware(
                    &name,
                    Arc::new(RetryMiddleware::new(
                        RetryConfig::default().backoff(Constant(Duration::ZERO)),
                    )),
                );
        }
    }
    b.entry("n0").compile().expect("valid graph")
}

/// One node failing `failures` times with a transient error before succeeding.
fn flaky(failures: u32) -> (CompiledGraph<Counter>, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let g = GraphBuilder::new(Counter::default())
        .add_node("flaky", move |_s: Arc<Counter>, _c: NodeCtx| {
            let counter = Arc::clone(&counter);
            async move {
                if counter.fetch_add(1, Ordering::Relaxed) % (failures + 1) < failures {
                    Err::<CounterUpdate, NodeError>(
                        CategorizedError::new(
                            openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                            "down",
                        )
                        .into(),
                    )
                } else {
                    Ok(CounterUpdate::default().n(1))
                }
            }
        })
        .node_middleware(
            "flaky",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(failures + 1)
                    .backoff(Constant(Duration::ZERO)),
            )),
        )
        .add_edge("flaky", END)
        .entry("flaky")
        .compile()
        .expect("valid graph");
    (g, calls)
}

fn middleware(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("middleware_stack");
    group.throughput(Throughput::Elements(NODES as u64));
    let bare = graph(false);
    group.bench_function("bare_100_nodes", |b| {
        b.iter(|| {
            rt.block_on(bare.invoke(black_box(Counter::default())))
                .expect("run")
        })
    });
    let stacked = graph(true);
    group.bench_function("isolation_timing_retry_100_nodes", |b| {
        b.iter(|| {
            rt.block_on(stacked.invoke(black_box(Counter::default())))
                .expect("run")
        })
    });
    group.finish();

    let mut group = c.benchmark_group("retry_attempts");
    for failures in [0u32, 1, 4] {
        let (g, _) = flaky(failures);
        group.bench_with_input(
            BenchmarkId::new("transient_failures_then_success", failures),
            &failures,
            |b, _| {
                b.iter(|| {
                    rt.block_on(g.invoke(black_box(Counter::default())))
                        .expect("run")
                })
            },
        );
    }
    group.finish();

    let mut group = c.benchmark_group("degrade_path");
    for (name, degraded) in [
        ("retry3_then_success", false),
        ("isolation_retry3_all_fail", true),
    ] {
        let g = degrade::graph(degraded);
        group.bench_function(name, |b| b.iter(|| rt.block_on(degrade::run(&g, degraded))));
    }
    group.finish();
}

criterion_group!(benches, middleware);
criterion_main!(benches);
