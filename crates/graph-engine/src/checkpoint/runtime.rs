//! Spec: pipeline-utilities §10.3 (save at every `completed` event), §10.4 (resume),
//! §10.6 (attempt reset), §10.12 (migrations on load) — the engine side.
//!
//! One [`CheckpointRuntime`] per invocation of a graph with a registered Checkpointer.
//! Saves happen at the outermost level, inside serial subgraphs and inside fan-out
//! instances (§10.11, see `fan_out.rs`); a parallel branch does not save its inner nodes
//! (the branches node saves when it completes, and a resume re-runs it whole).
//!
//! Resume from a record saved while a top-level fan-out was in flight re-runs that
//! fan-out node on the state it was dispatched with (its progress decides which
//! instances run). Otherwise resume restores the levels on the path to the last
//! completed position: the level
//! that saved gets the record's `state`, its containing levels the `parent_states`;
//! each continues after the node it was in (the saved node's edge is evaluated on the
//! restored state; a containing level re-enters the subgraph node it was inside).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::fan_out::InstanceKey;
use super::{
    CheckpointError, CheckpointRecord, Checkpointer, FanOutProgress, MigrationRegistry,
    NodePosition, Positions,
};
use crate::state::State;
use crate::StateValidationError;

/// What a graph registered: its Checkpointer, declared schema version and migrations.
pub(crate) struct CheckpointConfig {
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
    pub(crate) schema_version: String,
    pub(crate) migrations: MigrationRegistry,
}

/// Where a resumed run re-enters: the saved node's level path and one state per level
/// (outermost first).
pub(crate) struct ResumePoint {
    path: Vec<String>,
    node: String,
    states: Vec<Value>,
    /// Re-enter the node at the end of `path` (an in-flight fan-out): the point is
    /// consumed by the level that runs it, its instances start from their entries.
    into_fan_out: bool,
    /// Run `node` again instead of continuing after it (a paused record suspended
    /// with `OnResume::RerunNode`).
    rerun: bool,
}

impl ResumePoint {
    /// The resume point of a paused record (suspension §7): enter the levels down to
    /// `prefix`, then continue after `node` or run it again.
    pub(crate) fn paused(
        prefix: Vec<String>,
        node: String,
        states: Vec<Value>,
        rerun: bool,
    ) -> Self {
        ResumePoint {
            path: prefix,
            node,
            states,
            into_fan_out: false,
            rerun,
        }
    }
}

/// Where a resumed invocation re-enters, consumed level by level as the run descends
/// (a checkpoint resume, §10.4, or a signal resume, suspension §7).
pub(crate) struct ResumeCursor {
    point: Mutex<Option<ResumePoint>>,
    /// The outermost state the resumed invocation starts from, as observers see it.
    restored: Option<Value>,
}

impl ResumeCursor {
    pub(crate) fn new(point: ResumePoint) -> Self {
        ResumeCursor {
            restored: point.states.first().cloned(),
            point: Mutex::new(Some(point)),
        }
    }

    /// The outermost state the resumed invocation starts from.
    pub(crate) fn restored_state(&self) -> Option<&Value> {
        self.restored.as_ref()
    }

    /// How the level at `prefix` starts, if the resume passes through it. The level
    /// holding the saved node consumes the resume point.
    pub(crate) fn take_level(&self, prefix: &[String]) -> Option<LevelResume> {
        let mut slot = lock(&self.point);
        let point = slot.as_ref()?;
        let depth = prefix.len();
        if !point.path.starts_with(prefix) || point.states.len() <= depth {
            return None;
        }
        let state = point.states[depth].clone();
        if point.path.len() == depth {
            let node = point.node.clone();
            let rerun = point.rerun;
            *slot = None;
            if node.is_empty() {
                return Some(LevelResume::Entry { state });
            }
            if rerun {
                return Some(LevelResume::Into { state, node });
            }
            return Some(LevelResume::After { state, node });
        }
        let node = point.path[depth].clone();
        if point.into_fan_out && depth + 1 == point.path.len() {
            *slot = None;
        }
        Some(LevelResume::Into { state, node })
    }
}

/// How one level starts on resume.
pub(crate) enum LevelResume {
    /// Restore this state, then continue after `node` (its edge decides).
    After { state: Value, node: String },
    /// Restore this state, then run `node` (the subgraph the save was inside).
    Into { state: Value, node: String },
    /// Restore this state and start at the entry (nothing had completed).
    Entry { state: Value },
}

