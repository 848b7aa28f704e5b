//! Spec: graph-engine §6 *Event-source identity* — where an event came from: the
//! lineage of a node attempt and the call site every capability's typed events carry.

use std::sync::Arc;

use crate::metadata::InvocationMetadata;

/// Where an event came from: the graph-engine §6 event-source identity tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// Outermost-to-innermost node names.
    pub namespace: Arc<[String]>,
    /// The attempt index.
    pub attempt_index: u32,
    /// The innermost enclosing fan-out instance index.
    pub fan_out_index: Option<usize>,
    /// The innermost enclosing parallel branch.
    pub branch_name: Option<String>,
    /// Fan-out lineage per boundary.
    pub fan_out_index_chain: Arc<[Option<usize>]>,
    /// Branch lineage per boundary.
    pub branch_name_chain: Arc<[Option<String>]>,
}

/// Where a call (an LLM `complete()`, an `embed()`, a `rerank()`, a tool execution)
/// ran: the calling node's identity (graph-engine §6 event-source identity tuple).
/// The engine builds it (`NodeCtx::call_site` in `openarmature-graph`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallSite {
    /// The invocation.
    pub invocation_id: Arc<str>,
    /// The caller's correlation id, if any.
    pub correlation_id: Option<Arc<str>>,
    /// The node that issued the call.
    pub node_name: Arc<str>,
    /// Namespace, node-level attempt index, fan-out / branch lineage.
    pub lineage: Lineage,
    /// The invocation metadata in force where the call was made (observability
    /// §3.4, §5.6).
    pub metadata: InvocationMetadata,
}

impl CallSite {
    /// A call site.
    pub fn new(
        invocation_id: Arc<str>,
        correlation_id: Option<Arc<str>>,
        node_name: Arc<str>,
        lineage: Lineage,
        metadata: InvocationMetadata,
    ) -> Self {
        CallSite {
            invocation_id,
            correlation_id,
            node_name,
            lineage,
            metadata,
        }
    }
}
