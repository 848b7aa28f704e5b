//! Spec: pipeline-utilities §10.10, sessions §10 — the PostgreSQL backends' errors and
//! the canonical categories they surface as.

use openarmature_core::{Categorized, Category};

/// The implementation's own category for a checkpoint store that cannot be reached
/// (the pool timed out, the server refused): the same identifier the SQLite
/// Checkpointer reports for a database failure outside `save`.
pub const CHECKPOINT_BACKEND_UNAVAILABLE: Category =
    Category::transient("checkpoint_backend_unavailable");

/// Which store an error came from (it decides the category).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// The [`crate::PostgresCheckpointer`].
    Checkpoint,
    /// The [`crate::PostgresSessionStore`].
    Session,
    /// Connecting or migrating, before any store exists.
    Setup,
}

/// Why a PostgreSQL backend failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The connection URL or the configuration is not usable.
    #[error("invalid PostgreSQL configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// No connection could be had from the pool (server down, pool exhausted past the
    /// wait timeout, authentication refused).
    #[error("{store:?} {operation}: no PostgreSQL connection: {source}")]
    Pool {
        /// The store.
        store: StoreKind,
        /// The operation (`save`, `load`, `list`, `delete`, `save_paused`, `load_paused`,
        /// `claim_paused`, `list_paused`, `delete_paused`, `migrate`).
        operation: &'static str,
        /// The pool's error.
        #[source]
        source: deadpool_postgres::PoolError,
    },
    /// A statement failed.
    #[error("{store:?} {operation}: PostgreSQL error: {source}")]
    Database {
        /// The store.
        store: StoreKind,
        /// The operation.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A record or state could not be encoded as JSON.
    #[error("{store:?} {operation}: cannot encode `{key}` as JSON: {source}")]
    Encode {
        /// The store.
        store: StoreKind,
        /// The operation.
        operation: &'static str,
        /// The invocation or session id.
        key: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored row is not a valid record (corrupt or foreign row).
    #[error("{store:?} {operation}: the stored row of `{key}` is unreadable: {reason}")]
    Decode {
        /// The store.
        store: StoreKind,
        /// The operation.
        operation: &'static str,
        /// The invocation or session id.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A migration failed; the schema is left at the last version that applied.
    #[error("migration {version} ({name}) failed: {source}")]
    Migration {
        /// The migration's version.
        version: i32,
        /// Its name.
        name: &'static str,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database was migrated by a newer release of this crate.
    #[error("schema `{schema}` is at migration {found}; this release knows up to {known}")]
    SchemaTooNew {
        /// The schema.
        schema: String,
        /// The version found.
        found: i32,
        /// The newest version this release ships.
        known: i32,
    },
}

impl PostgresError {
    /// The canonical category: for the checkpointer `checkpoint_save_failed` (a failed
    /// save), `checkpoint_record_invalid` (a record that does not encode or decode) or
    /// [`CHECKPOINT_BACKEND_UNAVAILABLE`]; for the session store
    /// `session_save_failed` (a failed save) or `session_load_failed`; setup errors
    /// report the backend-unavailable category.
    pub fn category(&self) -> Category {
        use StoreKind as K;
        match self {
            PostgresError::Encode {
                store: K::Session, ..
            } => Category::SESSION_SAVE_FAILED,
            PostgresError::Decode {
                store: K::Session, ..
            } => Category::SESSION_LOAD_FAILED,
            PostgresError::Encode { .. } | PostgresError::Decode { .. } => {
                Category::CHECKPOINT_RECORD_INVALID
            }
            PostgresError::Pool {
                store, operation, ..
            }
            | PostgresError::Database {
                store, operation, ..
            } => match (store, *operation) {
                (K::Checkpoint, "save") => Category::CHECKPOINT_SAVE_FAILED,
                (K::Session, "save") => Category::SESSION_SAVE_FAILED,
                (K::Session, _) => Category::SESSION_LOAD_FAILED,
                _ => CHECKPOINT_BACKEND_UNAVAILABLE,
            },
            _ => CHECKPOINT_BACKEND_UNAVAILABLE,
        }
    }

    /// Whether retrying the same call may succeed (the server or the pool was
    /// unreachable; not a bad record or a bad configuration).
    pub fn is_transient(&self) -> bool {
        matches!(self, PostgresError::Pool { .. })
            || matches!(self, PostgresError::Database { source, .. } if source.is_closed() || source.as_db_error().is_none())
    }
}

impl Categorized for PostgresError {
    fn category(&self) -> Option<Category> {
        Some(PostgresError::category(self))
    }
}

/// Maps a driver error of `store`'s `operation`.
pub(crate) fn db(
    store: StoreKind,
    operation: &'static str,
) -> impl Fn(tokio_postgres::Error) -> PostgresError {
    move |source| PostgresError::Database {
        store,
        operation,
        source,
    }
}

/// Maps a pool error of `store`'s `operation`.
pub(crate) fn pool(
    store: StoreKind,
    operation: &'static str,
) -> impl Fn(deadpool_postgres::PoolError) -> PostgresError {
    move |source| PostgresError::Pool {
        store,
        operation,
        source,
    }
}