/// Per-invocation checkpoint bookkeeping.
pub(crate) struct CheckpointRuntime {
    pub(crate) config: Arc<CheckpointConfig>,
    correlation_id: String,
    positions: Mutex<Positions>,
    last_saved: Mutex<SystemTime>,
    /// Serializes "snapshot, then save" so records reach the backend in order.
    pub(super) save_lock: tokio::sync::Mutex<()>,
    /// Fan-outs in flight in this run (§10.11), saved with every record.
    pub(super) live: Mutex<Vec<FanOutProgress>>,
    /// The loaded record's fan-out progress, consumed as fan-outs re-enter.
    pub(super) saved: Mutex<Vec<FanOutProgress>>,
}

/// Which Checkpointer seam a save goes through (§10.11.4).
#[derive(Clone, Copy)]
pub(super) enum SaveKind {
    Regular,
    FanOutInternal,
    FanOutFailure,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CheckpointRuntime {
    /// A fresh run's bookkeeping.
    pub(crate) fn fresh(config: Arc<CheckpointConfig>, correlation_id: &str) -> Self {
        Self::continuing(config, correlation_id, Positions::new())
    }

    /// A run continuing after `positions` (a signal resume, suspension §7).
    pub(crate) fn continuing(
        config: Arc<CheckpointConfig>,
        correlation_id: &str,
        positions: Positions,
    ) -> Self {
        CheckpointRuntime {
            config,
            correlation_id: correlation_id.to_owned(),
            positions: Mutex::new(positions),
            last_saved: Mutex::new(SystemTime::UNIX_EPOCH),
            save_lock: tokio::sync::Mutex::new(()),
            live: Mutex::new(Vec::new()),
            saved: Mutex::new(Vec::new()),
        }
    }

    /// The completed positions so far.
    pub(crate) fn positions(&self) -> Positions {
        lock(&self.positions).clone()
    }

    /// Loads `resume_id`'s record and prepares the resumed run: migrated states, the
    /// positions carried over, and the step to continue numbering from.
    pub(crate) async fn resume(
        config: Arc<CheckpointConfig>,
        resume_id: &str,
    ) -> Result<(Self, Option<ResumeCursor>, u64), CheckpointError> {
        let record = config
            .checkpointer
            .load(resume_id)
            .await
            .map_err(|e| CheckpointError::RecordInvalid {
                description: format!("loading `{resume_id}` failed: {e}"),
            })?
            .ok_or_else(|| CheckpointError::NotFound {
                invocation_id: resume_id.to_owned(),
            })?;
        let CheckpointRecord {
            correlation_id,
            state,
            completed_positions,
            parent_states,
            schema_version,
            fan_out_progress,
            ..
        } = record;
        let mut states = parent_states;
        states.push(state);
        if schema_version != config.schema_version {
            let registry = &config.migrations;
            // Resolve once, so a missing / ambiguous chain is reported before any
            // migration runs; every level's state then takes the same chain.
            registry.resolve(&schema_version, &config.schema_version)?;
            states = states
                .into_iter()
                .map(|s| {
                    registry
                        .migrate(&schema_version, &config.schema_version, s)
                        .map(|(s, _)| s)
                })
                .collect::<Result<_, _>>()?;
        }
        let inner = fan_out_progress
            .iter()
            .flat_map(|e| &e.instances)
            .flat_map(|i| &i.completed_inner_positions);
        let next_step = completed_positions
            .iter()
            .chain(inner)
            .map(|p| p.step + 1)
            .max()
            .unwrap_or(0);
        // A save made while a (top-level) fan-out was in flight resumes by re-running
        // that fan-out node on the state it was dispatched with (§10.7): the levels
        // containing it are blocked on it, so nothing after it completed.
        let in_flight = fan_out_progress
            .iter()
            .filter(|e| e.enclosing_fan_out_lineage.is_empty())
            .min_by_key(|e| e.namespace.len())
            .filter(|e| e.namespace.len() < states.len());
        let point = match in_flight {
            Some(e) => Some(ResumePoint {
                path: e
                    .namespace
                    .iter()
                    .cloned()
                    .chain([e.fan_out_node_name.clone()])
                    .collect(),
                node: String::new(),
                states: states[..=e.namespace.len()].to_vec(),
                into_fan_out: true,
                rerun: false,
            }),
            None => completed_positions
                .iter()
                .max_by_key(|p| p.step)
                .filter(|p| p.namespace.len() < states.len())
                .map(|p| ResumePoint {
                    path: p.namespace.clone(),
                    node: p.node_name.clone(),
                    states: states.clone(),
                    into_fan_out: false,
                    rerun: false,
                }),
        };
        // Nothing completed yet: the outermost level restarts from its entry with the
        // saved state.
        let point = point.or_else(|| {
            states.into_iter().next().map(|state| ResumePoint {
                path: Vec::new(),
                node: String::new(),
                states: vec![state],
                into_fan_out: false,
                rerun: false,
            })
        });
        let runtime = CheckpointRuntime::continuing(config, &correlation_id, completed_positions);
        *lock(&runtime.saved) = fan_out_progress;
        Ok((runtime, point.map(ResumeCursor::new), next_step))
    }

    /// The correlation id the run carries (the record's on resume).
    pub(crate) fn correlation_id(&self) -> &str {
        &self.correlation_id
    }

    /// Records a completed node attempt and saves (§10.3): `state` is the saving
    /// level's post-merge state, `parents` its containing states. Inside a fan-out
    /// instance the position goes to the instance's `completed_inner_positions`
    /// (nothing is saved when no fan-out tracks the instance).
    pub(crate) async fn completed(
        &self,
        invocation_id: &str,
        position: NodePosition,
        instance: Option<InstanceKey>,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let _serial = self.save_lock.lock().await;
        let kind = match instance {
            Some(key) => {
                if !self.record_inner(&key, position) {
                    return Ok(());
                }
                SaveKind::FanOutInternal
            }
            None => {
                lock(&self.positions).push(position);
                SaveKind::Regular
            }
        };
        self.save(invocation_id, kind, state, parents).await
    }

    /// Saves the unchanged state of a level whose node failed (no new position), so a
    /// run that fails before any node completes is still resumable (and a failing
    /// fan-out instance is recorded `in_flight`).
    pub(crate) async fn failed(
        &self,
        invocation_id: &str,
        instance: Option<InstanceKey>,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let _serial = self.save_lock.lock().await;
        let kind = match instance {
            Some(key) if !self.tracks(&key) => return Ok(()),
            Some(_) => SaveKind::FanOutFailure,
            None => SaveKind::Regular,
        };
        self.save(invocation_id, kind, state, parents).await
    }

    /// Saves a record of the current positions and fan-out progress. The caller holds
    /// `save_lock`.
    pub(super) async fn save(
        &self,
        invocation_id: &str,
        kind: SaveKind,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let positions = lock(&self.positions).clone();
        let progress = lock(&self.live).clone();
        let mut record = CheckpointRecord::new(
            invocation_id,
            self.correlation_id.clone(),
            state,
            positions,
            self.config.schema_version.clone(),
        )
        .with_parent_states(parents)
        .with_fan_out_progress(progress);
        record.last_saved_at = self.monotonic_now();
        let cp = &self.config.checkpointer;
        match kind {
            SaveKind::Regular => cp.save(invocation_id, record),
            SaveKind::FanOutInternal => cp.save_fan_out_internal(invocation_id, record),
            SaveKind::FanOutFailure => cp.save_fan_out_failure(invocation_id, record),
        }
        .await
        .map_err(|source| CheckpointError::SaveFailed { source })
    }

    /// Now, or just after the previous save when the clock has not advanced.
    fn monotonic_now(&self) -> SystemTime {
        let mut last = lock(&self.last_saved);
        let now = SystemTime::now().max(*last + Duration::from_micros(1));
        *last = now;
        now
    }
}

/// Rebuilds a level's state from its JSON form over the level's defaults: every key
/// must be a declared field of the right type.
pub(crate) fn state_from_json<S: State>(defaults: &S, value: Value) -> Result<S, CheckpointError> {
    let invalid = |e: StateValidationError| CheckpointError::RecordInvalid {
        description: format!("the saved state does not fit the current schema: {e}"),
    };
    let Value::Object(fields) = value else {
        return Err(CheckpointError::RecordInvalid {
            description: format!("the saved state is not an object: {value}"),
        });
    };
    let mut state = defaults.clone();
    for (field, v) in fields {
        state = state.with_field_json(&field, v).map_err(invalid)?;
    }
    state.validate().map_err(invalid)?;
    Ok(state)
}
