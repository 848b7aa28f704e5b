//! Spec: pipeline-utilities §10.1 / §10.13 — the in-memory reference Checkpointer.
//!
//! **Not durable**: records live in the process and are gone when it exits. Records hold
//! JSON states, so state migrations (§10.12) work against this backend too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::record::{CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer};
use crate::BoxError;

/// Keeps the latest record per invocation in memory (upsert). Cheap to clone: clones
/// share the store.
#[derive(Debug, Clone, Default)]
pub struct InMemoryCheckpointer {
    records: Arc<Mutex<HashMap<String, CheckpointRecord>>>,
}

impl InMemoryCheckpointer {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, CheckpointRecord>) -> R) -> R {
        f(&mut self.records.lock().unwrap_or_else(PoisonError::into_inner))
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
}
