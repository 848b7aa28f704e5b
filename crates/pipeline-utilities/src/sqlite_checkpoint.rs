//! Spec: pipeline-utilities §10.1 / §10.3.1 / §10.13 — the SQLite reference
//! Checkpointer.
//!
//! One row per invocation, upserted on every save (the latest record wins; its
//! completed positions and fan-out instances in tables of their own, written
//! incrementally: `sqlite_positions`, `sqlite_instances`), in a
//! database in WAL mode: a record is durable across process crashes once `save`
//! returns. Records are stored as JSON (the cross-language portable shape), so state
//! migrations (§10.12) work against this backend. SQLite calls run on tokio's blocking
//! pool, never on the caller's worker thread.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    join_instances, split_instances, CheckpointFilter, CheckpointRecord, CheckpointSummary,
    Checkpointer,
};
use openarmature_graph::suspension::PausedRecord;
use openarmature_graph::BoxError;
use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite_db::{from_ns, immediate, to_ns, SqliteDb};

const CHECKPOINTS: &str = "CREATE TABLE IF NOT EXISTS openarmature_checkpoints (
    invocation_id TEXT PRIMARY KEY,
    correlation_id TEXT NOT NULL,
    last_saved_at_ns INTEGER NOT NULL,
    completed_node_count INTEGER NOT NULL,
    record TEXT NOT NULL
);";

fn schema() -> String {
    format!(
        "{CHECKPOINTS}\n{}\n{}\n{}",
        crate::sqlite_positions::SCHEMA,
        crate::sqlite_instances::SCHEMA,
        crate::sqlite_paused::SCHEMA
    )
}

/// Why the SQLite checkpointer failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteCheckpointError {
    /// The database could not be opened or prepared.
    #[error("cannot open checkpoint database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A statement failed (disk full, locked past the busy timeout, I/O error, …).
    #[error("checkpoint database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A record could not be encoded as JSON.
    #[error("cannot encode the checkpoint record of {invocation_id}: {source}")]
    Encode {
        /// The invocation.
        invocation_id: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored record is not a valid checkpoint record (corrupt or foreign row).
    #[error("the stored checkpoint record of {invocation_id} is unreadable: {source}")]
    Decode {
        /// The invocation.
        invocation_id: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The blocking task running the statement was cancelled or panicked.
    #[error("the checkpoint database task did not finish: {0}")]
    Task(String),
}

impl SqliteCheckpointError {
    /// `checkpoint_backend_unavailable` for database and task failures,
    /// `checkpoint_record_invalid` for records that do not encode or decode.
    pub fn category(&self) -> &'static str {
        match self {
            SqliteCheckpointError::Encode { .. } | SqliteCheckpointError::Decode { .. } => {
                "checkpoint_record_invalid"
            }
            _ => "checkpoint_backend_unavailable",
        }
    }
}

/// The SQLite reference Checkpointer: durable, single host. Cheap to clone (clones
/// share the connection).
#[derive(Debug, Clone)]
pub struct SqliteCheckpointer {
    db: SqliteDb,
}

impl SqliteCheckpointer {
    /// Opens (creating if needed) the database at `path`, in WAL mode with a 5 s busy
    /// timeout, and creates the checkpoint table.
    ///
    /// # Errors
    /// [`SqliteCheckpointError::Open`] when the file cannot be opened or prepared.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SqliteCheckpointError> {
        let path = path.as_ref();
        let db = SqliteDb::open(path, &schema()).map_err(|source| SqliteCheckpointError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(SqliteCheckpointer { db })
    }

