//! Stress: many short invocations, each drained, to catch lost wakeups in the
//! delivery queue. Run with `cargo run --release -p openarmature-graph --example drain_stress`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature_graph::{observer_fn, state, GraphBuilder, NodeCtx, Registration, Target, END};

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Counter => CounterUpdate {
        /// Steps taken.
        pub n: u64,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = GraphBuilder::new(Counter::default());
    for i in 0..10 {
        builder = builder
            .add_node(format!("n{i}"), |s: Arc<Counter>, _c: NodeCtx| async move {
                Ok(CounterUpdate::default().n(s.n + 1))
            })
            .add_edge(
                format!("n{i}"),
                if i < 9 {
                    Target::from(format!("n{}", i + 1))
                } else {
                    END
                },
            );
    }
    let graph = builder.entry("n0").compile()?;
    graph.attach_observer(Registration::new(
        "noop",
        observer_fn(|_e| async { Ok(()) }),
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut slowest = Duration::ZERO;
    let start = Instant::now();
    for _ in 0..20_000 {
        let t = Instant::now();
        rt.block_on(async {
            graph
                .invoke(Counter::default())
                .await
                .map_err(|e| e.to_string())?;
            let summary = tokio::time::timeout(Duration::from_secs(5), graph.drain(None))
                .await
                .map_err(|_| "drain hung for 5 s".to_owned())?;
            assert_eq!(summary.undelivered_count, 0);
            Ok::<_, String>(())
        })?;
        slowest = slowest.max(t.elapsed());
    }
    println!(
        "20000 drained invocations in {:?}; slowest {:?}",
        start.elapsed(),
        slowest
    );
    Ok(())
}
