//! Spec: suspension §3 / §8 — the invocation-wide record of a `suspend()` call, which
//! every level on the suspending node's path acts on when its node returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::{OnResume, SignalDescriptor};
use crate::checkpoint::NodePosition;
use crate::node::{NodeCtx, Scope};

/// Identifies the node a `suspend()` call came from: its namespace and the fan-out
/// index / branch name of every level on the way.
#[derive(Debug, Clone)]
pub(crate) struct PathInfo {
    namespace: Vec<String>,
    fan_out_chain: Vec<Option<usize>>,
    branch_chain: Vec<Option<String>>,
}

impl PathInfo {
    pub(crate) fn of(ctx: &NodeCtx) -> Self {
        PathInfo {
            namespace: ctx.namespace.to_vec(),
            fan_out_chain: ctx.scope.fan_out_chain.to_vec(),
            branch_chain: ctx.scope.branch_chain.to_vec(),
        }
    }

    /// Whether the node `node` running in `scope` is on this path (it is the node, or
    /// contains it).
    pub(crate) fn contains(&self, scope: &Scope, node: &str) -> bool {
        let depth = scope.namespace_prefix.len();
        self.namespace.len() > depth
            && self.namespace[depth] == node
            && self.namespace[..depth] == scope.namespace_prefix[..]
            && self.fan_out_chain.get(..depth) == Some(&scope.fan_out_chain[..])
            && self.branch_chain.get(..depth) == Some(&scope.branch_chain[..])
    }

    pub(crate) fn namespace(&self) -> &[String] {
        &self.namespace
    }
}

/// Where the paused record resumes: filled by the level at the owner depth.
#[derive(Debug, Clone)]
pub(crate) struct PausePoint {
    /// The resume level's namespace prefix.
    pub(crate) prefix: Vec<String>,
    /// The node at that level the suspension is attributed to.
    pub(crate) node: String,
    /// The states of the levels down to the resume level, outermost first (the last is
    /// the resume level's state before its node ran).
    pub(crate) states: Vec<Value>,
    /// The node's position, recorded as completed under [`OnResume::ContinueAfter`].
    pub(crate) position: NodePosition,
}

/// A `suspend()` call being acted on.
#[derive(Debug)]
pub(crate) struct PendingSuspend {
    pub(crate) descriptor: SignalDescriptor,
    pub(crate) on_resume: OnResume,
    /// The suspending node's name in its immediate graph.
    pub(crate) node_name: String,
    /// The depth of the level the record resumes at (see `suspend_with`).
    pub(crate) owner_depth: usize,
    pub(crate) path: PathInfo,
    pub(crate) point: Option<PausePoint>,
}

/// What `suspend()` recorded.
#[derive(Debug)]
pub(crate) enum Pending {
    /// The invocation suspends.
    Suspend(Box<PendingSuspend>),
    /// `suspend()` was called where it is not permitted: the invocation fails with
    /// `suspension_in_unsupported_context`.
    Rejected { reason: String, path: PathInfo },
}

impl Pending {
    fn path(&self) -> &PathInfo {
        match self {
            Pending::Suspend(s) => &s.path,
            Pending::Rejected { path, .. } => path,
        }
    }
}

/// The invocation's slot: empty on the hot path (one atomic load per node).
#[derive(Default)]
pub(crate) struct PendingSlot {
    set: AtomicBool,
    inner: Mutex<Option<Pending>>,
}

/// What a level does with a node on the pending suspension's path.
pub(crate) enum Interrupt {
    Suspend {
        descriptor: SignalDescriptor,
        owner_depth: usize,
    },
    Reject {
        reason: String,
    },
}

impl PendingSlot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Pending>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `pending`; the first call wins (a later one is a sibling that would be
    /// cancelled anyway).
    pub(crate) fn set(&self, pending: Pending) {
        let mut slot = self.lock();
        if slot.is_none() {
            *slot = Some(pending);
            self.set.store(true, Ordering::Release);
        }
    }

    /// Whether anything is pending (the hot-path check).
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// What the level running `node` in `scope` must do, when the pending call is on
    /// its path.
    pub(crate) fn interrupt(&self, scope: &Scope, node: &str) -> Option<Interrupt> {
        if !self.is_set() {
            return None;
        }
        let slot = self.lock();
        let pending = slot.as_ref()?;
        if !pending.path().contains(scope, node) {
            return None;
        }
        Some(match pending {
            Pending::Suspend(s) => Interrupt::Suspend {
                descriptor: s.descriptor.clone(),
                owner_depth: s.owner_depth,
            },
            Pending::Rejected { reason, .. } => Interrupt::Reject {
                reason: reason.clone(),
            },
        })
    }

    /// Whether a suspension (not a rejection) is pending on the path of `node`.
    pub(crate) fn suspends(&self, scope: &Scope, node: &str) -> bool {
        matches!(self.interrupt(scope, node), Some(Interrupt::Suspend { .. }))
    }

    /// Records where the paused record resumes (called by the owner level).
    pub(crate) fn set_point(&self, point: PausePoint) {
        if let Some(Pending::Suspend(s)) = self.lock().as_mut() {
            s.point.get_or_insert(point);
        }
    }

    /// Takes the pending suspension (at the outermost level, once the run stopped).
    pub(crate) fn take_suspension(&self) -> Option<PendingSuspend> {
        match self.lock().take() {
            Some(Pending::Suspend(s)) => Some(*s),
            _ => None,
        }
    }
}
