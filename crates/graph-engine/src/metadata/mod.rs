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

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

pub use cell::{current_node, get_invocation_metadata, set_invocation_metadata};
pub(crate) use cell::{enter_node, scoped, MetadataCell};
pub use rules::{
    check_key, check_value, validate, MetadataError, INVOCATION_METADATA_INVALID, RESERVED_KEYS,
    RESERVED_PREFIXES,
};

use crate::observer::Lineage;

/// An immutable snapshot of invocation metadata: string keys to attribute values.
///
/// Cheap to clone (a shared pointer) and read-only: it dereferences to the
/// underlying [`Map`] for lookups and iteration, and nothing can change it after
/// the fact — later writes produce a new snapshot.
///
/// # Examples
/// ```
/// use openarmature_graph::metadata::InvocationMetadata;
/// let meta = InvocationMetadata::try_from_map(
///     serde_json::json!({"tenantId": "acme"}).as_object().cloned().unwrap_or_default(),
/// )
/// .unwrap();
/// assert_eq!(meta.get("tenantId"), Some(&serde_json::json!("acme")));
/// assert!(InvocationMetadata::default().is_empty());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct InvocationMetadata(Arc<Map<String, Value>>);

impl InvocationMetadata {
    /// Validates `map` (§3.4) and wraps it.
    ///
    /// # Errors
    /// The first [`MetadataError`] in `map`.
    pub fn try_from_map(map: Map<String, Value>) -> Result<Self, MetadataError> {
        validate(&map)?;
        Ok(InvocationMetadata(Arc::new(map)))
    }

    /// Wraps `map` without validating it (the engine keeps caller metadata as given;
    /// the `invoke()` boundary validates it).
    pub(crate) fn unchecked(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            return InvocationMetadata::default();
        }
        InvocationMetadata(Arc::new(map))
    }

    /// The shared map (no copy).
    pub fn as_arc(&self) -> &Arc<Map<String, Value>> {
        &self.0
    }

    /// An owned copy of the entries.
    pub fn to_map(&self) -> Map<String, Value> {
        (*self.0).clone()
    }

    /// Whether both snapshots share one map (so they are equal without a comparison).
    pub fn ptr_eq(&self, other: &InvocationMetadata) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// This snapshot with `delta` merged in (existing keys overwritten, the others
    /// kept, new keys appended in `delta`'s order).
    pub(crate) fn merged(&self, delta: &Map<String, Value>) -> InvocationMetadata {
        let mut map = self.to_map();
        for (k, v) in delta {
            map.insert(k.clone(), v.clone());
        }
        InvocationMetadata(Arc::new(map))
    }
}

impl Default for InvocationMetadata {
    /// The empty snapshot (shared; no allocation).
    fn default() -> Self {
        static EMPTY: OnceLock<Arc<Map<String, Value>>> = OnceLock::new();
        InvocationMetadata(Arc::clone(EMPTY.get_or_init(Arc::default)))
    }
}

impl Deref for InvocationMetadata {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl fmt::Debug for InvocationMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<InvocationMetadata> for Value {
    fn from(meta: InvocationMetadata) -> Value {
        Value::Object(meta.to_map())
    }
}

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
