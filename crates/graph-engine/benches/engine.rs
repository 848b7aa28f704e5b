//! Engine overhead: time per node step on linear graphs of trivial nodes, typed and
//! dynamic state, with and without an observer, and with an in-memory Checkpointer
//! (a full snapshot saved after every node).

#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use openarmature_graph::checkpoint::InMemoryCheckpointer;
use openarmature_graph::{
    observer_fn, state, CompiledGraph, DynSchema, DynState, DynUpdate, FieldType, GraphBuilder,
    NodeCtx, Registration, Target, END,
};
use serde_json::json;

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

fn target(i: usize, nodes: usize) -> Target {
    if i + 1 < nodes {
        Target::from(format!("n{}", i + 1))
    } else {
        END
    }
}

fn typed(nodes: usize) -> CompiledGraph<Counter> {
    typed_builder(nodes)
        .entry("n0")
        .compile()
        .expect("valid graph")
}

fn typed_builder(nodes: usize) -> GraphBuilder<Counter> {
    let mut b = GraphBuilder::new(Counter::default());
    for i in 0..nodes {
        b = b
            .add_node(format!("n{i}"), |s: Arc<Counter>, _c: NodeCtx| async move {
                Ok(CounterUpdate::default().n(s.n + 1))
            })
            .add_edge(format!("n{i}"), target(i, nodes));
    }
    b
}

fn dynamic(nodes: usize) -> (CompiledGraph<DynState>, DynState) {
    let schema = DynSchema::builder()
        .field("n", FieldType::Int, json!(0))
        .build();
    let mut b = GraphBuilder::new(schema.defaults());
    for i in 0..nodes {
        b = b
            .add_node(
                format!("n{i}"),
                |s: Arc<DynState>, _c: NodeCtx| async move {
                    let n = s.get("n").and_then(serde_json::Value::as_i64).unwrap_or(0);
                    Ok(DynUpdate::new().set("n", json!(n + 1)))
                },
            )
            .add_edge(format!("n{i}"), target(i, nodes));
    }
    (
        b.entry("n0").compile().expect("valid graph"),
        schema.defaults(),
    )
}

fn steps(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("node_step");
    for nodes in [10usize, 100, 1000] {
        group.throughput(Throughput::Elements(nodes as u64));
        let graph = typed(nodes);
        group.bench_with_input(BenchmarkId::new("typed", nodes), &nodes, |b, _| {
            b.iter(|| {
                rt.block_on(graph.invoke(black_box(Counter::default())))
                    .expect("run")
            })
        });
        let (graph, initial) = dynamic(nodes);
        group.bench_with_input(BenchmarkId::new("dynamic", nodes), &nodes, |b, _| {
            b.iter(|| {
                rt.block_on(graph.invoke(black_box(initial.clone())))
                    .expect("run")
            })
        });
        let checkpointed = typed_builder(nodes)
            .entry("n0")
            .checkpointer(Arc::new(InMemoryCheckpointer::new()))
            .compile()
            .expect("valid graph");
        group.bench_with_input(
            BenchmarkId::new("typed_checkpointed", nodes),
            &nodes,
            |b, _| {
                b.iter(|| {
                    rt.block_on(checkpointed.invoke(black_box(Counter::default())))
                        .expect("run")
                })
            },
        );
        let observed = typed(nodes);
        observed.attach_observer(Registration::new(
            "noop",
            observer_fn(|_e| async { Ok(()) }),
        ));
        group.bench_with_input(
            BenchmarkId::new("typed_one_observer", nodes),
            &nodes,
            |b, _| {
                b.iter(|| {
                    rt.block_on(async {
                        observed.invoke(Counter::default()).await.expect("run");
                        observed.drain(None).await
                    })
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
