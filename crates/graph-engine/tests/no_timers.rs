//! A multi-thread runtime built without timers (`enable_time` not called): the
//! delivery pacer cannot sleep, so runs start at once and no event is lost. Its own
//! test binary: the fallback is process-wide once a pacer met such a runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    observer_fn, state, GraphBuilder, NodeCtx, NodeError, ObserverEvent, Registration, END,
};

state! {
    /// How many nodes ran.
    #[derive(Default)]
    pub struct Count => CountUpdate {
        /// Nodes run.
        pub n: u64,
    }
}

#[test]
fn without_timers_delivery_runs_start_at_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("runtime");
    let delivered: Arc<Mutex<Vec<bool>>> = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&delivered);
    let graph = GraphBuilder::new(Count::default())
        .add_node("a", |_s: Arc<Count>, _c: NodeCtx| async {
            Ok::<_, NodeError>(CountUpdate::default().n(1))
        })
        .add_edge("a", END)
        .entry("a")
        .observer(Registration::new(
            "where",
            observer_fn(move |_e: Arc<ObserverEvent>| {
                let log = Arc::clone(&log);
                async move {
                    log.lock().unwrap().push(tokio::task::try_id().is_some());
                    Ok(())
                }
            }),
        ))
        .compile()
        .expect("graph");
    for round in 1..=3 {
        runtime
            .block_on(graph.invoke(Count::default()))
            .expect("run");
        // No drain: only a delivery run on the worker can deliver, and nothing there
        // can sleep (this thread waits with std's sleep).
        for _ in 0..2000 {
            if delivered.lock().unwrap().len() == 2 * round {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            *delivered.lock().unwrap(),
            vec![true; 2 * round],
            "round {round}: every event delivered by a run"
        );
    }
}
