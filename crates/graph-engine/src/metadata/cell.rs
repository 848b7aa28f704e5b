//! Spec: observability §3.4 *Per-async-context scoping*, *Per-attempt scoping*,
//! *Read access*, *Outside invocation* — the per-context cell, its attempt
//! snapshots, and the ambient (task-local) access to the running node's context.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};
use tokio::task::futures::TaskLocalFuture;

use super::{validate, InvocationMetadata, MetadataAugmented, MetadataError};
use crate::node::NodeCtx;
use crate::observer::ObserverEvent;

/// One context's metadata (the outermost flow, a fan-out instance or a branch).
///
/// Reads of a context nobody has written to are lock-free: `stamp` is 0 while the
/// current mapping is still the seed. Every other change gets a fresh stamp, so an
/// attempt snapshot can tell in one atomic load whether anything changed.
pub(crate) struct MetadataCell {
    seed: InvocationMetadata,
    stamp: AtomicU64,
    state: Mutex<CellState>,
}

struct CellState {
    current: InvocationMetadata,
    /// The last stamp handed out (never reused).
    issued: u64,
}

/// A context's mapping before an attempt (see [`MetadataCell::snapshot`]).
pub(crate) struct Snapshot {
    stamp: u64,
    /// `None` when the cell still held its seed.
    map: Option<InvocationMetadata>,
}

