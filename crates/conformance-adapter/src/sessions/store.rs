//! Spec: sessions §5 — the case's SessionStore: a reference backend (§5.5) wrapped so
//! every protocol call the engine makes is recorded; the runner seeds and inspects
//! the backend directly (unrecorded).

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::session::{
    InMemorySessionStore, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};
use openarmature_graph::BoxError;
use openarmature_pipeline::SqliteSessionStore;

use super::model::StoreKind;
use crate::failure::Check;
use crate::shared::lock;

/// One store call the engine made.
#[derive(Debug, Clone)]
pub(super) enum Op {
    /// `load(id)` and what it returned (`None`: no record; errors are not recorded).
    Load(String, Option<SessionRecord>),
    /// `save(id, record, expected_version)` with the record passed in.
    Save(String, SessionRecord),
    /// `delete(id)`.
    Delete,
    /// `list(filter)`.
    List,
}

impl Op {
    /// The operation's name, as messages print it.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Op::Load(..) => "load",
            Op::Save(..) => "save",
            Op::Delete => "delete",
            Op::List => "list",
        }
    }
}

/// A backend plus the log of the calls made through it.
pub(super) struct RecordingStore {
    /// The backend itself (seeding and `store_after` go straight to it).
    pub(super) backend: Arc<dyn SessionStore>,
    ops: Mutex<Vec<Op>>,
}

impl RecordingStore {
    /// A fresh, empty backend of `kind`.
    pub(super) fn new(kind: StoreKind) -> Check<Self> {
        let backend: Arc<dyn SessionStore> = match kind {
            _ if crate::backends::selected().is_some() => crate::backends::session_store()
                .transpose()?
                .ok_or("no backend")?,
            StoreKind::InMemory => Arc::new(InMemorySessionStore::new()),
            StoreKind::Sqlite => Arc::new(
                SqliteSessionStore::in_memory()
                    .map_err(|e| format!("cannot open an in-memory SQLite session store: {e}"))?,
            ),
        };
        Ok(RecordingStore {
            backend,
            ops: Mutex::new(Vec::new()),
        })
    }

    /// Every call recorded so far.
    pub(super) fn ops(&self) -> Vec<Op> {
        lock(&self.ops).clone()
    }

    fn push(&self, op: Op) {
        lock(&self.ops).push(op);
    }
}

impl SessionStore for RecordingStore {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        Box::pin(async move {
            let found = self.backend.load(session_id).await?;
            self.push(Op::Load(session_id.to_owned(), found.clone()));
            Ok(found)
        })
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        Box::pin(async move {
            self.push(Op::Save(session_id.to_owned(), record.clone()));
            self.backend
                .save(session_id, record, expected_version)
                .await
        })
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.push(Op::Delete);
        self.backend.delete(session_id)
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        self.push(Op::List);
        self.backend.list(filter)
    }
}
