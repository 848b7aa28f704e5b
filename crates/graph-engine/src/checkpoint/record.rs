//! Spec: pipeline-utilities §10.1 (Checkpointer protocol), §10.2 (record shape).
//!
//! Records hold states as JSON (`State::to_json`), whatever the level's state type, so
//! every backend exposes the class-independent form §10.12 migrations run on.

use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Instances, Positions};
use crate::suspension::PausedRecord;
use crate::BoxError;

/// One completed node attempt whose result was merged (§10.2 `completed_positions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NodePosition {
    /// Subgraph-as-node names from the outermost graph down (empty at the top).
    pub namespace: Vec<String>,
    /// The node.
    pub node_name: String,
    /// Monotonic across the invocation, subgraph-internal nodes included.
    pub step: u64,
    /// The node-level attempt that completed.
    pub attempt_index: u32,
    /// The fan-out instance the node ran in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out_index: Option<usize>,
}

impl NodePosition {
    /// A position.
    pub fn new(
        namespace: Vec<String>,
        node_name: impl Into<String>,
        step: u64,
        attempt_index: u32,
        fan_out_index: Option<usize>,
    ) -> Self {
        NodePosition {
            namespace,
            node_name: node_name.into(),
            step,
            attempt_index,
            fan_out_index,
        }
    }
}

/// Where a fan-out instance stands in a saved record (§10.11 `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InstanceState {
    /// Not dispatched yet.
    #[default]
    NotStarted,
    /// Dispatched, no contribution recorded (re-run from its entry on resume).
    InFlight,
    /// Its contribution is recorded in `result` (skipped on resume).
    Completed,
}

/// Per-instance progress of a fan-out in flight at save time (§10.11).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InstanceProgress {
    /// `not_started`, `in_flight` or `completed`.
    pub state: InstanceState,
    /// The recorded contribution of a completed instance (its `collect_field` value, or
    /// its error record when `result_is_error`); null otherwise.
    #[serde(default)]
    pub result: Value,
    /// Whether `result` is an error record (collect error policy).
    #[serde(default)]
    pub result_is_error: bool,
    /// Inner positions an in-flight instance had completed (informational: a resumed
    /// instance restarts from its entry).
    #[serde(default)]
    pub completed_inner_positions: Vec<NodePosition>,
    /// Extra outputs of a completed instance (keyed by parent field) that roll forward
    /// with it.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra_outputs: Map<String, Value>,
}

/// One enclosing fan-out instance of a nested fan-out (§10.11
/// `enclosing_fan_out_lineage` element).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LineageEntry {
    /// The namespace the enclosing fan-out node runs in.
    pub namespace: Vec<String>,
    /// The enclosing fan-out node.
    pub fan_out_node_name: String,
    /// The enclosing instance.
    pub fan_out_index: usize,
}

impl LineageEntry {
    /// A lineage element.
    pub fn new(
        namespace: Vec<String>,
        fan_out_node_name: impl Into<String>,
        fan_out_index: usize,
    ) -> Self {
        LineageEntry {
            namespace,
            fan_out_node_name: fan_out_node_name.into(),
            fan_out_index,
        }
    }
}

/// One fan-out's progress (§10.11), keyed by namespace, node and enclosing lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FanOutProgress {
    /// The namespace the fan-out node runs in.
    pub namespace: Vec<String>,
    /// The fan-out node.
    pub fan_out_node_name: String,
    /// The enclosing fan-out instances, outermost first (empty for a fan-out not nested
    /// in another fan-out instance).
    #[serde(default)]
    pub enclosing_fan_out_lineage: Vec<LineageEntry>,
    /// The resolved instance count.
    pub instance_count: usize,
    /// One entry per instance (shared with earlier records of the run; see
    /// [`Instances`]).
    pub instances: Instances,
}

impl FanOutProgress {
    /// A fan-out with every instance `not_started`.
    pub fn new(
        namespace: Vec<String>,
        fan_out_node_name: impl Into<String>,
        enclosing_fan_out_lineage: Vec<LineageEntry>,
        instance_count: usize,
    ) -> Self {
        FanOutProgress {
            namespace,
            fan_out_node_name: fan_out_node_name.into(),
            enclosing_fan_out_lineage,
            instance_count,
            instances: Instances::new(instance_count),
        }
    }

