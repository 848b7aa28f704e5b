//! Shared by `benches/middleware.rs` and `examples/degrade_cost.rs` (issue 19): one node
//! behind `RetryMiddleware` (3 attempts, zero backoff), either failing twice with a
//! transient error and then succeeding (`retry`), or failing every attempt inside a
//! `FailureIsolationMiddleware` that degrades (`degrade`). Both run three attempts per
//! invocation; the difference is the stop error, the catch and the degraded update.

#![allow(clippy::expect_used, dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{
    state, CategorizedError, Category, CompiledGraph, GraphBuilder, NodeCtx, NodeError, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};

state! {
    /// What the node wrote.
    #[derive(Default)]
    pub struct Outcome => OutcomeUpdate {
        /// 1 when the node succeeded.
        pub ok: u64,
        /// 1 when failure isolation degraded.
        pub degraded: u64,
    }
}

/// Attempts per invocation.
pub const ATTEMPTS: u32 = 3;

/// `degrade == false`: retry(3) whose third attempt succeeds. `degrade == true`:
/// failure isolation around retry(3) whose attempts all fail.
pub fn graph(degrade: bool) -> CompiledGraph<Outcome> {
    let calls = Arc::new(AtomicU32::new(0));
    let builder = GraphBuilder::new(Outcome::default())
        .add_node("call", move |_s: Arc<Outcome>, _c: NodeCtx| {
            let calls = Arc::clone(&calls);
            async move {
                let n = calls.fetch_add(1, Ordering::Relaxed) % ATTEMPTS;
                if degrade || n + 1 < ATTEMPTS {
                    Err::<OutcomeUpdate, NodeError>(
                        CategorizedError::new(Category::PROVIDER_UNAVAILABLE, "down").into(),
                    )
                } else {
                    Ok(OutcomeUpdate::default().ok(1))
                }
            }
        })
        .add_edge("call", END)
        .entry("call");
    let builder = if degrade {
        builder.node_middleware(
            "call",
            Arc::new(FailureIsolationMiddleware::<Outcome>::new(
                "call_degraded",
                |_| OutcomeUpdate::default().degraded(1),
            )),
        )
    } else {
        builder
    };
    builder
        .node_middleware(
            "call",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(ATTEMPTS)
                    .backoff(Constant(Duration::ZERO)),
            )),
        )
        .compile()
        .expect("valid graph")
}

/// One invocation; checks it ended the way the variant says.
pub async fn run(graph: &CompiledGraph<Outcome>, degrade: bool) {
    let out = graph.invoke(Outcome::default()).await.expect("run");
    assert_eq!(
        (out.ok, out.degraded),
        (u64::from(!degrade), u64::from(degrade))
    );
}
