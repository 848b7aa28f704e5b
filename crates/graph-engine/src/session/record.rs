//! Spec: sessions §5 (SessionStore protocol), §8.2 (optimistic concurrency).
//!
//! Records hold the session state as JSON (the projected slice, or the whole state),
//! so §7 migrations run on the class-independent form whatever the backend.

use std::time::SystemTime;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::SessionError;
use crate::BoxError;

/// The stored form of a session (§2 *SessionRecord*).
///
/// `version`, `created_at` and `updated_at` are backend metadata: a store assigns
/// them on [`SessionStore::save`] (the values on the record passed in are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The caller's session id.
    pub session_id: String,
    /// The session state as a JSON object (field name → value).
    pub state: Value,
    /// The schema version the state was saved under (§7).
    pub schema_version: String,
    /// The optimistic-concurrency counter (§8.2): 1 after the first save, +1 per save.
    pub version: u64,
    /// When the session was first saved.
    pub created_at: SystemTime,
    /// When the session was last saved.
    pub updated_at: SystemTime,
}

impl SessionRecord {
    /// A record to save: `version` 0, both timestamps now.
    pub fn new(
        session_id: impl Into<String>,
        schema_version: impl Into<String>,
        state: Value,
    ) -> Self {
        let now = SystemTime::now();
        SessionRecord {
            session_id: session_id.into(),
            state,
            schema_version: schema_version.into(),
            version: 0,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What [`SessionStore::list`] returns per session: metadata, never the state (§5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// The schema version of the stored state.
    pub schema_version: String,
    /// The record's version counter.
    pub version: u64,
    /// When the session was first saved.
    pub created_at: SystemTime,
    /// When the session was last saved.
    pub updated_at: SystemTime,
}

impl SessionSummary {
    /// The summary of `record`.
    pub fn of(record: &SessionRecord) -> Self {
        SessionSummary {
            session_id: record.session_id.clone(),
            schema_version: record.schema_version.clone(),
            version: record.version,
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// A [`SessionStore::list`] filter (§5.4's recommended set): every set criterion must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionFilter {
    /// Only sessions saved at or after this time.
    pub updated_after: Option<SystemTime>,
    /// Only sessions first saved at or after this time.
    pub created_after: Option<SystemTime>,
    /// Only sessions stored under this schema version.
    pub schema_version: Option<String>,
}

impl SessionFilter {
    /// A filter that keeps every session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps sessions saved at or after `t`.
    pub fn updated_after(mut self, t: SystemTime) -> Self {
        self.updated_after = Some(t);
        self
    }

    /// Keeps sessions first saved at or after `t`.
    pub fn created_after(mut self, t: SystemTime) -> Self {
        self.created_after = Some(t);
        self
    }

    /// Keeps sessions stored under `version`.
    pub fn schema_version(mut self, version: impl Into<String>) -> Self {
        self.schema_version = Some(version.into());
        self
    }

    /// Whether `summary` passes the filter.
    pub fn matches(&self, summary: &SessionSummary) -> bool {
        self.updated_after.is_none_or(|t| summary.updated_at >= t)
            && self.created_after.is_none_or(|t| summary.created_at >= t)
            && self
                .schema_version
                .as_ref()
                .is_none_or(|v| *v == summary.schema_version)
    }
}

/// The session persistence protocol (§5): load / save / delete / list, keyed by
/// session id. Register one on a graph with [`crate::GraphBuilder::sessions`].
///
/// Errors are boxed; a backend reports an optimistic-concurrency conflict by
/// returning a boxed [`SessionError::WriteConflict`] (see [`check_expected_version`]),
/// which the engine surfaces as `session_write_conflict`. Any other error becomes
/// `session_load_failed` / `session_save_failed`.
pub trait SessionStore: Send + Sync + 'static {
    /// The record stored under `session_id`, or `None` (§5.1).
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>>;

    /// Writes `record` under `session_id`, overwriting (§5.2), and returns the new
    /// version counter. With `expected_version` (§8.2) the write happens only when the
    /// stored version equals it (`Some(0)`: only when no record exists); otherwise the
    /// store returns [`SessionError::WriteConflict`]. `None` is last-write-wins (§8.1).
    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>>;

    /// Removes the record; deleting a missing session is not an error (§5.3).
    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>>;

    /// Summaries of the sessions passing `filter` (all when `None`), oldest update
    /// first (§5.4).
    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>>;
}

/// The §8.2 check a backend runs inside its write: `current` is the stored version
/// (`None` when no record exists).
///
/// # Errors
/// [`SessionError::WriteConflict`] when `expected` is set and differs from `current`
/// (`Some(0)` expects no record).
pub fn check_expected_version(
    session_id: &str,
    current: Option<u64>,
    expected: Option<u64>,
) -> Result<(), SessionError> {
    match expected {
        Some(want) if want != current.unwrap_or(0) => Err(SessionError::WriteConflict {
            session_id: session_id.to_owned(),
            expected_version: want,
            actual_version: current,
        }),
        _ => Ok(()),
    }
}