impl MetadataCell {
    /// A cell starting from `seed`.
    pub(crate) fn new(seed: InvocationMetadata) -> Arc<MetadataCell> {
        Arc::new(MetadataCell {
            state: Mutex::new(CellState {
                current: seed.clone(),
                issued: 0,
            }),
            seed,
            stamp: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CellState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current mapping.
    pub(crate) fn read(&self) -> InvocationMetadata {
        if self.stamp.load(Ordering::Acquire) == 0 {
            return self.seed.clone();
        }
        self.lock().current.clone()
    }

    /// A fresh cell for a dispatched child context (fan-out instance, branch),
    /// seeded with this context's current mapping.
    pub(crate) fn fork(&self) -> Arc<MetadataCell> {
        MetadataCell::new(self.read())
    }

    /// Merges already-validated entries; returns the new mapping.
    fn merge(&self, delta: &Map<String, Value>) -> InvocationMetadata {
        let mut state = self.lock();
        state.current = state.current.merged(delta);
        state.issued += 1;
        self.stamp.store(state.issued, Ordering::Release);
        state.current.clone()
    }

    /// The mapping before an attempt: one atomic load while nothing was written.
    pub(crate) fn snapshot(&self) -> Snapshot {
        if self.stamp.load(Ordering::Acquire) == 0 {
            return Snapshot {
                stamp: 0,
                map: None,
            };
        }
        let state = self.lock();
        Snapshot {
            stamp: self.stamp.load(Ordering::Acquire),
            map: Some(state.current.clone()),
        }
    }

    /// Discards what a failed attempt wrote: back to `snapshot` (a no-op, one atomic
    /// load, when nothing changed).
    pub(crate) fn restore(&self, snapshot: Snapshot) {
        if self.stamp.load(Ordering::Acquire) == snapshot.stamp {
            return;
        }
        let mut state = self.lock();
        match snapshot.map {
            None => {
                state.current = self.seed.clone();
                self.stamp.store(0, Ordering::Release);
            }
            Some(map) => {
                state.current = map;
                state.issued += 1;
                self.stamp.store(state.issued, Ordering::Release);
            }
        }
    }
}

/// The ambient slot: the context of the node (or middleware chain) running in this
/// task. One slot per graph level, refilled per node ([`enter_node`]), so the hot path
/// pays one task-local access per node rather than a scope per node.
pub(crate) struct Slot {
    ctx: RefCell<Option<NodeCtx>>,
    /// Whether the node body (not its middleware) is running: `suspend()` is refused
    /// outside it (suspension §8.4).
    in_body: Cell<bool>,
}

tokio::task_local! {
    static CURRENT: Slot;
}

/// Runs `fut` with an ambient slot holding `ctx` (a graph level's loop starts empty
/// and fills it per node; a middleware chain or a unit holds its context).
pub(crate) fn scoped<F: Future>(ctx: Option<NodeCtx>, fut: F) -> TaskLocalFuture<Slot, F> {
    CURRENT.scope(
        Slot {
            ctx: RefCell::new(ctx),
            in_body: Cell::new(false),
        },
        fut,
    )
}

/// [`scoped`] for a node body run without a step loop (an inline parallel branch).
pub(crate) fn scoped_body<F: Future>(ctx: NodeCtx, fut: F) -> TaskLocalFuture<Slot, F> {
    CURRENT.scope(
        Slot {
            ctx: RefCell::new(Some(ctx)),
            in_body: Cell::new(true),
        },
        fut,
    )
}

/// Marks whether the enclosing level's node body is running (set around the body by
/// the step loop's terminal).
pub(crate) fn set_in_body(running: bool) {
    let _outside = CURRENT.try_with(|slot| slot.in_body.set(running)).is_err();
}

/// The ambient context and whether a node body (rather than middleware) is running.
pub(crate) fn ambient_node() -> Option<(NodeCtx, bool)> {
    CURRENT
        .try_with(|slot| {
            let ctx = slot.ctx.try_borrow().ok()?.clone()?;
            Some((ctx, slot.in_body.get()))
        })
        .ok()
        .flatten()
}

/// Makes `ctx` the ambient context of the enclosing [`scoped`] future (the node a
/// graph level is about to run).
pub(crate) fn enter_node(ctx: NodeCtx) {
    // Outside a scope (not reachable from the engine) the context is just dropped.
    let _outside = CURRENT
        .try_with(|slot| {
            slot.in_body.set(false);
            if let Ok(mut current) = slot.ctx.try_borrow_mut() {
                *current = Some(ctx);
            }
        })
        .is_err();
}

/// Runs `f` on the ambient context, if there is one.
fn with_current<R>(f: impl FnOnce(&NodeCtx) -> R) -> Option<R> {
    CURRENT
        .try_with(|slot| slot.ctx.try_borrow().ok()?.as_ref().map(f))
        .ok()
        .flatten()
}

/// The context of the node (or middleware chain) running in this task, if any: what an
/// LLM or retrieval call made from a node body picks up when the caller passes no
/// context. Like the metadata reads, it follows the future, not the thread (a task
/// spawned from a node body sees `None`).
///
/// # Examples
/// ```
/// assert!(openarmature_graph::current_node().is_none());
/// ```
pub fn current_node() -> Option<NodeCtx> {
    with_current(NodeCtx::clone)
}

/// The invocation metadata visible where this is called (observability §3.4 *Read
/// access*): the caller's mapping from `invoke()` plus every write made earlier in
/// this context or in an ancestor context before it dispatched this one — never a
/// sibling's. Outside an invocation: the empty mapping. Never raises and emits no
/// event.
///
/// The context follows the future, not the thread: a task spawned with
/// `tokio::spawn` from a node body reads the empty mapping; pass the
/// [`NodeCtx`] along and use [`NodeCtx::invocation_metadata`] instead.
///
/// # Examples
/// ```
/// // Outside any invocation the read is empty.
/// assert!(openarmature_graph::get_invocation_metadata().is_empty());
/// ```
pub fn get_invocation_metadata() -> InvocationMetadata {
    with_current(NodeCtx::invocation_metadata).unwrap_or_default()
}

/// Adds entries to the invocation metadata of the current context (observability
/// §3.4 *Mid-invocation augmentation*), from anywhere inside a node body or
/// middleware: see [`NodeCtx::set_invocation_metadata`]. Outside an invocation the
/// entries are validated and then dropped.
///
/// # Errors
/// A [`MetadataError`] for a reserved key or a value that is not an attribute value;
/// nothing is merged then.
///
/// # Examples
/// ```
/// use serde_json::json;
/// use openarmature_graph::set_invocation_metadata;
/// // Outside an invocation: validated, then a no-op.
/// assert!(set_invocation_metadata([("tenantId", json!("acme"))]).is_ok());
/// assert!(set_invocation_metadata([("gen_ai.system", json!("x"))]).is_err());
/// ```
pub fn set_invocation_metadata<I, K>(entries: I) -> Result<(), MetadataError>
where
    I: IntoIterator<Item = (K, Value)>,
    K: Into<String>,
{
    let delta = collect(entries)?;
    // Outside an invocation there is no context to add to.
    let _outside = with_current(|ctx| ctx.augment(delta)).is_none();
    Ok(())
}

fn collect<I, K>(entries: I) -> Result<Map<String, Value>, MetadataError>
where
    I: IntoIterator<Item = (K, Value)>,
    K: Into<String>,
{
    let delta: Map<String, Value> = entries.into_iter().map(|(k, v)| (k.into(), v)).collect();
    validate(&delta)?;
    Ok(delta)
}

impl NodeCtx {
    /// The invocation metadata visible in this node's context (see
    /// [`get_invocation_metadata`]): an immutable snapshot.
    pub fn invocation_metadata(&self) -> InvocationMetadata {
        self.scope.metadata.read()
    }

    /// Adds entries to this context's invocation metadata (observability §3.4):
    /// every entry is validated first (reserved `openarmature.*` / `gen_ai.*` keys,
    /// the reserved backend names, attribute-value types), then all are merged —
    /// same-named keys overwritten, others kept. The entries are visible to what runs
    /// later in this context (later nodes of this graph level, serial subgraphs,
    /// instances and branches dispatched afterwards), never to sibling instances or
    /// branches, and not after the join of the instance or branch that wrote them.
    /// If the current attempt fails, its writes are discarded.
    ///
    /// Observers receive an [`ObserverEvent::MetadataAugmented`] with the entries
    /// and this node's lineage.
    ///
    /// # Errors
    /// A [`MetadataError`] (category `invocation_metadata_invalid`); nothing is
    /// merged then.
    pub fn set_invocation_metadata<I, K>(&self, entries: I) -> Result<(), MetadataError>
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        let delta = collect(entries)?;
        self.augment(delta);
        Ok(())
    }

    /// Merges validated entries and notifies the observers.
    fn augment(&self, delta: Map<String, Value>) {
        if delta.is_empty() {
            return;
        }
        let metadata = self.scope.metadata.merge(&delta);
        if self.has_observers() {
            let event = MetadataAugmented {
                invocation_id: Arc::clone(&self.scope.inv.id),
                correlation_id: self.scope.inv.correlation_id.clone(),
                entries: InvocationMetadata::from_map(delta),
                metadata,
                lineage: self.lineage(),
                at: std::time::SystemTime::now(),
            };
            self.dispatch_event(ObserverEvent::MetadataAugmented(event));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> InvocationMetadata {
        InvocationMetadata::from_map(v.as_object().cloned().unwrap())
    }

    #[test]
    fn snapshots_restore_what_an_attempt_wrote() {
        let cell = MetadataCell::new(meta(json!({"a": 1})));
        let before = cell.snapshot();
        cell.merge(json!({"b": 2}).as_object().unwrap());
        assert_eq!(cell.read().len(), 2);
        cell.restore(before);
        assert_eq!(cell.read(), meta(json!({"a": 1})));

        cell.merge(json!({"c": 3}).as_object().unwrap());
        let mid = cell.snapshot();
        cell.merge(json!({"c": 4, "d": 5}).as_object().unwrap());
        cell.restore(mid);
        assert_eq!(cell.read(), meta(json!({"a": 1, "c": 3})));
    }

    #[test]
    fn forks_are_isolated_from_their_parent() {
        let parent = MetadataCell::new(InvocationMetadata::default());
        parent.merge(json!({"a": 1}).as_object().unwrap());
        let child = parent.fork();
        child.merge(json!({"b": 2}).as_object().unwrap());
        assert_eq!(parent.read(), meta(json!({"a": 1})));
        assert_eq!(child.read(), meta(json!({"a": 1, "b": 2})));
    }
}
