//! Spec: sessions §5.5 — the in-memory reference SessionStore.
//!
//! **Not durable**: sessions live in the process and vanish when it exits; otherwise
//! the full §5.1–§5.4 protocol, including §8.2 expected-version checks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::record::{
    check_expected_version, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};
use crate::BoxError;

/// Keeps one record per session in memory. Cheap to clone: clones share the store.
#[derive(Debug, Clone, Default)]
pub struct InMemorySessionStore {
    records: Arc<Mutex<HashMap<String, SessionRecord>>>,
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, SessionRecord>) -> R) -> R {
        f(&mut self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many sessions are stored.
    pub fn len(&self) -> usize {
        self.with(|m| m.len())
    }

    /// Whether no session is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore for InMemorySessionStore {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        let found = self.with(|m| m.get(session_id).cloned());
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        mut record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        let result = self.with(|m| {
            let prior = m.get(session_id);
            check_expected_version(session_id, prior.map(|r| r.version), expected_version)?;
            let now = SystemTime::now();
            record.session_id = session_id.to_owned();
            record.version = prior.map_or(0, |r| r.version).saturating_add(1);
            record.created_at = prior.map_or(now, |r| r.created_at);
            record.updated_at = now;
            let version = record.version;
            m.insert(session_id.to_owned(), record);
            Ok(version)
        });
        Box::pin(async move { result.map_err(|e: super::SessionError| Box::new(e) as BoxError) })
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.with(|m| m.remove(session_id));
        Box::pin(async { Ok(()) })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        let mut out: Vec<SessionSummary> = self.with(|m| {
            m.values()
                .map(SessionSummary::of)
                .filter(|s| filter.is_none_or(|f| f.matches(s)))
                .collect()
        });
        out.sort_by(|a, b| (a.updated_at, &a.session_id).cmp(&(b.updated_at, &b.session_id)));
        Box::pin(async move { Ok(out) })
    }
}
