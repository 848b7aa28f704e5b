//! `cargo xtask bench`: runs the criterion benchmarks with short settings and
//! prints the medians criterion recorded under `target/criterion/`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs the benchmarks, then summarises them.
pub fn run(args: &[String]) -> ExitCode {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&root)
        .args(["bench", "--workspace", "--bench", "*", "--"])
        .args(["--warm-up-time", "1", "--measurement-time", "3"])
        .args(args);
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!("error: cargo bench failed ({status})");
            return ExitCode::FAILURE;
        }
        Err(err) => {
            eprintln!("error: cannot run cargo bench: {err}");
            return ExitCode::FAILURE;
        }
    }
    let mut rows = Vec::new();
    collect(&root.join("target").join("criterion"), &mut rows);
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    println!(
        "\n{:<64} {:>14} {:>14}",
        "benchmark", "median", "per element"
    );
    for (id, median_ns, elements) in &rows {
        let per = elements.map_or_else(String::new, |n| human(median_ns / n as f64));
        println!("{id:<64} {:>14} {per:>14}", human(*median_ns));
    }
    println!("{} benchmarks", rows.len());
    ExitCode::SUCCESS
}

/// `(full id, median ns, throughput elements)` for every `new/` result below `dir`.
fn collect(dir: &Path, rows: &mut Vec<(String, f64, Option<u64>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "new") {
            if let Some(row) = read(&path) {
                rows.push(row);
            }
        } else if path.is_dir() {
            collect(&path, rows);
        }
    }
}

fn read(dir: &Path) -> Option<(String, f64, Option<u64>)> {
    let bench: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("benchmark.json")).ok()?).ok()?;
    let estimates: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("estimates.json")).ok()?).ok()?;
    let id = bench.get("full_id")?.as_str()?.to_owned();
    let median = estimates.get("median")?.get("point_estimate")?.as_f64()?;
    let elements = bench
        .get("throughput")
        .and_then(|t| t.get("Elements"))
        .and_then(Value::as_u64);
    Some((id, median, elements))
}

fn human(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
