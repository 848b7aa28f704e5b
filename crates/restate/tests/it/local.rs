//! What needs no server: the worker's refusal of a graph it cannot make durable, and
//! the client's typed errors.

use std::sync::Arc;

use openarmature_graph::{GraphBuilder, NodeCtx, END};
use openarmature_harness::Harness;
use openarmature_restate::{
    RestateClient, RestateError, Worker, RESTATE_NO_CHECKPOINTER, RESTATE_UNAVAILABLE,
};

use crate::graphs::{Approval, ApprovalUpdate};

pub async fn without_checkpointer() {
    let graph = GraphBuilder::new(Approval::default())
        .add_node("draft", |_s: Arc<Approval>, _c: NodeCtx| async move {
            Ok(ApprovalUpdate::default())
        })
        .add_edge("draft", END)
        .entry("draft")
        .compile()
        .unwrap();
    let err = Worker::new(Harness::stateless(graph, |_| Ok(Approval::default()))).unwrap_err();
    assert!(matches!(err, RestateError::NoCheckpointer));
    assert_eq!(err.category(), RESTATE_NO_CHECKPOINTER);
    assert!(!err.is_transient());
}

pub async fn unreachable_ingress() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = RestateClient::new(format!("http://127.0.0.1:{port}"));
    let err = client
        .submit("k", &serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RESTATE_UNAVAILABLE, "{err}");
    assert!(err.is_transient());
    assert!(err.to_string().contains("submit"), "{err}");
}