    /// Whether this entry has the key `(namespace, node, lineage)` (§10.11: lineages
    /// match element for element; an empty one only matches an empty one).
    pub fn is_for(&self, namespace: &[String], node: &str, lineage: &[LineageEntry]) -> bool {
        self.namespace == namespace
            && self.fan_out_node_name == node
            && self.enclosing_fan_out_lineage == lineage
    }

    /// The entry's key `(namespace, node, lineage)` as one stable string (a JSON
    /// array), for backends that store instances in rows of their own.
    pub fn storage_key(&self) -> String {
        let key = (
            &self.namespace,
            &self.fan_out_node_name,
            &self.enclosing_fan_out_lineage,
        );
        serde_json::to_string(&key).unwrap_or_default()
    }
}

/// The persisted snapshot of an invocation (§10.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CheckpointRecord {
    /// The invocation the record belongs to.
    pub invocation_id: String,
    /// Stable across resume.
    pub correlation_id: String,
    /// The post-merge state of the level that saved (the outermost state when
    /// `parent_states` is empty).
    pub state: Value,
    /// Completed, merged node attempts in completion order (shared with earlier
    /// records of the run; see [`Positions`]).
    pub completed_positions: Positions,
    /// Fan-outs in flight at save time.
    #[serde(default)]
    pub fan_out_progress: Vec<FanOutProgress>,
    /// Containing-graph states when the save was inside a subgraph, outermost first.
    #[serde(default)]
    pub parent_states: Vec<Value>,
    /// When the record was saved (monotonic per invocation).
    pub last_saved_at: SystemTime,
    /// The declared schema version of the outermost state ([`super::UNVERSIONED`] when
    /// undeclared).
    pub schema_version: String,
}

impl CheckpointRecord {
    /// A record with no fan-out progress and no parent states.
    pub fn new(
        invocation_id: impl Into<String>,
        correlation_id: impl Into<String>,
        state: Value,
        completed_positions: impl Into<Positions>,
        schema_version: impl Into<String>,
    ) -> Self {
        CheckpointRecord {
            invocation_id: invocation_id.into(),
            correlation_id: correlation_id.into(),
            state,
            completed_positions: completed_positions.into(),
            fan_out_progress: Vec::new(),
            parent_states: Vec::new(),
            last_saved_at: SystemTime::now(),
            schema_version: schema_version.into(),
        }
    }

    /// Sets the containing-graph states (outermost first).
    pub fn with_parent_states(mut self, parent_states: Vec<Value>) -> Self {
        self.parent_states = parent_states;
        self
    }

    /// Sets the fan-out progress.
    pub fn with_fan_out_progress(mut self, progress: Vec<FanOutProgress>) -> Self {
        self.fan_out_progress = progress;
        self
    }
}

/// What `list` returns per saved invocation (§10.1).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointSummary {
    /// The invocation.
    pub invocation_id: String,
    /// Its correlation id.
    pub correlation_id: String,
    /// When its latest record was saved.
    pub last_saved_at: SystemTime,
    /// How many node attempts its latest record lists as completed.
    pub completed_node_count: usize,
}

impl CheckpointSummary {
    /// A summary from its parts (for backends that index records without loading them).
    pub fn new(
        invocation_id: impl Into<String>,
        correlation_id: impl Into<String>,
        last_saved_at: SystemTime,
        completed_node_count: usize,
    ) -> Self {
        CheckpointSummary {
            invocation_id: invocation_id.into(),
            correlation_id: correlation_id.into(),
            last_saved_at,
            completed_node_count,
        }
    }

    /// The summary of `record`.
    pub fn of(record: &CheckpointRecord) -> Self {
        CheckpointSummary {
            invocation_id: record.invocation_id.clone(),
            correlation_id: record.correlation_id.clone(),
            last_saved_at: record.last_saved_at,
            completed_node_count: record.completed_positions.len(),
        }
    }
}

/// `list` filter: every set criterion must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointFilter {
    /// Only this correlation id.
    pub correlation_id: Option<String>,
    /// Only records saved at or after this time.
    pub saved_since: Option<SystemTime>,
}

