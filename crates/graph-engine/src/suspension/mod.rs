//! Spec: suspension §3 (the `suspend` operation), §4 (signal descriptors), §5 (the
//! suspended outcome), §6 (signal payload merge), §7 (resume), §9 (errors).
//!
//! A node body pauses the invocation with [`suspend`]; [`CompiledGraph::run`](crate::CompiledGraph::run) returns
//! [`Outcome::Suspended`] and the paused-invocation record is persisted; later — in
//! this process or another one reaching the same store — [`CompiledGraph::resume`](crate::CompiledGraph::resume)
//! merges the signal payload and continues.
//!
//! # The terminal-action mechanism (§3)
//!
//! [`suspend`] records the suspension on the running invocation and returns an error
//! value for the node body to return (`return suspend(descriptor);`). The engine does
//! not rely on that value reaching it: when the node body returns — whatever it
//! returns — the engine sees the recorded suspension, and the `next.run(..)` call of
//! every middleware wrapping the node **never completes**: the engine drops the
//! middleware chain at that await point. So no middleware can catch, retry or degrade
//! a suspension, and no post-`next()` code runs on the suspending attempt (§8.4). The
//! node's update, if it returned one, is ignored.
//!
//! The same holds one level up: a subgraph, fan-out or parallel-branches node whose
//! inner node suspended suspends too (§8.1–§8.3); a fail-fast fan-out or branches node
//! cancels its other instances.
//!
//! `suspend()` is [`SuspensionError::UnsupportedContext`]
//! (`suspension_in_unsupported_context`) outside a node body of a running invocation
//! (no node in this task — e.g. in a task spawned with `tokio::spawn`), from
//! middleware, and inside a fan-out instance or branch whose node collects errors
//! (`error_policy = collect`). That error cannot be caught either: the invocation
//! fails with it even if middleware or a collecting fan-out swallowed it.
//!
//! # Where paused records live
//!
//! In the graph's [`Checkpointer`](crate::checkpoint::Checkpointer) when one is
//! registered ([`InMemoryCheckpointer`](crate::checkpoint::InMemoryCheckpointer), the
//! SQLite one of `openarmature-pipeline`, or your own implementing the paused-record
//! methods), else in an in-process store the compiled graph owns (its clones share
//! it). Resuming in another process needs a durable Checkpointer both processes open.
//!
//! # A resume is claimed once, and survives being dropped
//!
//! A resume claims the paused record atomically (`suspended` → `resumed`): a second
//! delivery of the same signal is `suspension_record_invalid`, never a second run. With a
//! Checkpointer registered, the merged state is checkpointed before the resumed run's
//! first node, so a resumed run that is dropped (or whose process dies) mid-node leaves
//! a consistent checkpoint: a checkpoint resume (`InvokeOptions::resume_invocation`
//! without a signal payload) continues from it with the payload merged, without running
//! the suspending node again. Without a Checkpointer there is nothing durable to return to.
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::suspension::{suspend, Outcome, SignalDescriptor};
//! use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
//!
//! state! {
//!     /// A review.
//!     #[derive(Default)]
//!     pub struct Review => ReviewUpdate {
//!         /// The reviewer's decision.
//!         pub approved: bool,
//!         /// Set by the node after the gate.
//!         pub published: bool,
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let graph = GraphBuilder::new(Review::default())
//!     .add_node("gate", |_s: Arc<Review>, _c: NodeCtx| async {
//!         suspend(SignalDescriptor::new("review-42"))
//!     })
//!     .add_node("publish", |s: Arc<Review>, _c: NodeCtx| async move {
//!         Ok(ReviewUpdate::default().published(s.approved))
//!     })
//!     .add_edge("gate", "publish")
//!     .add_edge("publish", END)
//!     .entry("gate")
//!     .compile()
//!     .unwrap();
//!
//! let Outcome::Suspended(paused) = graph.run(Review::default(), InvokeOptions::default()).await.unwrap()
//! else { panic!("expected a suspension") };
//! assert_eq!(paused.descriptor.signal_id, "review-42");
//!
//! let resumed = graph
//!     .resume(&paused.invocation_id, serde_json::json!({"approved": true}))
//!     .await
//!     .unwrap();
//! let Outcome::Completed(done) = resumed else { panic!("expected completion") };
//! assert!(done.state.published);
//! assert_eq!(done.invocation_id, paused.invocation_id);
//! # }
//! ```

mod pending;
mod record;
pub(crate) mod run;
mod signal;

pub(crate) use pending::PendingSlot;
pub use record::{PausedRecord, PausedStatus};
pub use signal::{suspend, suspend_with, OnResume, SignalDescriptor};

