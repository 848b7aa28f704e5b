//! Spec: pipeline-utilities §10.1 / §10.13 — the in-memory reference Checkpointer.
//!
//! **Not durable**: records live in the process and are gone when it exits. Records hold
//! JSON states, so state migrations (§10.12) work against this backend too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::record::{CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer};
use crate::suspension::{PausedRecord, PausedStatus};
use crate::BoxError;

/// Keeps the latest record per invocation in memory (upsert). Cheap to clone: clones
/// share the store.
#[derive(Debug, Clone, Default)]
pub struct InMemoryCheckpointer {
    records: Arc<Mutex<HashMap<String, CheckpointRecord>>>,
    /// Paused-invocation records (suspension §8.5): a store of their own.
    paused: Arc<Mutex<HashMap<String, PausedRecord>>>,
}

impl InMemoryCheckpointer {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, CheckpointRecord>) -> R) -> R {
        f(&mut self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn with_paused<R>(&self, f: impl FnOnce(&mut HashMap<String, PausedRecord>) -> R) -> R {
        f(&mut self.paused.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many invocations have a record.
    pub fn len(&self) -> usize {
        self.with(|m| m.len())
    }

    /// Whether no invocation has a record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Checkpointer for InMemoryCheckpointer {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.with(|m| m.insert(invocation_id.to_owned(), record));
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        let found = self.with(|m| m.get(invocation_id).cloned());
        Box::pin(async move { Ok(found) })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        let mut out: Vec<CheckpointSummary> = self.with(|m| {
            m.values()
                .map(CheckpointSummary::of)
                .filter(|s| filter.is_none_or(|f| f.matches(s)))
                .collect()
        });
        out.sort_by_key(|s| s.last_saved_at);
        Box::pin(async move { Ok(out) })
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.with(|m| m.remove(invocation_id));
        Box::pin(async { Ok(()) })
    }

    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        self.with_paused(|m| m.insert(record.invocation_id.clone(), record));
        Box::pin(async { Ok(()) })
    }

    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let found = self.with_paused(|m| m.get(invocation_id).cloned());
        Box::pin(async move { Ok(found) })
    }

    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let claimed = self.with_paused(|m| {
            let record = m
                .get_mut(invocation_id)
                .filter(|r| r.status == PausedStatus::Suspended)?;
            let before = record.clone();
            record.status = PausedStatus::Resumed;
            Some(before)
        });
        Box::pin(async move { Ok(claimed) })
    }

    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        let mut out: Vec<PausedRecord> = self.with_paused(|m| {
            m.values()
                .filter(|r| r.status == PausedStatus::Suspended)
                .filter(|r| signal_id.is_none_or(|id| r.descriptor.signal_id == id))
                .cloned()
                .collect()
        });
        out.sort_by_key(|r| r.suspended_at);
        Box::pin(async move { Ok(out) })
    }

    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.with_paused(|m| m.remove(invocation_id));
        Box::pin(async { Ok(()) })
    }
}
