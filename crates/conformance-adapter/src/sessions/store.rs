//! Spec: sessions §5 — the case's SessionStore: a reference backend (§5.5) of the
//! fixture's kind, or the selected backend crate's, under the shared call log.

use std::sync::Arc;

use openarmature_graph::session::{InMemorySessionStore, SessionStore};
use openarmature_pipeline::SqliteSessionStore;

use super::model::StoreKind;
use crate::failure::Check;
pub(super) use crate::session_log::{Op, RecordingStore};

/// A fresh, empty backend of `kind` under the call log.
pub(super) fn fresh(kind: StoreKind) -> Check<RecordingStore> {
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
    Ok(RecordingStore::over(backend))
}
