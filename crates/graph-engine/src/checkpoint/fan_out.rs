//! Spec: pipeline-utilities §10.7 / §10.11 — per-instance fan-out progress: the live
//! `fan_out_progress` entries a run saves with every record, the saves made inside
//! fan-out instances, and the [`FanOutTracker`] a fan-out node drives.
//!
//! A fan-out node asks for a tracker before dispatching ([`FanOutTracker::for_node`]).
//! On a resumed run the tracker is seeded from the loaded record's entry whose key
//! `(namespace, node, enclosing lineage)` matches exactly — an unmatched (or legacy,
//! unlineaged nested) entry is ignored, so the fan-out re-runs whole; a matched entry
//! whose `instance_count` differs from the resolved count is `checkpoint_record_invalid`.
//! `completed` instances are skipped and their recorded contributions roll forward;
//! every other instance runs again from its entry with its original projection.
//!
//! Order of a completion: the contribution is recorded in the live entry, then the
//! record is saved, so a crash before the save leaves the instance `in_flight`.
//! Dropping the tracker (the fan-out node returned, failed or was cancelled) removes its
//! entry: the fan-out node's own completion save carries no progress for it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::runtime::{lock, CheckpointRuntime, SaveKind};
use super::NodePosition;
use super::{
    CheckpointError, FanOutProgress, InstanceProgress, InstanceState, Instances, LineageEntry,
};
use crate::node::NodeCtx;
use crate::state::StateView;

/// The fan-out instance a level runs in: its fan-out's key and its index.
pub(crate) struct InstanceKey {
    pub(crate) namespace: Vec<String>,
    pub(crate) node: String,
    pub(crate) lineage: Vec<LineageEntry>,
    pub(crate) index: usize,
}

/// The enclosing fan-out lineage of the first `depth` levels of a scope
/// (`prefix[k]` is the node level `k + 1` was entered through).
pub(crate) fn lineage(
    prefix: &[String],
    chain: &[Option<usize>],
    depth: usize,
) -> Vec<LineageEntry> {
    chain
        .iter()
        .take(depth)
        .enumerate()
        .filter_map(|(k, i)| {
            let index = (*i)?;
            let node = prefix.get(k)?;
            Some(LineageEntry::new(prefix[..k].to_vec(), node.clone(), index))
        })
        .collect()
}

/// The innermost fan-out instance a level with this lineage runs in, if any.
pub(crate) fn instance_of(prefix: &[String], chain: &[Option<usize>]) -> Option<InstanceKey> {
    let k = chain.iter().rposition(Option::is_some)?;
    Some(InstanceKey {
        namespace: prefix.get(..k)?.to_vec(),
        node: prefix.get(k)?.clone(),
        lineage: lineage(prefix, chain, k),
        index: chain[k]?,
    })
}

impl CheckpointRuntime {
    /// Whether a live fan-out tracks `key`'s instance.
    pub(super) fn tracks(&self, key: &InstanceKey) -> bool {
        lock(&self.live).iter().any(|e| {
            e.is_for(&key.namespace, &key.node, &key.lineage) && key.index < e.instances.len()
        })
    }

    /// Appends an inner position to a tracked in-flight instance; `false` when no live
    /// fan-out tracks it.
    pub(super) fn record_inner(&self, key: &InstanceKey, position: NodePosition) -> bool {
        let mut live = lock(&self.live);
        let slot = live
            .iter_mut()
            .find(|e| e.is_for(&key.namespace, &key.node, &key.lineage))
            .and_then(|e| e.instances.get_mut(key.index));
        match slot {
            Some(slot) => {
                slot.completed_inner_positions.push(position);
                true
            }
            None => false,
        }
    }

    /// Registers a fan-out about to dispatch `count` instances, seeded from the
    /// loaded record's matching entry.
    fn track(
        &self,
        namespace: Vec<String>,
        node: &str,
        lineage: Vec<LineageEntry>,
        count: usize,
    ) -> Result<Vec<Option<InstanceProgress>>, CheckpointError> {
        let saved = {
            let mut saved = lock(&self.saved);
            saved
                .iter()
                .position(|e| e.is_for(&namespace, node, &lineage))
                .map(|i| saved.remove(i))
        };
        let mut entry = FanOutProgress::new(namespace, node, lineage, count);
        let mut rolled = vec![None; count];
        if let Some(saved) = saved {
            if saved.instance_count != count || saved.instances.len() != count {
                return Err(CheckpointError::RecordInvalid {
                    description: format!(
                        "fan-out `{node}` at namespace {:?}: the record saved {} instances, the resumed run resolves {count}",
                        entry.namespace, saved.instance_count
                    ),
                });
            }
            let mut seeded = Vec::with_capacity(count);
            for (roll, done) in rolled.iter_mut().zip(&saved.instances) {
                if done.state == InstanceState::Completed {
                    seeded.push(done.clone());
                    *roll = Some(done.clone());
                } else {
                    seeded.push(InstanceProgress::default());
                }
            }
            entry.instances = Instances::from(seeded);
        }
        let mut live = lock(&self.live);
        live.retain(|e| !e.is_for(&entry.namespace, node, &entry.enclosing_fan_out_lineage));
        live.push(entry);
        Ok(rolled)
    }

    fn update(
        &self,
        key: &(Vec<String>, String, Vec<LineageEntry>),
        index: usize,
        to: InstanceProgress,
    ) {
        let mut live = lock(&self.live);
        if let Some(slot) = live
            .iter_mut()
            .find(|e| e.is_for(&key.0, &key.1, &key.2))
            .and_then(|e| e.instances.get_mut(index))
        {
            *slot = to;
        }
    }