use crate::error::BoxError;

/// The OpenArmature capability this module implements (the crate's own is
/// [`crate::SPEC_CAPABILITY`]).
pub const SPEC_CAPABILITY: &str = "suspension";

/// The OpenArmature specification release the suspension implementation targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// How an invocation run with [`CompiledGraph::run`](crate::CompiledGraph::run) ended
/// without an error (suspension §5): it reached `END`, or it suspended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome<S> {
    /// The graph reached `END`.
    Completed(crate::Completed<S>),
    /// A node called [`suspend`]; the paused-invocation record is persisted.
    Suspended(Suspended<S>),
}

impl<S> Outcome<S> {
    /// The invocation id (stable across suspend / resume cycles, §7).
    pub fn invocation_id(&self) -> &str {
        match self {
            Outcome::Completed(c) => &c.invocation_id,
            Outcome::Suspended(s) => &s.invocation_id,
        }
    }

    /// The completed run, if the graph reached `END`.
    pub fn completed(self) -> Option<crate::Completed<S>> {
        match self {
            Outcome::Completed(c) => Some(c),
            Outcome::Suspended(_) => None,
        }
    }

    /// The suspension, if a node suspended.
    pub fn suspended(self) -> Option<Suspended<S>> {
        match self {
            Outcome::Suspended(s) => Some(s),
            Outcome::Completed(_) => None,
        }
    }
}

/// A suspended invocation (suspension §5).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Suspended<S> {
    /// The invocation id: pass it to [`CompiledGraph::resume`](crate::CompiledGraph::resume).
    pub invocation_id: String,
    /// The invocation's correlation id.
    pub correlation_id: String,
    /// The invocation state at the suspension point (not a final state).
    pub state: S,
    /// The signal descriptor the node suspended with (annotated with `fan_out_index` /
    /// `branch_name` when it suspended inside a fan-out instance or branch).
    pub descriptor: SignalDescriptor,
    /// The suspending node's name in its immediate graph.
    pub node_name: String,
    /// Outermost-to-innermost node names down to the suspending node.
    pub namespace: Vec<String>,
}

/// What a [`GraphError`](crate::GraphError) of category `invocation_suspended` carries
/// as its source: `invoke` / `invoke_with` report a suspension this way (the record is
/// persisted; resume it by id), since they return only a final state.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invocation `{invocation_id}` suspended at `{node_name}` awaiting signal `{}`; use CompiledGraph::run to receive the suspended outcome and CompiledGraph::resume to continue", descriptor.signal_id)]
pub struct SuspendedInvocation {
    /// The invocation id.
    pub invocation_id: String,
    /// The descriptor.
    pub descriptor: SignalDescriptor,
    /// The suspending node's name in its immediate graph.
    pub node_name: String,
    /// The suspending node's namespace.
    pub namespace: Vec<String>,
}

/// A suspension failure (suspension §9). None is transient.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuspensionError {
    /// `suspend()` was called where it is not permitted (§3, §8.2–§8.4).
    #[error("suspension_in_unsupported_context: {reason}")]
    UnsupportedContext {
        /// Where it was called.
        reason: String,
    },
    /// The paused-invocation record (or the session saved with it, §8.6) could not be
    /// persisted; the invocation errored instead of suspending.
    #[error("suspension_persistence_failed: {what}: {source}")]
    PersistenceFailed {
        /// What failed to persist.
        what: &'static str,
        /// The backend's error.
        source: BoxError,
    },
    /// Resume named an invocation that is not suspended: never existed, completed,
    /// errored, or already resumed.
    #[error("suspension_record_invalid: {description}")]
    RecordInvalid {
        /// Why.
        description: String,
    },
    /// The signal payload does not fit the state schema (§6).
    #[error("suspension_resume_payload_invalid: {description}")]
    ResumePayloadInvalid {
        /// What does not fit.
        description: String,
    },
}

impl SuspensionError {
    /// The §4 runtime category a graph error carrying this failure reports.
    pub fn runtime_category(&self) -> crate::RuntimeCategory {
        use crate::RuntimeCategory as C;
        match self {
            SuspensionError::UnsupportedContext { .. } => C::SuspensionInUnsupportedContext,
            SuspensionError::PersistenceFailed { .. } => C::SuspensionPersistenceFailed,
            SuspensionError::RecordInvalid { .. } => C::SuspensionRecordInvalid,
            SuspensionError::ResumePayloadInvalid { .. } => C::SuspensionResumePayloadInvalid,
        }
    }
}

impl crate::Categorized for SuspensionError {
    fn category(&self) -> Option<crate::Category> {
        Some(self.runtime_category().as_category())
    }
}
