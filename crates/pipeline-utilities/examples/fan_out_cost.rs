//! Fan-out cost per instance against a linear node step (issue 19), interleaved in
//! one process: a fan-out of `ITEMS` trivial instances (default 1,000) at
//! `CONCURRENCY` (default 10), and a linear graph of `NODES` trivial nodes (default
//! 1,000), `ROUNDS` rounds (default 20) of `RUNS` invocations each (default 20).
//! Prints the per-instance and per-step medians over the rounds and their ratio.
//!
//! `VARIANT=fan|linear` runs only one (for `valgrind --tool=callgrind`: run it at two
//! `RUNS` and divide the difference of the instruction counts by the difference of
//! the work, `ΔRUNS × ITEMS` or `ΔRUNS × NODES`).
//!
//! `cargo run --release -p openarmature-pipeline --example fan_out_cost`

#![allow(missing_docs, clippy::expect_used)]

#[path = "../benches/fan/mod.rs"]
mod fan;

use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (items, concurrency, nodes) = (
        env("ITEMS", 1000),
        env("CONCURRENCY", 10),
        env("NODES", 1000),
    );
    let (rounds, runs) = (env("ROUNDS", 20), env("RUNS", 20));
    let variant = std::env::var("VARIANT").ok();
    let (do_fan, do_linear) = match variant.as_deref() {
        Some("fan") => (true, false),
        Some("linear") => (false, true),
        _ => (true, true),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fan_graph = fan::fan_graph(concurrency);
    let linear = fan::linear_graph(nodes);
    let input = fan::batch(items);
    let (mut per_instance, mut per_step) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        if do_fan {
            let started = Instant::now();
            for _ in 0..runs {
                rt.block_on(fan::fan_once(&fan_graph, input.clone()));
            }
            per_instance.push(started.elapsed().as_secs_f64() * 1e6 / (runs * items) as f64);
        }
        if do_linear {
            let started = Instant::now();
            for _ in 0..runs {
                rt.block_on(fan::linear_once(&linear, nodes));
            }
            per_step.push(started.elapsed().as_secs_f64() * 1e6 / (runs * nodes) as f64);
        }
    }
    if do_fan {
        let m = median(per_instance.clone());
        println!("fan-out, {items} items at concurrency {concurrency}: {m:.3} µs per instance");
    }
    if do_linear {
        let m = median(per_step.clone());
        println!("linear graph, {nodes} nodes: {m:.3} µs per step");
    }
    if do_fan && do_linear {
        let ratios: Vec<f64> = per_instance
            .iter()
            .zip(&per_step)
            .map(|(f, l)| f / l)
            .collect();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        println!(
            "per instance / per step: median {:.2} (rounds {lo:.2}–{hi:.2})",
            median(ratios)
        );
    }
}