    fn untrack(&self, key: &(Vec<String>, String, Vec<LineageEntry>)) {
        lock(&self.live).retain(|e| !e.is_for(&key.0, &key.1, &key.2));
    }
}

/// A recorded contribution of a completed instance, as the saved record holds it.
pub type SavedContribution = InstanceProgress;

/// One fan-out execution's per-instance progress (§10.11), from
/// [`FanOutTracker::for_node`]: which instances a resume skips (and what they
/// contributed), and the "instance completed" saves.
pub struct FanOutTracker {
    runtime: Arc<CheckpointRuntime>,
    invocation_id: Arc<str>,
    key: (Vec<String>, String, Vec<LineageEntry>),
    /// The fan-out node's level state and its containing states (what an
    /// instance-completed record holds).
    state: Value,
    parents: Vec<Value>,
    rolled: Vec<Option<InstanceProgress>>,
}

impl std::fmt::Debug for FanOutTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOutTracker")
            .field("fan_out_node_name", &self.key.1)
            .field("namespace", &self.key.0)
            .finish_non_exhaustive()
    }
}

impl FanOutTracker {
    /// Per-instance checkpoint progress for the fan-out node `ctx` runs, about to dispatch
    /// `instance_count` instances (pipeline-utilities §10.7 / §10.11); `state` is the
    /// node's input state. `None` when the graph registered no Checkpointer (or the
    /// node runs inside a parallel branch, which resumes whole): then nothing is
    /// allocated. Keep the tracker alive until the fan-in; dropping it ends the
    /// fan-out's progress entry.
    ///
    /// # Errors
    /// `checkpoint_record_invalid` when the resumed record holds this fan-out's
    /// progress under a different instance count (checked before any instance runs).
    pub fn for_node(
        ctx: &NodeCtx,
        state: &dyn StateView,
        instance_count: usize,
    ) -> Result<Option<FanOutTracker>, CheckpointError> {
        let scope = &ctx.scope;
        let Some(rt) = &scope.inv.checkpoint else {
            return Ok(None);
        };
        if !super::engine::saves_here(scope) {
            return Ok(None);
        }
        let prefix = &scope.namespace_prefix;
        let chain = &scope.fan_out_chain;
        let site = (
            prefix.to_vec(),
            &*ctx.node_name,
            super::lineage(prefix, chain, chain.len()),
        );
        FanOutTracker::new(
            Arc::clone(rt),
            Arc::clone(&scope.inv.id),
            site,
            instance_count,
            state.to_json(),
            super::engine::parent_json(scope),
        )
        .map(Some)
    }

    pub(crate) fn new(
        runtime: Arc<CheckpointRuntime>,
        invocation_id: Arc<str>,
        site: (Vec<String>, &str, Vec<LineageEntry>),
        count: usize,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<Self, CheckpointError> {
        let (namespace, node, lineage) = site;
        let rolled = runtime.track(namespace.clone(), node, lineage.clone(), count)?;
        Ok(FanOutTracker {
            runtime,
            invocation_id,
            key: (namespace, node.to_owned(), lineage),
            state,
            parents,
            rolled,
        })
    }

    /// The recorded contribution of instance `index` when the resumed record marks it
    /// `completed`: the instance must not run again, its `result` (an error record when
    /// `result_is_error`) and `extra_outputs` roll forward into the fan-in.
    pub fn completed(&self, index: usize) -> Option<&SavedContribution> {
        self.rolled.get(index).and_then(Option::as_ref)
    }

    /// Marks instance `index` dispatched (`in_flight`, no inner positions yet).
    pub fn start(&self, index: usize) {
        let progress = InstanceProgress {
            state: InstanceState::InFlight,
            ..InstanceProgress::default()
        };
        self.runtime.update(&self.key, index, progress);
    }

    /// Records instance `index`'s success contribution (its `collect_field` value and
    /// its extra outputs, keyed by parent field), then saves.
    ///
    /// # Errors
    /// `checkpoint_save_failed` when the Checkpointer's save raises.
    pub async fn record_success(
        &self,
        index: usize,
        result: Value,
        extra_outputs: Map<String, Value>,
    ) -> Result<(), CheckpointError> {
        self.record(index, result, false, extra_outputs).await
    }

    /// Records instance `index`'s collected error record (collect policy), then saves.
    ///
    /// # Errors
    /// `checkpoint_save_failed` when the Checkpointer's save raises.
    pub async fn record_error(&self, index: usize, error: Value) -> Result<(), CheckpointError> {
        self.record(index, error, true, Map::new()).await
    }

    async fn record(
        &self,
        index: usize,
        result: Value,
        result_is_error: bool,
        extra_outputs: Map<String, Value>,
    ) -> Result<(), CheckpointError> {
        let _serial = self.runtime.save_lock.lock().await;
        let progress = InstanceProgress {
            state: InstanceState::Completed,
            result,
            result_is_error,
            completed_inner_positions: Vec::new(),
            extra_outputs,
        };
        self.runtime.update(&self.key, index, progress);
        self.runtime
            .save(
                &self.invocation_id,
                SaveKind::FanOutInternal,
                self.state.clone(),
                self.parents.clone(),
            )
            .await
    }
}

impl Drop for FanOutTracker {
    fn drop(&mut self) {
        self.runtime.untrack(&self.key);
    }
}
