//! Spec: graph-engine §6 *lineage* — the contexts of the many instances of one
//! composite node execution (a fan-out), with what they share built once.
//!
//! [`NodeCtx::enter`] builds a nested context from scratch: the parent-state list, the
//! lineage chains and, for every node the nested graph then runs, that node's
//! namespace. A fan-out enters the same boundary once per instance, so an
//! [`InstanceEntry`] builds the shared parts once and each instance adds only its own
//! index and metadata context; the instances' inner node namespaces are built once
//! per node and shared too.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::node::NodeCtx;
use crate::observer::StateRef;

/// The contexts for the instances of one composite node execution, each a
/// [`Boundary::FanOutInstance`](crate::Boundary::FanOutInstance) under the node:
/// [`InstanceEntry::enter`] is [`NodeCtx::enter`] with that boundary, minus the
/// rebuilding of what every instance shares.
pub struct InstanceEntry {
    ctx: NodeCtx,
    parent_states: Arc<[StateRef]>,
    branch_chain: Arc<[Option<String>]>,
    namespaces: Arc<NamespaceCache>,
}

impl NodeCtx {
    /// Prepares the contexts of instances nested under this node, `parent` (the node's
    /// state) appended to their `parent_states`.
    pub fn instance_entry(&self, parent: StateRef) -> InstanceEntry {
        let outer = &self.scope;
        InstanceEntry {
            ctx: self.clone(),
            parent_states: outer
                .parent_states
                .iter()
                .cloned()
                .chain([parent])
                .collect(),
            branch_chain: outer.branch_chain.iter().cloned().chain([None]).collect(),
            namespaces: Arc::new(NamespaceCache::default()),
        }
    }
}

impl InstanceEntry {
    /// The context of instance `index` (its own metadata context, forked now, and the
    /// index in its lineage).
    pub fn enter(&self, index: usize) -> NodeCtx {
        let outer = &self.ctx.scope;
        let fan_out_chain = outer
            .fan_out_chain
            .iter()
            .copied()
            .chain([Some(index)])
            .collect();
        self.ctx.nested(
            Arc::clone(&self.parent_states),
            fan_out_chain,
            Arc::clone(&self.branch_chain),
            outer.metadata.fork(),
            Some(Arc::clone(&self.namespaces)),
        )
    }
}

/// The namespaces of one nested graph's nodes under one prefix, built on first use
/// and shared by every instance of an [`InstanceEntry`]. Bound to the first graph
/// that asks (by address; the composite node owns that graph for as long as its
/// instances run): any other graph builds its namespaces itself.
#[derive(Default)]
pub(crate) struct NamespaceCache {
    graph: OnceLock<usize>,
    names: Mutex<Vec<Option<Arc<[String]>>>>,
}

impl NamespaceCache {
    /// Node `node`'s namespace in `graph`, from `build` the first time.
    pub(crate) fn get(
        &self,
        graph: usize,
        node: usize,
        build: impl FnOnce() -> Arc<[String]>,
    ) -> Arc<[String]> {
        if *self.graph.get_or_init(|| graph) != graph {
            return build();
        }
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if names.len() <= node {
            names.resize(node + 1, None);
        }
        match names.get_mut(node) {
            Some(slot) => Arc::clone(slot.get_or_insert_with(build)),
            None => build(),
        }
    }
}
