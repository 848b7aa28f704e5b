//! # openarmature-harness
//!
//! Spec: harness (OpenArmature specification, pinned release v0.109.0).
//!
//! The layer between a deployment runtime (an HTTP server, a queue worker, a CLI) and a
//! compiled graph: every inbound [`Transmission`] is classified into one
//! [`DispatchPath`] (§3), becomes exactly one `run` / `resume` of the graph (a
//! [`Turn`], §4), and its outcome is handled (§5): a completion surfaces the final
//! state, an error is sorted into an [`ErrorBucket`] (§7), a suspension registers a
//! signal subscription with the [`SignalCoordinator`] (§6) and returns at once — the
//! harness never blocks on a suspended turn.
//!
//! A [`Harness`] is either sessioned (every turn carries a session id, minted for a new
//! session when the caller gives none) or stateless (no session id ever reaches the
//! engine), fixed at construction (§2).
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::suspension::{suspend, SignalDescriptor};
//! use openarmature_graph::{state, GraphBuilder, NodeCtx, END};
//! use openarmature_harness::{Harness, Outbound, Transmission};
//!
//! state! {
//!     /// An approval.
//!     #[derive(Default)]
//!     pub struct Ask => AskUpdate {
//!         /// Set by the approval signal.
//!         pub approved: bool,
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let graph = GraphBuilder::new(Ask::default())
//!     .add_node("gate", |s: Arc<Ask>, _c: NodeCtx| async move {
//!         if s.approved { Ok(AskUpdate::default()) } else { suspend(SignalDescriptor::new("ok?")) }
//!     })
//!     .add_edge("gate", END)
//!     .entry("gate")
//!     .compile()
//!     .unwrap();
//! let harness = Harness::stateless(graph, |_payload| Ok(Ask::default()));
//! let turn = harness.handle(Transmission::new(serde_json::json!({}))).await;
//! let Outbound::Suspended { invocation_id, .. } = turn.outbound else { panic!() };
//!
//! let done = harness
//!     .handle(Transmission::signal_for(invocation_id, serde_json::json!({"approved": true})))
//!     .await;
//! assert!(matches!(done.outbound, Outbound::Completion { .. }));
//! # }
//! ```

mod bucket;
mod coordinator;
mod dispatch;
mod turn;

pub use bucket::ErrorBucket;
pub use coordinator::{InMemoryCoordinator, PausedStoreCoordinator, SignalCoordinator};
pub use dispatch::{DispatchIntent, DispatchPath, HarnessMode, SignalTarget, Transmission};
pub use turn::{
    register_suspension, Harness, HarnessError, InvokeArgs, Outbound, Turn, TurnOutcome,
};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "harness";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
