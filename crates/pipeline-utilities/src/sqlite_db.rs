//! Spec: pipeline-utilities §10.13 / sessions §5.5 — the embedded-database plumbing
//! the SQLite Checkpointer and the SQLite SessionStore share: one connection in WAL
//! mode (5 s busy timeout, `synchronous = NORMAL`: durable across process crashes),
//! the table created on open, statements run on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

/// One shared connection and the file it opened. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct SqliteDb {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl SqliteDb {
    /// Opens (creating if needed) the database at `path` and runs `schema`.
    pub(crate) fn open(path: &Path, schema: &str) -> Result<Self, rusqlite::Error> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(schema)?;
        Ok(Self::wrap(conn, path.to_path_buf()))
    }

    /// A private in-memory database with `schema` (not durable; for tests).
    pub(crate) fn in_memory(schema: &str) -> Result<Self, rusqlite::Error> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(schema)?;
        Ok(Self::wrap(conn, PathBuf::from(":memory:")))
    }

    fn wrap(conn: Connection, path: PathBuf) -> Self {
        SqliteDb {
            conn: Arc::new(Mutex::new(conn)),
            path,
        }
    }

    /// The database file (`:memory:` for a private one).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection on tokio's blocking pool; `Err` carries the join
    /// error's text when the task was cancelled or panicked.
    pub(crate) async fn run<R, F>(&self, f: F) -> Result<R, String>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> R + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        .map_err(|e| e.to_string())
    }
}

/// Nanoseconds since the Unix epoch (0 before it, saturating).
pub(crate) fn to_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The time `ns` nanoseconds after the Unix epoch (negative: the epoch).
pub(crate) fn from_ns(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// Runs `f` inside `BEGIN IMMEDIATE` … `COMMIT` (rolled back when `f` fails), with the
/// three statements taken from the connection's statement cache: a save is a handful
/// of statements, and re-preparing them each time was a measurable part of its cost.
pub(crate) fn immediate<R, E>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, E>,
) -> Result<R, E>
where
    E: From<rusqlite::Error>,
{
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    match f(conn) {
        Ok(r) => {
            conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(r)
        }
        Err(e) => {
            // The statement that failed already reported; a failed rollback leaves
            // SQLite to roll back on its own when the connection next begins.
            let _ = conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut s| s.execute([]));
            Err(e)
        }
    }
}
