//! Spec: pipeline-utilities §10.11 — checkpoint workloads shared by the backends'
//! benches: the saves a run makes during a fan-out, replayed straight against a
//! Checkpointer (no graph around them), so a bench measures the store alone; and the
//! linear graph of trivial nodes the per-step benches run.

use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, Target, END};

use openarmature_graph::checkpoint::{
    CheckpointRecord, Checkpointer, FanOutProgress, InstanceProgress, InstanceState, NodePosition,
};
use serde_json::json;

state! {
    /// The state of [`counting_chain`]: a counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

/// A linear graph `n0 → n1 → … → END` of `nodes` trivial nodes, each adding one to
/// `n`, with entry `n0`; not compiled yet, so a bench can add a checkpointer or
/// observers first.
pub fn counting_chain(nodes: usize) -> GraphBuilder<Counter> {
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
    b.entry("n0")
}

/// One invocation of a [`counting_chain`] graph on `rt`, from a black-boxed default
/// state (a bench's timed body).
///
/// # Panics
/// When the invocation fails.
pub fn invoke_once(rt: &tokio::runtime::Runtime, graph: &CompiledGraph<Counter>) -> Counter {
    rt.block_on(graph.invoke(std::hint::black_box(Counter::default())))
        .unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Replays the saves of one fan-out of `width` instances finishing one after the other,
/// as the engine makes them: the run's record (one completed position before the
/// fan-out, a small state) with the fan-out's progress, re-saved after every finished
/// instance (`width` saves). A backend whose save re-encodes the whole progress costs
/// O(width) per save; an incremental one a constant.
///
/// # Panics
/// When a save fails (a bench has nothing better to do with the error).
pub async fn fan_out_saves(store: &dyn Checkpointer, invocation_id: &str, width: usize) {
    let start = NodePosition::new(Vec::new(), "prepare", 0, 0, None);
    let mut live = CheckpointRecord::new(
        invocation_id,
        "bench",
        json!({"label": "fan-out bench"}),
        vec![start],
        "1",
    )
    .with_fan_out_progress(vec![FanOutProgress::new(
        Vec::new(),
        "fan",
        Vec::new(),
        width,
    )]);
    for i in 0..width {
        let mut done = InstanceProgress::default();
        done.state = InstanceState::Completed;
        done.result = json!({"index": i, "label": "a short result"});
        live.fan_out_progress[0].instances[i] = done;
        live.last_saved_at += Duration::from_micros(1);
        store
            .save_fan_out_internal(invocation_id, live.clone())
            .await
            .unwrap_or_else(|e| panic!("save of instance {i} failed: {e}"));
    }
}

/// Runs `iters` fan-outs of [`fan_out_saves`] on `rt` and returns the time they took
/// (criterion's `iter_custom`); the invocation is deleted after each, untimed, so
/// every fan-out starts on an empty store.
///
/// # Panics
/// When a save or the delete fails.
pub fn timed_fan_outs(
    rt: &tokio::runtime::Runtime,
    store: &dyn Checkpointer,
    width: usize,
    iters: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let started = std::time::Instant::now();
        rt.block_on(fan_out_saves(store, "fan", width));
        total += started.elapsed();
        rt.block_on(store.delete("fan"))
            .unwrap_or_else(|e| panic!("delete failed: {e}"));
    }
    total
}
