//! Runs one fan-out of 100,000 trivial instances (one node each) at concurrency 64
//! on a current-thread tokio runtime, then prints the elapsed time, the time per
//! instance and the process's peak resident set size (`VmHWM`, Linux only).
//!
//! Run: `cargo run --release -p openarmature-pipeline --example fan_out_rss`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Instant;

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

/// A `/proc/self/status` line's value (e.g. `VmHWM`), as printed there.
fn proc_status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "unavailable".to_owned())
}

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

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let graph = graph();
    let initial = Batch {
        xs: (0..INSTANCES as i64).collect(),
        ..Batch::default()
    };
    println!("peak RSS before the run: {}", proc_status("VmHWM"));
    let started = Instant::now();
    let out = runtime.block_on(graph.invoke(initial)).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.ys.len(), INSTANCES);
    assert_eq!(out.ys[INSTANCES - 1], INSTANCES as i64);
    println!("instances:          {INSTANCES} (concurrency {CONCURRENCY}, current-thread runtime)");
    println!("elapsed:            {elapsed:?}");
    println!(
        "time per instance:  {:?}",
        elapsed / u32::try_from(INSTANCES).unwrap()
    );
    println!("peak RSS (VmHWM):   {}", proc_status("VmHWM"));
    println!("current RSS (VmRSS): {}", proc_status("VmRSS"));
}