impl CheckpointFilter {
    /// A filter that keeps every record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps only records of `correlation_id`.
    pub fn correlation_id(mut self, correlation_id: impl Into<String>) -> Self {
        self.correlation_id = Some(correlation_id.into());
        self
    }

    /// Keeps only records saved at or after `since`.
    pub fn saved_since(mut self, since: SystemTime) -> Self {
        self.saved_since = Some(since);
        self
    }

    /// Whether `summary` passes the filter.
    pub fn matches(&self, summary: &CheckpointSummary) -> bool {
        self.correlation_id
            .as_ref()
            .is_none_or(|c| *c == summary.correlation_id)
            && self.saved_since.is_none_or(|t| summary.last_saved_at >= t)
    }
}

/// A shared checkpointer is a checkpointer (so `GraphBuilder::checkpointer` takes an
/// `Arc<C>` or `Arc<dyn Checkpointer>` as well as the store itself).
impl<C: Checkpointer + ?Sized> Checkpointer for Arc<C> {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).save(invocation_id, record)
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        (**self).load(invocation_id)
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        (**self).list(filter)
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).delete(invocation_id)
    }

    fn save_fan_out_internal<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).save_fan_out_internal(invocation_id, record)
    }

    fn save_fan_out_failure<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).save_fan_out_failure(invocation_id, record)
    }

    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).save_paused(record)
    }

    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        (**self).load_paused(invocation_id)
    }

    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        (**self).claim_paused(invocation_id)
    }

    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        (**self).list_paused(signal_id)
    }

    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).delete_paused(invocation_id)
    }
}

/// The checkpoint store a graph saves to and resumes from (§10.1). `save` must be
/// durable when it returns for backends that document durability.
pub trait Checkpointer: Send + Sync + 'static {
    /// Persists `record` as the latest for `invocation_id`.
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>>;

    /// The latest record for `invocation_id`, if any.
    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>>;

    /// Saved invocations passing `filter`.
    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>>;

    /// Removes every record of `invocation_id` (a no-op when there are none).
    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>>;

    /// A save made from inside a fan-out instance (§10.11.4): backends may batch these.
    /// Defaults to [`Checkpointer::save`].
    fn save_fan_out_internal<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.save(invocation_id, record)
    }

    /// A save made from inside a fan-out instance after one of its nodes failed
    /// (§10.11.2: the instance stays `in_flight`). A batching backend may buffer it
    /// without counting it toward a flush (the failure usually ends the run, losing
    /// the buffer like a crash would). Defaults to [`Checkpointer::save_fan_out_internal`].
    fn save_fan_out_failure<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.save_fan_out_internal(invocation_id, record)
    }
    /// Persists a paused-invocation record (suspension §8.5, pipeline-utilities §10.15),
    /// replacing any paused record of the same invocation. A record type of its own:
    /// [`Checkpointer::load`] never returns it. The default stores nothing and fails,
    /// so `suspend()` reports `suspension_persistence_failed` on a backend without
    /// paused-record support.
    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        let _ = record;
        Box::pin(async { Err(crate::suspension::run::unsupported_backend()) })
    }

    /// The paused record of `invocation_id`, whatever its status.
    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let _ = invocation_id;
        Box::pin(async { Err(crate::suspension::run::unsupported_backend()) })
    }

    /// Atomically moves the paused record of `invocation_id` from `suspended` to
    /// `resumed` and returns it as it was; `None` when there is no record or it is not
    /// `suspended` (so concurrent resumes of one signal resume it once).
    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let _ = invocation_id;
        Box::pin(async { Err(crate::suspension::run::unsupported_backend()) })
    }

    /// The paused records awaiting `signal_id` (every paused record when `None`), oldest
    /// first: how a signal coordinator finds the invocation a signal resumes.
    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        let _ = signal_id;
        Box::pin(async { Err(crate::suspension::run::unsupported_backend()) })
    }

    /// Removes the paused record of `invocation_id` (a no-op when there is none): a
    /// resumed run that completes deletes its record; an application cancels a paused
    /// invocation this way (suspension §12).
    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let _ = invocation_id;
        Box::pin(async { Err(crate::suspension::run::unsupported_backend()) })
    }
}
