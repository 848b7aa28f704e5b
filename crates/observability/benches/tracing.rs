//! Tracing overhead (issue 8, item 6): time per node step on a linear graph of 100
//! trivial nodes, spans off vs on.
//!
//! - `off`: no observer (the engine builds no events);
//! - `noop_observer`: one no-op observer, events delivered and drained (what any
//!   observer costs, before spans);
//! - `spans_noop_exporter`: [`OtelObserver`] through [`OtelObserver::invoke`] on a
//!   private provider with a simple processor and an exporter that drops the spans
//!   (the observer's and the SDK's cost: 101 spans per invocation);
//! - `spans_in_memory`: the same with the SDK's in-memory exporter (cleared after
//!   every invocation).
//!
//! Throughput is set to the node count, so criterion's per-element figure is the cost
//! per node step.

#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::{observer_fn, CompiledGraph, InvokeOptions, Registration};
use openarmature_observability::OtelObserver;
use openarmature_testkit::workload::{counting_chain, Counter};
use opentelemetry_sdk::testing::trace::NoopSpanExporter;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

const NODES: usize = 100;

fn linear(nodes: usize) -> CompiledGraph<Counter> {
    counting_chain(nodes).compile().expect("valid graph")
}

fn tracing(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let graph = linear(NODES);
    let mut group = c.benchmark_group("tracing");
    group.throughput(Throughput::Elements(NODES as u64));

    group.bench_with_input(BenchmarkId::new("off", NODES), &NODES, |b, _| {
        b.iter(|| {
            rt.block_on(graph.invoke(black_box(Counter::default())))
                .expect("run")
        })
    });

    group.bench_with_input(BenchmarkId::new("noop_observer", NODES), &NODES, |b, _| {
        b.iter(|| {
            rt.block_on(async {
                let options = InvokeOptions::default().observer(Registration::new(
                    "noop",
                    observer_fn(|_e| async { Ok(()) }),
                ));
                graph
                    .invoke_with(black_box(Counter::default()), options)
                    .await
                    .expect("run");
                graph.drain(None).await
            })
        })
    });

    let noop = SdkTracerProvider::builder()
        .with_simple_exporter(NoopSpanExporter::new())
        .build();
    let otel = OtelObserver::builder(&noop).build();
    group.bench_with_input(
        BenchmarkId::new("spans_noop_exporter", NODES),
        &NODES,
        |b, _| {
            b.iter(|| {
                rt.block_on(otel.invoke(
                    &graph,
                    black_box(Counter::default()),
                    InvokeOptions::default(),
                ))
                .expect("run")
            })
        },
    );

    let exporter = InMemorySpanExporter::default();
    let memory = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = OtelObserver::builder(&memory).build();
    group.bench_with_input(
        BenchmarkId::new("spans_in_memory", NODES),
        &NODES,
        |b, _| {
            b.iter(|| {
                let done = rt
                    .block_on(otel.invoke(
                        &graph,
                        black_box(Counter::default()),
                        InvokeOptions::default(),
                    ))
                    .expect("run");
                exporter.reset();
                done
            })
        },
    );
    group.finish();
}

criterion_group!(benches, tracing);
criterion_main!(benches);
