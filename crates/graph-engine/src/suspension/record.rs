//! Spec: suspension §2 / §8.5 and pipeline-utilities §10.15 — the paused-invocation
//! record: a record type of its own (never loaded by the checkpoint resume of §10.4),
//! stored through the Checkpointer seam.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{OnResume, SignalDescriptor};
use crate::checkpoint::Positions;

/// A paused record's status. Only a `Suspended` record can be resumed; claiming it
/// for a resume makes it `Resumed` atomically, so one signal resumes a run once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PausedStatus {
    /// Awaiting its signal.
    Suspended,
    /// Claimed by a resume (the resumed run is in progress, errored, or was dropped).
    Resumed,
}

impl PausedStatus {
    /// `"suspended"` / `"resumed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PausedStatus::Suspended => "suspended",
            PausedStatus::Resumed => "resumed",
        }
    }
}

/// The persisted state of a suspended invocation (suspension §2): enough for any worker
/// holding the compiled graph to resume it, with nothing kept in memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PausedRecord {
    /// The invocation id (reused by the resumed run, §7).
    pub invocation_id: String,
    /// The invocation's correlation id.
    pub correlation_id: String,
    /// The session the invocation is bound to, if any: a signal resume binds the same
    /// session without the caller naming it (harness §3.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The record's status.
    pub status: PausedStatus,
    /// What the invocation awaits.
    pub descriptor: SignalDescriptor,
    /// The suspending node's name in its immediate graph.
    pub node_name: String,
    /// Outermost-to-innermost node names down to the suspending node.
    pub namespace: Vec<String>,
    /// Where the resumed run re-enters.
    pub on_resume: OnResume,
    /// The namespace prefix of the level the resume enters at, and its node: the
    /// suspending node, or the outermost fan-out / branches node containing it.
    pub resume_prefix: Vec<String>,
    /// See [`PausedRecord::resume_prefix`].
    pub resume_node: String,
    /// The states of the levels from the outermost down to the resume level (the first
    /// is the invocation state at the suspension point; the signal payload merges
    /// into it).
    pub states: Vec<Value>,
    /// The node attempts completed before the pause (including the resume node under
    /// [`OnResume::ContinueAfter`]). Without a registered Checkpointer the engine does
    /// not track earlier positions, and this holds only the resume node's.
    pub completed_positions: Positions,
    /// The step the resumed run continues numbering from.
    pub next_step: u64,
    /// The graph's declared schema version when it suspended.
    pub schema_version: String,
    /// When the record was written.
    pub suspended_at: SystemTime,
}

impl PausedRecord {
    /// The invocation state at the suspension point.
    pub fn state(&self) -> &Value {
        self.states.first().unwrap_or(&Value::Null)
    }
}
