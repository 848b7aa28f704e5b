//! The harness suite's session store: the engine's in-memory store with call counts
//! (011 asserts a stateless turn never touches it) and the scripted `load_raises`
//! failure (008).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::session::{
    InMemorySessionStore, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};
use openarmature_graph::BoxError;

/// Counts loads and saves; optionally fails every load.
#[derive(Clone, Default)]
pub(crate) struct CountingStore {
    pub(crate) inner: InMemorySessionStore,
    pub(crate) loads: Arc<AtomicUsize>,
    pub(crate) saves: Arc<AtomicUsize>,
    pub(crate) load_raises: bool,
}

impl SessionStore for CountingStore {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if self.load_raises {
            return Box::pin(async { Err("scripted load failure (load_raises)".into()) });
        }
        self.inner.load(session_id)
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        self.inner.save(session_id, record, expected_version)
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.inner.delete(session_id)
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        self.inner.list(filter)
    }
}
