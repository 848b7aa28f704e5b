//! Spec: sessions §5 — the session store the sessions, harness and chat runners hand the
//! engine: a backend wrapped so that every protocol call the engine makes is logged, with
//! an optional scripted failure of every load (harness 008's `load_raises`). The runners
//! seed and inspect the backend directly, unlogged.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::session::{
    InMemorySessionStore, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};
use openarmature_graph::BoxError;

use crate::shared::lock;

/// One store call the engine made.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `load(id)` and what it returned (`None`: no record).
    Load(String, Option<SessionRecord>),
    /// `load(id)` that failed (the backend's error or the scripted one).
    LoadFailed,
    /// `save(id, record, expected_version)` with the record passed in.
    Save(String, SessionRecord),
    /// `delete(id)`.
    Delete,
    /// `list(filter)`.
    List,
}

impl Op {
    /// The operation's name, as messages print it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Load(..) | Op::LoadFailed => "load",
            Op::Save(..) => "save",
            Op::Delete => "delete",
            Op::List => "list",
        }
    }
}

/// A backend plus the log of the calls made through it.
pub(crate) struct RecordingStore {
    /// The backend itself (seeding and inspection go straight to it).
    pub(crate) backend: Arc<dyn SessionStore>,
    ops: Mutex<Vec<Op>>,
    load_raises: bool,
}

impl Default for RecordingStore {
    /// Over a fresh in-memory store.
    fn default() -> Self {
        RecordingStore::over(Arc::new(InMemorySessionStore::new()))
    }
}

impl RecordingStore {
    /// Logs the calls made to `backend`.
    pub(crate) fn over(backend: Arc<dyn SessionStore>) -> Self {
        RecordingStore {
            backend,
            ops: Mutex::new(Vec::new()),
            load_raises: false,
        }
    }

    /// Every load fails with a scripted error (still logged, as [`Op::LoadFailed`]).
    pub(crate) fn failing_loads(mut self) -> Self {
        self.load_raises = true;
        self
    }

    /// Every call logged so far.
    pub(crate) fn ops(&self) -> Vec<Op> {
        lock(&self.ops).clone()
    }

    /// How many loads were asked for, failed ones included.
    pub(crate) fn loads(&self) -> usize {
        self.count(|o| matches!(o, Op::Load(..) | Op::LoadFailed))
    }

    /// How many saves were asked for.
    pub(crate) fn saves(&self) -> usize {
        self.count(|o| matches!(o, Op::Save(..)))
    }

    fn count(&self, which: impl Fn(&Op) -> bool) -> usize {
        lock(&self.ops).iter().filter(|o| which(o)).count()
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
            let found = if self.load_raises {
                Err("scripted load failure (load_raises)".into())
            } else {
                self.backend.load(session_id).await
            };
            match &found {
                Ok(record) => self.push(Op::Load(session_id.to_owned(), record.clone())),
                Err(_) => self.push(Op::LoadFailed),
            }
            found
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