    /// A private in-memory database (not durable; for tests).
    ///
    /// # Errors
    /// [`SqliteCheckpointError::Open`] if SQLite cannot allocate it.
    pub fn in_memory() -> Result<Self, SqliteCheckpointError> {
        let db = SqliteDb::in_memory(&schema()).map_err(|source| SqliteCheckpointError::Open {
            path: PathBuf::from(":memory:"),
            source,
        })?;
        Ok(SqliteCheckpointer { db })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// Runs `f` on the connection on tokio's blocking pool.
    async fn run<R, F>(&self, f: F) -> Result<R, SqliteCheckpointError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, SqliteCheckpointError> + Send + 'static,
    {
        self.db
            .run(move |conn| f(conn))
            .await
            .map_err(SqliteCheckpointError::Task)?
    }

    /// [`SqliteCheckpointer::run`] with the connection mutable (for transactions).
    async fn run_mut<R, F>(&self, f: F) -> Result<R, SqliteCheckpointError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, SqliteCheckpointError> + Send + 'static,
    {
        self.db.run(f).await.map_err(SqliteCheckpointError::Task)?
    }
}

fn boxed<T>(r: Result<T, SqliteCheckpointError>) -> Result<T, BoxError> {
    r.map_err(|e| Box::new(e) as BoxError)
}

impl Checkpointer for SqliteCheckpointer {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move {
            boxed(
                self.run(move |conn| {
                    let mut record = record;
                    // The positions go to their own table (only the new ones); the row
                    // keeps the rest of the snapshot.
                    let positions = std::mem::take(&mut record.completed_positions);
                    // So do the fan-out instances (only the changed ones).
                    let instances = split_instances(&mut record);
                    let text = serde_json::to_string(&record).map_err(|source| {
                        SqliteCheckpointError::Encode {
                            invocation_id: id.clone(),
                            source,
                        }
                    })?;
                    immediate(conn, |tx| {
                        crate::sqlite_positions::store(tx, &id, &positions)?;
                        crate::sqlite_instances::store(tx, &id, &instances)?;
                        tx.prepare_cached(
                            "INSERT INTO openarmature_checkpoints
                           (invocation_id, correlation_id, last_saved_at_ns,
                            completed_node_count, record)
                         VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT(invocation_id) DO UPDATE SET
                           correlation_id = excluded.correlation_id,
                           last_saved_at_ns = excluded.last_saved_at_ns,
                           completed_node_count = excluded.completed_node_count,
                           record = excluded.record",
                        )?
                        .execute(params![
                            id,
                            record.correlation_id,
                            to_ns(record.last_saved_at),
                            i64::try_from(positions.len()).unwrap_or(i64::MAX),
                            text
                        ])?;
                        Ok(())
                    })
                })
                .await,
            )
        })
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move {
            boxed(
                self.run(move |conn| {
                    let text: Option<String> = conn
                        .query_row(
                            "SELECT record FROM openarmature_checkpoints WHERE invocation_id = ?1",
                            params![id],
                            |row| row.get(0),
                        )
                        .optional()?;
                    let Some(text) = text else {
                        return Ok(None);
                    };
                    let mut record: CheckpointRecord =
                        serde_json::from_str(&text).map_err(|source| {
                            SqliteCheckpointError::Decode {
                                invocation_id: id.clone(),
                                source,
                            }
                        })?;
                    if let Some(positions) = crate::sqlite_positions::load(conn, &id)? {
                        record.completed_positions = positions;
                    }
                    let rows = crate::sqlite_instances::load(conn, &id)?;
                    join_instances(&mut record, rows).map_err(|reason| {
                        SqliteCheckpointError::Decode {
                            invocation_id: id.clone(),
                            source: serde::de::Error::custom(reason),
                        }
                    })?;
                    Ok(Some(record))
                })
                .await,
            )
        })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        Box::pin(async move {
            let all = boxed(
                self.run(|conn| {
                    let mut stmt = conn.prepare(
                        "SELECT invocation_id, correlation_id, last_saved_at_ns,
                                completed_node_count
                         FROM openarmature_checkpoints ORDER BY last_saved_at_ns",
                    )?;
                    let rows = stmt.query_map([], |row| {
                        Ok(CheckpointSummary::new(
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            from_ns(row.get(2)?),
                            usize::try_from(row.get::<_, i64>(3)?).unwrap_or(0),
                        ))
                    })?;
                    Ok(rows.collect::<Result<Vec<_>, _>>()?)
                })
                .await,
            )?;
            Ok(all
                .into_iter()
                .filter(|s| filter.is_none_or(|f| f.matches(s)))
                .collect())
        })
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move {
            boxed(
                self.run(move |conn| {
                    conn.execute(
                        "DELETE FROM openarmature_checkpoints WHERE invocation_id = ?1",
                        params![id],
                    )?;
                    crate::sqlite_positions::delete(conn, &id)?;
                    crate::sqlite_instances::delete_key(conn, &id, None)
                })
                .await,
            )
        })
    }

    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            boxed(
                self.run(move |c| crate::sqlite_paused::save(c, &record))
                    .await,
            )
        })
    }

    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move { boxed(self.run(move |c| crate::sqlite_paused::load(c, &id)).await) })
    }

    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move {
            boxed(
                self.run_mut(move |c| crate::sqlite_paused::claim(c, &id))
                    .await,
            )
        })
    }

    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        let signal = signal_id.map(str::to_owned);
        Box::pin(async move {
            boxed(
                self.run(move |c| crate::sqlite_paused::list(c, signal.as_deref()))
                    .await,
            )
        })
    }

    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        Box::pin(async move {
            boxed(
                self.run(move |c| crate::sqlite_paused::delete(c, &id))
                    .await,
            )
        })
    }
}
