//! Rough per-step cost of the engine (for profiling; the criterion benchmarks in
//! `benches/` are the measured figures). Run with
//! `cargo run --release -p openarmature-graph --example step_cost`.
//!
//! `NODES` (default 1000) and `RUNS` (default 50) set the graph length and the timed
//! invocations; `OBSERVED=0` skips the observed runs. Under `valgrind --tool=callgrind`,
//! two `RUNS` values give the instructions of one invocation without the set-up
//! (issue 19: the per-invocation fixed cost, 10 nodes against 1000).

use std::sync::Arc;
use std::time::Instant;

use openarmature_graph::{
    observer_fn, state, CompiledGraph, GraphBuilder, NodeCtx, Registration, Target, END,
};

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

/// Invokes `graph` `runs` times from the default state, draining its observers after
/// each invocation when `drain` is set.
async fn run(graph: &CompiledGraph<Counter>, runs: u32, drain: bool) -> Result<(), String> {
    for _ in 0..runs {
        graph
            .invoke(Counter::default())
            .await
            .map_err(|e| e.to_string())?;
        if drain {
            graph.drain(None).await;
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let nodes = env("NODES", 1000);
    let runs = env("RUNS", 50);
    let observed = env("OBSERVED", 1) != 0;
    let mut builder = GraphBuilder::new(Counter::default());
    for i in 0..nodes {
        builder = builder.add_node(format!("n{i}"), |s: Arc<Counter>, _c: NodeCtx| async move {
            Ok(CounterUpdate::default().n(s.n + 1))
        });
        let next = if i + 1 < nodes {
            Target::from(format!("n{}", i + 1))
        } else {
            END
        };
        builder = builder.add_edge(format!("n{i}"), next);
    }
    let graph = builder.entry("n0").compile()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        run(&graph, 3, false).await?;
        let start = Instant::now();
        run(&graph, runs, false).await?;
        let per_step = start.elapsed().as_secs_f64() / f64::from(runs * nodes) * 1e6;
        println!("{per_step:.3} µs per node step, no observer ({nodes} nodes, {runs} runs)");
        if !observed {
            return Ok(());
        }

        graph.attach_observer(Registration::new(
            "noop",
            observer_fn(|_e| async { Ok(()) }),
        ));
        let start = Instant::now();
        run(&graph, runs, true).await?;
        let per_step = start.elapsed().as_secs_f64() / f64::from(runs * nodes) * 1e6;
        println!("{per_step:.3} µs per node step, one no-op observer, drained");
        Ok::<_, String>(())
    })?;
    Ok(())
}
