//! Spec: observability §3.4 (caller-supplied invocation metadata: the key/value rules,
//! mid-invocation augmentation, read access, per-async-context and per-attempt
//! scoping) and §6 (the metadata-augmentation event on the serial observer queue).
//!
//! The metadata lives in the engine because its scoping follows the engine's
//! dispatch structure:
//!
//! - One mapping per *context*: the invocation's outermost flow is one context, and a
//!   serial subgraph runs in its parent's context (its writes flow on to later nodes
//!   of the parent). Each fan-out instance and each parallel branch gets its own
//!   copy, seeded at dispatch: siblings never see each other's writes and nothing
//!   flows back across the join.
//! - Writes are visible to everything that runs later in the same context.
//! - A failed attempt's writes are discarded: the engine snapshots the context
//!   before each node attempt (and before each attempt of a fan-out instance's or
//!   branch's middleware chain) and restores the snapshot when the attempt fails.
//!
//! Read and write through the [`crate::NodeCtx`] a node receives
//! ([`crate::NodeCtx::invocation_metadata`], [`crate::NodeCtx::set_invocation_metadata`]),
//! or ambiently — from anywhere inside a node body or middleware, without threading
//! the context through — with [`get_invocation_metadata`] and
//! [`set_invocation_metadata`]. Outside an invocation the read is empty and the
//! write validates, then does nothing.
//!
//! Every accepted write dispatches an [`ObserverEvent::MetadataAugmented`]
//! carrying the added entries and the writer's lineage, so observers can update the
//! spans still open on the writer's call-stack path; node events and LLM call sites
//! carry the metadata in force when they were emitted.
//!
//! [`ObserverEvent::MetadataAugmented`]: crate::ObserverEvent::MetadataAugmented

mod cell;
mod rules;

use std::sync::Arc;

pub(crate) use cell::{ambient_node, enter_node, scoped, scoped_body, set_in_body, MetadataCell};
pub use cell::{current_node, get_invocation_metadata, set_invocation_metadata};
pub use rules::{
    check_key, check_value, validate, MetadataError, INVOCATION_METADATA_INVALID, RESERVED_KEYS,
    RESERVED_PREFIXES,
};

pub use openarmature_core::InvocationMetadata;
use openarmature_core::Lineage;

/// The framework-emitted metadata-augmentation event (observability §6): an accepted
/// `set_invocation_metadata` call, on the same serial queue as the node events, so it
/// is delivered after the writing node's `started` and before its `completed`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MetadataAugmented {
    /// The invocation.
    pub invocation_id: Arc<str>,
    /// The invocation's correlation id.
    pub correlation_id: Option<Arc<str>>,
    /// The added entries, as validated (the delta, not the whole mapping).
    pub entries: InvocationMetadata,
    /// The writer's whole view after the merge.
    pub metadata: InvocationMetadata,
    /// The writer's lineage: namespace, attempt index and the fan-out / branch chains
    /// that locate its context (and its call-stack ancestors).
    pub lineage: Lineage,
    /// When the write happened (wall clock).
    pub at: std::time::SystemTime,
}
