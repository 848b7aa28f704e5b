//! The workloads the fan-out bench and examples share (issue 19): a fan-out of
//! trivial one-node instances, and the linear graph of trivial nodes whose per-step
//! cost it is compared with.
#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::num::NonZeroUsize;
use std::sync::Arc;

use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, END};
use openarmature_pipeline::FanOutNode;
pub use openarmature_testkit::workload::{counting_chain, Counter};

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

/// `fan` → END: one trivial instance (`y = x + 1`) per item of `xs`.
pub fn fan_graph(concurrency: usize) -> CompiledGraph<Batch> {
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
                .concurrency(NonZeroUsize::new(concurrency)),
        )
        .add_edge("fan", END)
        .entry("fan")
        .compile()
        .unwrap()
}

/// The fan-out's input: `n` items.
pub fn batch(n: usize) -> Batch {
    Batch {
        xs: (0..n as i64).collect(),
        ..Batch::default()
    }
}

/// Runs one fan-out and checks its output.
pub async fn fan_once(graph: &CompiledGraph<Batch>, initial: Batch) {
    let n = initial.xs.len();
    let out = graph.invoke(initial).await.unwrap();
    assert_eq!(out.ys.len(), n);
    assert_eq!(out.ys.last().copied(), Some(n as i64));
}

/// A linear graph of `nodes` trivial nodes (`n += 1`).
pub fn linear_graph(nodes: usize) -> CompiledGraph<Counter> {
    counting_chain(nodes).compile().unwrap()
}

/// Runs the linear graph once and checks it took every step.
pub async fn linear_once(graph: &CompiledGraph<Counter>, nodes: usize) {
    let out = graph.invoke(Counter::default()).await.unwrap();
    assert_eq!(out.n, nodes as u64);
}
