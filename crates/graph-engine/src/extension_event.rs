//! An event kind for the project's opt-in extensions (spec/extensions/): one named
//! event with a JSON attribute bag, dispatched on the node's serial observer queue
//! like every other framework event. Extensions add names, never engine variants.
//!
//! Names in use: `openarmature.circuit_breaker.state_change` (extension 0004).

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::node::NodeCtx;
use openarmature_core::Lineage;

/// A named extension event from the node attempt that caused it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExtensionEvent {
    /// The event name, e.g. `openarmature.circuit_breaker.state_change`.
    pub name: String,
    /// The event's attributes (the extension's proposal lists them).
    pub attributes: Map<String, Value>,
    /// The invocation.
    pub invocation_id: Arc<str>,
    /// The caller's correlation id, if any.
    pub correlation_id: Option<Arc<str>>,
    /// The node whose work caused the event.
    pub node_name: Arc<str>,
    /// Namespace, attempt index, fan-out / branch lineage.
    pub lineage: Lineage,
    /// When it happened (wall clock).
    pub at: SystemTime,
}

impl ExtensionEvent {
    /// An event named `name` from the node attempt `ctx` describes.
    pub fn new(ctx: &NodeCtx, name: impl Into<String>, attributes: Map<String, Value>) -> Self {
        ExtensionEvent {
            name: name.into(),
            attributes,
            invocation_id: Arc::from(ctx.invocation_id()),
            correlation_id: ctx.correlation_id().map(Arc::from),
            node_name: Arc::from(ctx.node_name()),
            lineage: ctx.lineage(),
            at: SystemTime::now(),
        }
    }
}
