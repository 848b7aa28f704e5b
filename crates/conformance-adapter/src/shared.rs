//! Spec: conformance-adapter §5 — what every capability runner shares, so that no
//! runner imports another for it: the poison-tolerant lock over the harness's
//! recorders, and the node a directive wraps around a fixture node.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openarmature_graph::{
    CompileError, CompileWarning, DynState, DynUpdate, Node, NodeConfig, NodeCtx, NodeError,
    NodeFuture,
};

/// Locks a recorder; a poisoned lock still yields its data (a failed case must not
/// hide what was recorded before the panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A harness directive wrapped around a fixture node: it runs its own steps with the
/// inner node inside and otherwise *is* the inner node (the inner node's event
/// configuration, event emission and compile checks are its own). Registered as a
/// node through [`Around`].
pub(crate) trait AroundNode: Send + Sync + 'static {
    /// The fixture node inside the directive.
    fn inner(&self) -> &Arc<dyn Node<DynState>>;

    /// Runs one attempt: the directive's steps and the inner node.
    fn run(
        &self,
        state: Arc<DynState>,
        ctx: NodeCtx,
    ) -> impl Future<Output = Result<DynUpdate, NodeError>> + Send;
}

/// An [`AroundNode`] as a node.
pub(crate) struct Around<N>(pub(crate) N);

impl<N: AroundNode> Around<N> {
    /// `directive` as the node the graph registers.
    pub(crate) fn node(directive: N) -> Arc<dyn Node<DynState>> {
        Arc::new(Self(directive))
    }
}

impl<N: AroundNode> Node<DynState> for Around<N> {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(AroundNode::run(&self.0, state, ctx))
    }

    fn event_config(&self, name: &str, state: &DynState) -> Option<NodeConfig> {
        self.0.inner().event_config(name, state)
    }

    fn emits_node_events(&self) -> bool {
        self.0.inner().emits_node_events()
    }

    fn check(&self, name: &str, parent: &DynState) -> Result<Vec<CompileWarning>, CompileError> {
        self.0.inner().check(name, parent)
    }
}
