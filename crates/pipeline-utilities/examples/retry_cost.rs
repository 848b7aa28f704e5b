//! Time a retried node (one transient failure, zero backoff).
#![allow(missing_docs, clippy::expect_used)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature_graph::{state, CategorizedError, GraphBuilder, NodeCtx, NodeError, END};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::RetryMiddleware;

state! {
    #[derive(Default)]
    pub struct C => CU { pub n: u64 }
}

fn main() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let g = GraphBuilder::new(C::default())
        .add_node("f", move |_s: Arc<C>, _c: NodeCtx| {
            let counter = Arc::clone(&counter);
            async move {
                if counter.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
                    Err::<CU, NodeError>(
                        CategorizedError::new(
                            openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                            "down",
                        )
                        .into(),
                    )
                } else {
                    Ok(CU::default().n(1))
                }
            }
        })
        .node_middleware(
            "f",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(2)
                    .backoff(Constant(Duration::ZERO)),
            )),
        )
        .add_edge("f", END)
        .entry("f")
        .compile()
        .expect("graph");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let start = Instant::now();
    for _ in 0..100 {
        rt.block_on(g.invoke(C::default())).expect("run");
    }
    println!("{:?} per retried invocation", start.elapsed() / 100);
}
