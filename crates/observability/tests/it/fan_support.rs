//! What the fan-out tests share (progress, run report): a batch of items fanned out
//! to a per-item graph, and one run of it with an observer attached.

use std::num::NonZeroUsize;
use std::time::Duration;

use openarmature_graph::{state, CompiledGraph, InvokeOptions, Registration};
use openarmature_pipeline::{ErrorPolicy, FanOutNode};
use serde_json::Value;

use crate::support::single_node;

state! {
    /// The run.
    #[derive(Default)]
    pub struct Batch => BatchUpdate {
        /// The items.
        pub items: Vec<i64>,
        /// One result per item.
        pub results: Vec<Value> => append,
        /// Instance errors (collect policy).
        pub errors: Vec<Value> => append,
    }
}

state! {
    /// One instance.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// The item.
        pub item: i64,
        /// Set by a `prep` node, when the instance graph has one.
        pub prepared: bool,
        /// The result.
        pub result: Value,
    }
}

/// `fan`: `per_item` over `items`, at most `concurrency` at once, instance errors
/// collected into `errors`.
pub fn fan_graph(per_item: CompiledGraph<Item>, concurrency: usize) -> CompiledGraph<Batch> {
    let fan = FanOutNode::<Batch, Item>::over_items(per_item, "items", "item", "result", "results")
        .concurrency(NonZeroUsize::new(concurrency))
        .error_policy(ErrorPolicy::Collect)
        .errors_field("errors");
    single_node::<Batch>("fan", fan)
}

/// Runs `graph` over `items` with `observer` attached, and drains its observers.
pub async fn run_items(graph: &CompiledGraph<Batch>, items: Vec<i64>, observer: Registration) {
    let state = Batch {
        items,
        ..Batch::default()
    };
    graph
        .invoke_with(state, InvokeOptions::default().observer(observer))
        .await
        .unwrap();
    graph.drain(Some(Duration::from_secs(5))).await;
}
