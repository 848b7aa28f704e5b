//! Spec: pipeline-utilities §10.3 (save at every `completed` event), §10.4 (resume),
//! §10.6 (attempt reset), §10.12 (migrations on load) — the engine side.
//!
//! One [`CheckpointRuntime`] per invocation of a graph with a registered Checkpointer.
//! Saves happen at the outermost level and inside serial subgraphs; a fan-out instance
//! or a parallel branch does not save its inner nodes (the fan-out / branches node saves
//! when it completes, and a resume re-runs it whole).
//!
//! Resume restores the levels on the path to the last completed position: the level
//! that saved gets the record's `state`, its containing levels the `parent_states`;
//! each continues after the node it was in (the saved node's edge is evaluated on the
//! restored state; a containing level re-enters the subgraph node it was inside).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{
    CheckpointError, CheckpointRecord, Checkpointer, MigrationRegistry, NodePosition, Positions,
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
struct ResumePoint {
    path: Vec<String>,
    node: String,
    states: Vec<Value>,
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
    resume: Mutex<Option<ResumePoint>>,
    /// Serializes "snapshot, then save" so records reach the backend in order.
    save_lock: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CheckpointRuntime {
    /// A fresh run's bookkeeping.
    pub(crate) fn fresh(config: Arc<CheckpointConfig>, correlation_id: &str) -> Self {
        CheckpointRuntime {
            config,
            correlation_id: correlation_id.to_owned(),
            positions: Mutex::new(Positions::new()),
            last_saved: Mutex::new(SystemTime::UNIX_EPOCH),
            resume: Mutex::new(None),
            save_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Loads `resume_id`'s record and prepares the resumed run: migrated states, the
    /// positions carried over, and the step to continue numbering from.
    pub(crate) async fn resume(
        config: Arc<CheckpointConfig>,
        resume_id: &str,
    ) -> Result<(Self, u64), CheckpointError> {
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
        let next_step = completed_positions
            .iter()
            .map(|p| p.step + 1)
            .max()
            .unwrap_or(0);
        let point = completed_positions
            .iter()
            .max_by_key(|p| p.step)
            .filter(|p| p.namespace.len() < states.len())
            .map(|p| ResumePoint {
                path: p.namespace.clone(),
                node: p.node_name.clone(),
                states: states.clone(),
            });
        let runtime = CheckpointRuntime {
            config,
            correlation_id,
            positions: Mutex::new(completed_positions),
            last_saved: Mutex::new(SystemTime::UNIX_EPOCH),
            resume: Mutex::new(point),
            save_lock: tokio::sync::Mutex::new(()),
        };
        // Nothing completed yet: the outermost level restarts from its entry with the
        // saved state.
        if lock(&runtime.resume).is_none() {
            if let Some(state) = states.into_iter().next() {
                *lock(&runtime.resume) = Some(ResumePoint {
                    path: Vec::new(),
                    node: String::new(),
                    states: vec![state],
                });
            }
        }
        Ok((runtime, next_step))
    }

    /// The correlation id the run carries (the record's on resume).
    pub(crate) fn correlation_id(&self) -> &str {
        &self.correlation_id
    }

    /// How the level at `prefix` starts, if a resume passes through it. The level
    /// holding the saved node consumes the resume point.
    pub(crate) fn take_level(&self, prefix: &[String]) -> Option<LevelResume> {
        let mut slot = lock(&self.resume);
        let point = slot.as_ref()?;
        let depth = prefix.len();
        if !point.path.starts_with(prefix) || point.states.len() <= depth {
            return None;
        }
        let state = point.states[depth].clone();
        if point.path.len() == depth {
            let node = point.node.clone();
            *slot = None;
            if node.is_empty() {
                return Some(LevelResume::Entry { state });
            }
            return Some(LevelResume::After { state, node });
        }
        Some(LevelResume::Into {
            state,
            node: point.path[depth].clone(),
        })
    }

    /// Records a completed node attempt and saves (§10.3): `state` is the saving
    /// level's post-merge state, `parents` its containing states.
    pub(crate) async fn completed(
        &self,
        invocation_id: &str,
        position: NodePosition,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let _serial = self.save_lock.lock().await;
        let positions = {
            let mut p = lock(&self.positions);
            p.push(position);
            p.clone()
        };
        self.save(invocation_id, positions, state, parents).await
    }

    /// Saves the unchanged state of a level whose node failed (no new position), so a
    /// run that fails before any node completes is still resumable.
    pub(crate) async fn failed(
        &self,
        invocation_id: &str,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let _serial = self.save_lock.lock().await;
        let positions = lock(&self.positions).clone();
        self.save(invocation_id, positions, state, parents).await
    }

    async fn save(
        &self,
        invocation_id: &str,
        positions: Positions,
        state: Value,
        parents: Vec<Value>,
    ) -> Result<(), CheckpointError> {
        let mut record = CheckpointRecord::new(
            invocation_id,
            self.correlation_id.clone(),
            state,
            positions,
            self.config.schema_version.clone(),
        )
        .with_parent_states(parents);
        record.last_saved_at = self.monotonic_now();
        self.config
            .checkpointer
            .save(invocation_id, record)
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
