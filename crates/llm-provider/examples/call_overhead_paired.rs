//! The `call_overhead` benchmark's variants, interleaved: each round runs every
//! variant for one block of calls (rotating the order), so a ratio compares blocks
//! measured a fraction of a second apart under the same machine load. Prints the
//! median wall time per call and the median of the per-round ratios to the bare
//! baseline.
//!
//! `cargo run --release -p openarmature-llm --example call_overhead_paired`
//! (`ROUNDS=n`, default 15). `node_plain` (the node without an observer) is a
//! diagnostic: it separates the engine's per-invocation cost from the events'.
//! `node_reading` is `node_observed` with an observer that reads the events' request
//! messages, parameters and response text (so the payload parts built on first read
//! are built, on the delivery worker).
//! `node_undrained` is `node_observed` without a drain after each call (as a service
//! handler runs): the events are delivered by runs the graph's pacer starts on the
//! workers, and one drain at the end of the block waits for the last of them.
//! `ONLY=<variant>` runs that variant alone (for a profiler; no ratios);
//! `CONCURRENCY=1` or `CONCURRENCY=64` runs that concurrency alone.
//! `provider_flaky` (concurrency 1 only) is one retrying call that needs three requests
//! (`503`, `503`, `200`); its rate against `provider`'s is the issue-19 figure (ideal 33%).
//! `ON_WORKER=1` runs each block of calls, every variant's, inside a task spawned on the
//! runtime (as a service's handler runs) instead of `block_on` from the main thread
//! (as a `#[tokio::main]` loop does): a task a call spawns then starts on the same
//! worker when the caller waits, without waking another thread.

#![allow(clippy::expect_used, missing_docs)]

#[path = "../benches/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{client_runtime, invoke_node, run_node, Calls, Fixture};
use openarmature_graph::CompiledGraph;

const VARIANTS: [&str; 8] = [
    "bare",
    "provider",
    "provider_retry",
    "node_observed",
    "node_plain",
    "provider_flaky",
    "node_reading",
    "node_undrained",
];

/// The three graphs of a concurrency: observed, plain, reading.
type Graphs = [CompiledGraph<Calls>; 3];

/// One call of variant `v` at concurrency `n`.
async fn call(v: usize, n: usize, fx: &Fixture, graphs: &Graphs) {
    match v {
        0 => drop(fx.bare(n).await),
        1 => drop(fx.complete(n, false).await),
        2 => drop(fx.complete(n, true).await),
        3 => drop(run_node(&graphs[0]).await),
        4 => drop(run_node(&graphs[1]).await),
        5 => drop(fx.flaky().await),
        6 => drop(run_node(&graphs[2]).await),
        _ => drop(invoke_node(&graphs[0]).await),
    }
}

/// After a block of `v`'s calls: `node_undrained` drains once (its events were
/// delivered by runs on the workers meanwhile; the drain waits for the last ones).
async fn end_block(v: usize, graphs: &Graphs) {
    if v == 7 {
        graphs[0].drain(None).await;
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let only = std::env::var("ONLY").ok();
    let concurrency: Option<usize> = std::env::var("CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok());
    let on_worker = std::env::var_os("ON_WORKER").is_some();
    let rt = client_runtime();
    let fx = Arc::new(Fixture::new(&rt));
    println!(
        "{rounds} rounds (8x as many, 8x shorter, at concurrency 1); wall time per call \
         (median) and ratio to bare (median of the per-round ratios); calls {}",
        if on_worker {
            "on a runtime worker"
        } else {
            "from block_on"
        }
    );
    for n in [1usize, 64] {
        if concurrency.is_some_and(|c| c != n) {
            continue;
        }
        let graphs: Arc<Graphs> =
            Arc::new([fx.graph(n, true), fx.graph(n, false), fx.graph_reading(n)]);
        // Blocks of about 4,000 calls at concurrency 64; short blocks, more of them, at
        // concurrency 1, whose latency drifts with the machine's idle state.
        let (iterations, blocks) = if n == 1 {
            (250, rounds * 8)
        } else {
            (60, rounds)
        };
        let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
        // One warm-up round, not recorded.
        for round in 0..=blocks {
            for k in 0..VARIANTS.len() {
                let v = (k + round) % VARIANTS.len();
                if only.as_deref().is_some_and(|o| o != VARIANTS[v]) {
                    continue;
                }
                // The flaky server's script holds at concurrency 1 only.
                if v == 5 && n != 1 {
                    continue;
                }
                let started = Instant::now();
                if on_worker {
                    let (fx, graphs) = (Arc::clone(&fx), Arc::clone(&graphs));
                    rt.block_on(rt.spawn(async move {
                        for _ in 0..iterations {
                            call(v, n, &fx, &graphs).await;
                        }
                        end_block(v, &graphs).await;
                    }))
                    .expect("block");
                } else {
                    // One `block_on` per variant: each moves only its own future.
                    for _ in 0..iterations {
                        match v {
                            0 => drop(rt.block_on(fx.bare(n))),
                            1 => drop(rt.block_on(fx.complete(n, false))),
                            2 => drop(rt.block_on(fx.complete(n, true))),
                            3 => drop(rt.block_on(run_node(&graphs[0]))),
                            4 => drop(rt.block_on(run_node(&graphs[1]))),
                            5 => drop(rt.block_on(fx.flaky())),
                            6 => drop(rt.block_on(run_node(&graphs[2]))),
                            _ => drop(rt.block_on(invoke_node(&graphs[0]))),
                        }
                    }
                    rt.block_on(end_block(v, &graphs));
                }
                if round > 0 {
                    let calls = (iterations * n) as f64;
                    per_call[v].push(started.elapsed().as_secs_f64() * 1e6 / calls);
                }
            }
        }
        for (v, name) in VARIANTS.iter().enumerate() {
            if per_call[v].is_empty() {
                continue;
            }
            let ratios: Vec<f64> = per_call[v]
                .iter()
                .zip(&per_call[0])
                .map(|(x, bare)| x / bare)
                .collect();
            let ratio = if ratios.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.3}", median(&ratios))
            };
            println!(
                "concurrency {n:>2}  {name:<15} {:8.2} µs/call   ratio {ratio}",
                median(&per_call[v]),
            );
        }
        if !per_call[5].is_empty() && !per_call[1].is_empty() {
            let rates: Vec<f64> = per_call[1]
                .iter()
                .zip(&per_call[5])
                .map(|(plain, flaky)| plain / flaky)
                .collect();
            println!(
                "concurrency {n:>2}  provider_flaky rate / provider rate {:.3} (ideal 0.333)",
                median(&rates)
            );
        }
    }
}
