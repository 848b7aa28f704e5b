//! The degrade path against the retry path (issue 19), for a profiler or a quick
//! timing: `VARIANT=degrade|retry N=<invocations>` (defaults: both variants
//! interleaved, 20,000 invocations each). Under `valgrind --tool=callgrind` run each
//! variant at two `N` and divide the difference of the instruction counts by the
//! difference of `N` for the per-invocation count without the set-up.
//!
//! `cargo run --release -p openarmature-pipeline --example degrade_cost`

#![allow(missing_docs, clippy::expect_used)]

#[path = "../benches/degrade/mod.rs"]
mod degrade;

use std::time::Instant;

fn main() {
    let n: u32 = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let variant = std::env::var("VARIANT").ok();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let variants: Vec<bool> = match variant.as_deref() {
        Some("degrade") => vec![true],
        Some("retry") => vec![false],
        _ => vec![false, true],
    };
    let graphs: Vec<_> = variants.iter().map(|d| degrade::graph(*d)).collect();
    let mut totals = vec![0f64; variants.len()];
    // Interleaved blocks so both variants see the same machine load.
    let blocks = 10;
    for _ in 0..blocks {
        for (k, degrade) in variants.iter().enumerate() {
            let started = Instant::now();
            for _ in 0..n / blocks {
                rt.block_on(degrade::run(&graphs[k], *degrade));
            }
            totals[k] += started.elapsed().as_secs_f64();
        }
    }
    for (k, degrade) in variants.iter().enumerate() {
        let name = if *degrade { "degrade" } else { "retry" };
        println!(
            "{name:<8} {:8.2} µs per invocation",
            totals[k] * 1e6 / f64::from(n / blocks * blocks)
        );
    }
    if totals.len() == 2 {
        println!("degrade / retry = {:.2}", totals[1] / totals[0]);
    }
}
