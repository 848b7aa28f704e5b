//! Spec: conformance-adapter §5.6 — which durable backend the checkpoint and session
//! cases run on. By default the reference backends the fixtures name (in-memory,
//! SQLite); a test binary of another backend crate (e.g. `openarmature-postgres`'s
//! `conformance_postgres`) selects its own once, before running cases, and every
//! case's Checkpointer / SessionStore is then a fresh, empty store of that backend.
//! The adapter itself depends on no database driver.

use std::sync::{Arc, OnceLock};

use openarmature_graph::checkpoint::{Checkpointer, InMemoryCheckpointer};
use openarmature_graph::session::{InMemorySessionStore, SessionStore};

use crate::failure::{Check, Failure};

/// Makes a fresh, empty store for one case.
pub type Factory<T> = Arc<dyn Fn() -> Check<Arc<T>> + Send + Sync>;

/// The backend selected for the process.
#[derive(Clone)]
pub struct Backends {
    /// Its name (shown in failure messages).
    pub name: String,
    /// Every checkpoint case's Checkpointer.
    pub checkpointer: Factory<dyn Checkpointer>,
    /// Every sessions case's SessionStore (whatever `session_store:` the case names).
    pub session_store: Factory<dyn SessionStore>,
}

static SELECTED: OnceLock<Backends> = OnceLock::new();

/// Selects `backends` for every later case of this process.
///
/// # Errors
/// The name of the backend already selected (a process selects once).
pub fn select(backends: Backends) -> Check {
    SELECTED.set(backends).map_err(|_| {
        Failure::setup(format!(
            "backend `{}` already selected",
            SELECTED.get().map_or("", |b| b.name.as_str())
        ))
    })
}

/// The selected backend, if any.
pub fn selected() -> Option<&'static Backends> {
    SELECTED.get()
}

/// A fresh Checkpointer of the selected backend (`None`: the reference one).
pub(crate) fn checkpointer() -> Option<Check<Arc<dyn Checkpointer>>> {
    selected().map(|b| {
        (b.checkpointer)()
            .map_err(|e| Failure::setup(format!("{} checkpointer: {}", b.name, e.message())))
    })
}

/// A fresh SessionStore of the selected backend (`None`: the reference one).
pub(crate) fn session_store() -> Option<Check<Arc<dyn SessionStore>>> {
    selected().map(|b| {
        (b.session_store)()
            .map_err(|e| Failure::setup(format!("{} session store: {}", b.name, e.message())))
    })
}

/// The Checkpointer of a case that names `checkpointer: in_memory`: a fresh one of the
/// selected backend, or the engine's in-memory one.
pub(crate) fn checkpointer_or_in_memory() -> Check<Arc<dyn Checkpointer>> {
    Ok(checkpointer()
        .transpose()?
        .unwrap_or_else(|| Arc::new(InMemoryCheckpointer::new())))
}

/// The SessionStore of a case that names `session_store: in_memory`: a fresh one of the
/// selected backend, or the engine's in-memory one.
pub(crate) fn session_store_or_in_memory() -> Check<Arc<dyn SessionStore>> {
    Ok(session_store()
        .transpose()?
        .unwrap_or_else(|| Arc::new(InMemorySessionStore::new())))
}
