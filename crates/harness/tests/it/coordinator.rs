//! `PausedStoreCoordinator::by_correlation`: a signal id resolves to the key a durable
//! runtime files the invocation under.

use std::sync::Arc;

use openarmature_graph::checkpoint::InMemoryCheckpointer;
use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_harness::{Outbound, PausedStoreCoordinator, SignalCoordinator, Transmission};
use serde_json::json;

state! {
    /// An approval.
    #[derive(Default)]
    pub struct Gate => GateUpdate {
        /// Set by the signal.
        pub approved: bool,
    }
}

#[tokio::test]
async fn by_correlation_resolves_to_the_correlation_id_and_new_resolves_to_the_invocation_id() {
    let graph = GraphBuilder::new(Gate::default())
        .add_node("gate", |s: Arc<Gate>, _c: NodeCtx| async move {
            if s.approved {
                Ok(GateUpdate::default())
            } else {
                suspend(SignalDescriptor::new("ok?"))
            }
        })
        .add_edge("gate", END)
        .entry("gate")
        .checkpointer(Arc::new(InMemoryCheckpointer::new()))
        .compile()
        .unwrap();
    let harness = openarmature_harness::Harness::stateless(graph.clone(), |_| Ok(Gate::default()));
    let turn = harness
        .handle_with(
            Transmission::new(json!({})),
            InvokeOptions::default()
                .invocation_id("engine-1")
                .correlation_id("job-9"),
        )
        .await;
    assert!(
        matches!(turn.outbound, Outbound::Suspended { .. }),
        "{:?}",
        turn.outbound
    );
    let keyed = PausedStoreCoordinator::by_correlation(graph.clone());
    assert_eq!(
        keyed.resolve("ok?").await.unwrap().as_deref(),
        Some("job-9")
    );
    assert_eq!(keyed.resolve("other").await.unwrap(), None);
    let plain = PausedStoreCoordinator::new(graph);
    assert_eq!(
        plain.resolve("ok?").await.unwrap().as_deref(),
        Some("engine-1")
    );
}
