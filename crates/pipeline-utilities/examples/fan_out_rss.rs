//! Runs one fan-out of `INSTANCES` trivial instances (one node each; default
//! 1,000,000) at `CONCURRENCY` (default 256) on a current-thread tokio runtime, then
//! prints the elapsed time, the time per instance and the process's peak resident
//! set size (`VmHWM`, Linux only): in total, and above the peak before the run (the
//! input state is built first), per finished instance.
//!
//! Run: `cargo run --release -p openarmature-pipeline --example fan_out_rss`
//! (`INSTANCES=100000 CONCURRENCY=64` for the earlier row).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../benches/fan/mod.rs"]
mod fan;

use std::time::Instant;

/// A `/proc/self/status` line's value in kB (e.g. `VmHWM`).
fn proc_status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (instances, concurrency) = (env("INSTANCES", 1_000_000), env("CONCURRENCY", 256));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let graph = fan::fan_graph(concurrency);
    let initial = fan::batch(instances);
    let before = proc_status_kb("VmHWM");
    let started = Instant::now();
    runtime.block_on(fan::fan_once(&graph, initial));
    let elapsed = started.elapsed();
    let peak = proc_status_kb("VmHWM");
    println!(
        "instances:           {instances} (concurrency {concurrency}, current-thread runtime)"
    );
    println!("elapsed:             {elapsed:?}");
    println!(
        "time per instance:   {:?}",
        elapsed / u32::try_from(instances).unwrap()
    );
    let show =
        |kb: Option<u64>| kb.map_or_else(|| "unavailable".to_owned(), |kb| format!("{kb} kB"));
    println!("peak RSS before run: {}", show(before));
    println!("peak RSS (VmHWM):    {}", show(peak));
    if let (Some(before), Some(peak)) = (before, peak) {
        let per = (peak.saturating_sub(before) as f64) * 1024.0 / instances as f64;
        println!("peak growth per finished instance: {per:.0} bytes");
    }
}
