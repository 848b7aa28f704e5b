//! Spec: sessions §5 (SessionStore protocol), §5.5 (the embedded-database reference
//! backend), §8.2 (optimistic concurrency) — the SQLite SessionStore.
//!
//! One row per session in a database in WAL mode: a session is durable across process
//! restarts once `save` returns. The state is stored as JSON (the form §7 migrations
//! run on) beside indexed metadata columns, so `list` never reads states. A save runs
//! its expected-version check and its write in one immediate transaction. SQLite calls
//! run on tokio's blocking pool, never on the caller's worker thread.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::future::BoxFuture;
use openarmature_graph::session::{
    check_expected_version, SessionError, SessionFilter, SessionRecord, SessionStore,
    SessionSummary,
};
use openarmature_graph::BoxError;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::sqlite_db::{from_ns, to_ns, SqliteDb};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS openarmature_sessions (
    session_id TEXT PRIMARY KEY,
    schema_version TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at_ns INTEGER NOT NULL,
    updated_at_ns INTEGER NOT NULL,
    state TEXT NOT NULL
)";

/// Why the SQLite session store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteSessionError {
    /// The database could not be opened or prepared.
    #[error("cannot open session database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A statement failed (disk full, locked past the busy timeout, I/O error, …).
    #[error("session database error during {operation}: {source}")]
    Database {
        /// `load`, `save`, `delete` or `list`.
        operation: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A session state could not be encoded as JSON.
    #[error("cannot encode the state of session {session_id}: {source}")]
    Encode {
        /// The session.
        session_id: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored state is not valid JSON (corrupt or foreign row).
    #[error("the stored state of session {session_id} is unreadable: {source}")]
    Decode {
        /// The session.
        session_id: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The blocking task running the statement was cancelled or panicked.
    #[error("the session database task for {operation} did not finish: {message}")]
    Task {
        /// `load`, `save`, `delete` or `list`.
        operation: &'static str,
        /// The join error.
        message: String,
    },
}

impl SqliteSessionError {
    /// The sessions §10 category the failure surfaces as: `session_save_failed` for a
    /// failed save (or an unencodable state), `session_load_failed` otherwise.
    pub fn category(&self) -> &'static str {
        match self {
            SqliteSessionError::Encode { .. } => "session_save_failed",
            SqliteSessionError::Database { operation, .. }
            | SqliteSessionError::Task { operation, .. }
                if *operation == "save" =>
            {
                "session_save_failed"
            }
            _ => "session_load_failed",
        }
    }
}

/// The SQLite reference SessionStore: durable, single host. Cheap to clone (clones
/// share the connection).
#[derive(Debug, Clone)]
pub struct SqliteSessionStore {
    db: SqliteDb,
}

impl SqliteSessionStore {
    /// Opens (creating if needed) the database at `path`, in WAL mode with a 5 s busy
    /// timeout, and creates the session table. The file may be shared with a
    /// [`crate::SqliteCheckpointer`] (different tables).
    ///
    /// # Errors
    /// [`SqliteSessionError::Open`] when the file cannot be opened or prepared.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SqliteSessionError> {
        let path = path.as_ref();
        let db = SqliteDb::open(path, SCHEMA).map_err(|source| SqliteSessionError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(SqliteSessionStore { db })
    }

    /// A private in-memory database (not durable; for tests).
    ///
    /// # Errors
    /// [`SqliteSessionError::Open`] if SQLite cannot allocate it.
    pub fn in_memory() -> Result<Self, SqliteSessionError> {
        let db = SqliteDb::in_memory(SCHEMA).map_err(|source| SqliteSessionError::Open {
            path: PathBuf::from(":memory:"),
            source,
        })?;
        Ok(SqliteSessionStore { db })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// Runs `f` on the connection on tokio's blocking pool.
    async fn run<R, F>(&self, operation: &'static str, f: F) -> Result<R, BoxError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, BoxError> + Send + 'static,
    {
        self.db.run(f).await.map_err(|message| {
            Box::new(SqliteSessionError::Task { operation, message }) as BoxError
        })?
    }
}

fn db(operation: &'static str) -> impl Fn(rusqlite::Error) -> BoxError {
    move |source| Box::new(SqliteSessionError::Database { operation, source })
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl SessionStore for SqliteSessionStore {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        let id = session_id.to_owned();
        Box::pin(self.run("load", move |conn| {
            let row = conn
                .query_row(
                    "SELECT schema_version, version, created_at_ns, updated_at_ns, state
                     FROM openarmature_sessions WHERE session_id = ?1",
                    params![id],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, i64>(3)?,
                            r.get::<_, String>(4)?,
                        ))
                    },
                )
                .optional()
                .map_err(db("load"))?;
            let Some((schema_version, version, created, updated, text)) = row else {
                return Ok(None);
            };
            let state = serde_json::from_str(&text).map_err(|source| {
                Box::new(SqliteSessionError::Decode {
                    session_id: id.clone(),
                    source,
                }) as BoxError
            })?;
            let mut record = SessionRecord::new(id, schema_version, state);
            record.version = to_u64(version);
            record.created_at = from_ns(created);
            record.updated_at = from_ns(updated);
            Ok(Some(record))
        }))
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        let id = session_id.to_owned();
        Box::pin(self.run("save", move |conn| {
            let text = serde_json::to_string(&record.state).map_err(|source| {
                Box::new(SqliteSessionError::Encode {
                    session_id: id.clone(),
                    source,
                }) as BoxError
            })?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db("save"))?;
            let current: Option<i64> = tx
                .query_row(
                    "SELECT version FROM openarmature_sessions WHERE session_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db("save"))?;
            let current = current.map(to_u64);
            check_expected_version(&id, current, expected_version)
                .map_err(|e: SessionError| Box::new(e) as BoxError)?;
            let version = current.unwrap_or(0).saturating_add(1);
            let now = to_ns(SystemTime::now());
            tx.execute(
                "INSERT INTO openarmature_sessions
                   (session_id, schema_version, version, created_at_ns, updated_at_ns, state)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)
                 ON CONFLICT(session_id) DO UPDATE SET
                   schema_version = excluded.schema_version,
                   version = excluded.version,
                   updated_at_ns = excluded.updated_at_ns,
                   state = excluded.state",
                params![id, record.schema_version, to_i64(version), now, text],
            )
            .map_err(db("save"))?;
            tx.commit().map_err(db("save"))?;
            Ok(version)
        }))
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = session_id.to_owned();
        Box::pin(self.run("delete", move |conn| {
            conn.execute(
                "DELETE FROM openarmature_sessions WHERE session_id = ?1",
                params![id],
            )
            .map_err(db("delete"))?;
            Ok(())
        }))
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        Box::pin(async move {
            let all = self
                .run("list", |conn| {
                    let mut stmt = conn
                        .prepare(
                            "SELECT session_id, schema_version, version, created_at_ns,
                                    updated_at_ns
                             FROM openarmature_sessions ORDER BY updated_at_ns, session_id",
                        )
                        .map_err(db("list"))?;
                    let rows = stmt
                        .query_map([], |r| {
                            let mut rec = SessionRecord::new(
                                r.get::<_, String>(0)?,
                                r.get::<_, String>(1)?,
                                serde_json::Value::Null,
                            );
                            rec.version = to_u64(r.get(2)?);
                            rec.created_at = from_ns(r.get(3)?);
                            rec.updated_at = from_ns(r.get(4)?);
                            Ok(SessionSummary::of(&rec))
                        })
                        .map_err(db("list"))?;
                    rows.collect::<Result<Vec<_>, _>>().map_err(db("list"))
                })
                .await?;
            Ok(all
                .into_iter()
                .filter(|s| filter.is_none_or(|f| f.matches(s)))
                .collect())
        })
    }
}
