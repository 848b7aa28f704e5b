//! Spec: sessions §2–§10: state that persists across `invoke()` calls under a
//! caller-supplied session id.
//!
//! Register a [`SessionStore`] on a graph with a [`SessionConfig`]
//! ([`crate::GraphBuilder::sessions`]); bind an invocation to a session with
//! [`crate::InvokeOptions::session_id`]. At invoke entry the engine loads the
//! session's record, runs any registered §7 migrations, and merges the (projected)
//! state into the initial state through the reducers; when the run reaches `END` it
//! saves the (projected) final state back. Without a session id the store is never
//! touched. Subgraphs, fan-out instances and branches never see the session: only
//! what the outermost graph projects into them (§9).
//!
//! Checkpointing (pipeline-utilities §10) is an orthogonal, per-invocation layer; a
//! graph may register both.
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
//! use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
//!
//! state! {
//!     /// A chat turn's state.
//!     #[derive(Default)]
//!     pub struct Chat => ChatUpdate {
//!         /// Durable across turns.
//!         pub history: Vec<String> => append,
//!         /// Per-turn scratch.
//!         pub draft: String,
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let store = InMemorySessionStore::new();
//! let graph = GraphBuilder::new(Chat::default())
//!     .add_node("turn", |_s: Arc<Chat>, _c: NodeCtx| async {
//!         Ok(ChatUpdate::default().history(vec!["hi".into()]).draft("tmp".to_string()))
//!     })
//!     .add_edge("turn", END)
//!     .entry("turn")
//!     .sessions(SessionConfig::new(Arc::new(store.clone())).project(["history"]))
//!     .compile()
//!     .unwrap();
//! let opts = || InvokeOptions::default().session_id("user-42");
//! graph.invoke_with(Chat::default(), opts()).await.unwrap();
//! let second = graph.invoke_with(Chat::default(), opts()).await.unwrap();
//! assert_eq!(second.state.history, ["hi", "hi"]);
//! # }
//! ```

mod config;
mod memory;
mod record;
pub(crate) mod runtime;

pub use runtime::LoadedSession;

pub use config::SessionConfig;
pub use memory::InMemorySessionStore;
pub use record::{
    check_expected_version, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};

use crate::checkpoint::CheckpointError;
use crate::error::{BoxError, RuntimeCategory};

/// The OpenArmature capability this module implements (the crate's own is
/// [`crate::SPEC_CAPABILITY`]).
pub const SPEC_CAPABILITY: &str = "sessions";

/// The OpenArmature specification release the sessions implementation targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// A sessions failure (§10), with its canonical category.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The store's `load` raised, or the stored record does not fit the graph's
    /// state; the invocation does not run.
    #[error("session_load_failed: session `{session_id}`: {source}")]
    LoadFailed {
        /// The session.
        session_id: String,
        /// The backend's (or the merge's) error.
        source: BoxError,
    },
    /// The store's `save` raised (at `END`: after the run completed; mid-invoke: at
    /// the save call).
    #[error("session_save_failed: session `{session_id}`: {source}")]
    SaveFailed {
        /// The session.
        session_id: String,
        /// The backend's error.
        source: BoxError,
    },
    /// No registered chain bridges the record's schema version to the current one.
    #[error("session_state_migration_missing: no migration chain from `{from_version}` to `{to_version}` ({registered_migrations_count} registered: {registry_description})")]
    MigrationMissing {
        /// The record's `schema_version`.
        from_version: String,
        /// The graph's session schema version.
        to_version: String,
        /// How many session migrations are registered.
        registered_migrations_count: usize,
        /// The registered set.
        registry_description: String,
    },
    /// A duplicate `(from, to)` registration, or several shortest chains.
    #[error("session_state_migration_chain_ambiguous: more than one migration path from `{}` to `{}`", .from_version.as_deref().unwrap_or("?"), .to_version.as_deref().unwrap_or("?"))]
    MigrationChainAmbiguous {
        /// The pair's input version, when known.
        from_version: Option<String>,
        /// The pair's output version, when known.
        to_version: Option<String>,
    },
    /// A migration raised; later migrations did not run and the graph did not run.
    #[error("session_state_migration_failed: migration `{from_version}` -> `{to_version}` raised: {source}")]
    MigrationFailed {
        /// The failing migration's input version.
        from_version: String,
        /// The failing migration's output version.
        to_version: String,
        /// What it raised.
        source: BoxError,
    },
    /// An optimistic-concurrency save found another version stored (§8.2).
    #[error("session_write_conflict: session `{session_id}` expected version {expected_version}, found {}", .actual_version.map_or_else(|| "no record".to_owned(), |v| v.to_string()))]
    WriteConflict {
        /// The session.
        session_id: String,
        /// The version the save expected (0: no record).
        expected_version: u64,
        /// The stored version (`None`: no record).
        actual_version: Option<u64>,
    },
}

impl SessionError {
    /// The canonical category identifier.
    pub fn category(&self) -> &'static str {
        self.runtime_category().as_str()
    }

    /// Always `false`: the engine never retries session operations (§8.2), and none
    /// of these is fixed by repeating the same call.
    pub fn is_transient(&self) -> bool {
        false
    }

    /// The runtime category a [`crate::GraphError`] carrying this failure reports.
    pub fn runtime_category(&self) -> RuntimeCategory {
        use RuntimeCategory as C;
        match self {
            SessionError::LoadFailed { .. } => C::SessionLoadFailed,
            SessionError::SaveFailed { .. } => C::SessionSaveFailed,
            SessionError::MigrationMissing { .. } => C::SessionStateMigrationMissing,
            SessionError::MigrationChainAmbiguous { .. } => C::SessionStateMigrationChainAmbiguous,
            SessionError::MigrationFailed { .. } => C::SessionStateMigrationFailed,
            SessionError::WriteConflict { .. } => C::SessionWriteConflict,
        }
    }

    /// The session counterpart of a migration-registry failure (same fields, §10).
    pub(crate) fn from_migration(e: CheckpointError) -> Self {
        match e {
            CheckpointError::MigrationMissing {
                from_version,
                to_version,
                registered_migrations_count,
                registry_description,
            } => SessionError::MigrationMissing {
                from_version,
                to_version,
                registered_migrations_count,
                registry_description,
            },
            CheckpointError::MigrationFailed {
                from_version,
                to_version,
                source,
            } => SessionError::MigrationFailed {
                from_version,
                to_version,
                source,
            },
            CheckpointError::ChainAmbiguous {
                from_version,
                to_version,
            } => SessionError::MigrationChainAmbiguous {
                from_version,
                to_version,
            },
            other => SessionError::LoadFailed {
                session_id: String::new(),
                source: Box::new(other),
            },
        }
    }

    /// A store error: a backend's own [`SessionError`] (a write conflict) is kept,
    /// anything else becomes `session_save_failed` / `session_load_failed`.
    pub(crate) fn backend(session_id: &str, err: BoxError, saving: bool) -> Self {
        match err.downcast::<SessionError>() {
            Ok(own) => *own,
            Err(source) if saving => SessionError::SaveFailed {
                session_id: session_id.to_owned(),
                source,
            },
            Err(source) => SessionError::LoadFailed {
                session_id: session_id.to_owned(),
                source,
            },
        }
    }
}

impl crate::Categorized for SessionError {
    fn category(&self) -> Option<crate::Category> {
        Some(crate::Category::from_name(SessionError::category(self)))
    }
}
