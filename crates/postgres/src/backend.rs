//! Spec: pipeline-utilities §10.13, sessions §5.5 — the connection pool both stores
//! share, its configuration, and the schema the crate's migrations create.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::error::{pool, PostgresError, StoreKind};
use crate::migrate;
use crate::{PostgresCheckpointer, PostgresSessionStore};

/// How to reach the database and where the tables live.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PgConfig {
    /// A libpq-style URL (`postgres://user:pass@host:port/db`) or key=value string.
    pub url: String,
    /// The schema the tables live in (default `public`); created when missing. One
    /// schema per application (or tenant, or test) keeps their rows apart.
    pub schema: String,
    /// The most connections the pool opens (default 16).
    pub max_connections: usize,
    /// How long a call waits for a free connection, and how long opening one may
    /// take (default 5 s); past it the call fails with a typed pool error.
    pub timeout: Duration,
}

impl PgConfig {
    /// The defaults for `url`.
    pub fn new(url: impl Into<String>) -> Self {
        PgConfig {
            url: url.into(),
            schema: "public".to_owned(),
            max_connections: 16,
            timeout: Duration::from_secs(5),
        }
    }

    /// Puts the tables in `schema` (a plain identifier: `[a-z_][a-z0-9_]*`, at most 63
    /// bytes).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Caps the pool at `n` connections.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Sets the wait / connect timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A checked schema name (safe to splice into SQL).
pub(crate) fn checked_schema(schema: &str) -> Result<String, PostgresError> {
    let mut chars = schema.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && schema.len() <= 63 {
        Ok(schema.to_owned())
    } else {
        Err(PostgresError::InvalidConfig {
            reason: format!(
                "schema `{schema}` is not a plain identifier ([a-z_][a-z0-9_]*, at most 63 bytes)"
            ),
        })
    }
}

/// The pool and the migrated schema both stores use. Cheap to clone (clones share
/// the pool).
///
/// Connections are tasks on the tokio runtime that opened them: create the backend
/// on the runtime that will use it.
#[derive(Clone)]
pub struct PgBackend {
    pool: Pool,
    schema: String,
}

impl std::fmt::Debug for PgBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBackend")
            .field("schema", &self.schema)
            .field("pool", &self.pool.status())
            .finish()
    }
}

impl PgBackend {
    /// Opens the pool and brings the schema up to date (creating it when missing).
    /// Concurrent processes may connect at once: migrations run under a
    /// transaction-scoped advisory lock, each exactly once.
    ///
    /// # Errors
    /// [`PostgresError::InvalidConfig`] for a bad URL or schema name,
    /// [`PostgresError::Pool`] when the server cannot be reached,
    /// [`PostgresError::Migration`] / [`PostgresError::SchemaTooNew`] from migrating.
    pub async fn connect(config: PgConfig) -> Result<Self, PostgresError> {
        let schema = checked_schema(&config.schema)?;
        let mut pg: tokio_postgres::Config =
            config.url.parse().map_err(|e: tokio_postgres::Error| {
                PostgresError::InvalidConfig {
                    reason: format!("cannot parse the connection URL: {e}"),
                }
            })?;
        pg.connect_timeout(config.timeout);
        if pg.get_application_name().is_none() {
            pg.application_name("openarmature");
        }
        let manager = Manager::from_config(
            pg,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(config.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(config.timeout))
            .create_timeout(Some(config.timeout))
            .recycle_timeout(Some(config.timeout))
            .build()
            .map_err(|e| PostgresError::InvalidConfig {
                reason: format!("cannot build the connection pool: {e}"),
            })?;
        let backend = PgBackend { pool, schema };
        backend.migrate().await?;
        Ok(backend)
    }

    /// The same pool with the tables in another `schema` (migrated now). Useful for
    /// tenants, and for tests that each want empty tables.
    ///
    /// # Errors
    /// As [`PgBackend::connect`].
    pub async fn with_schema(&self, schema: &str) -> Result<Self, PostgresError> {
        let backend = PgBackend {
            pool: self.pool.clone(),
            schema: checked_schema(schema)?,
        };
        backend.migrate().await?;
        Ok(backend)
    }

    async fn migrate(&self) -> Result<(), PostgresError> {
        let mut client = self
            .pool
            .get()
            .await
            .map_err(pool(StoreKind::Setup, "migrate"))?;
        migrate::run(&mut client, &self.schema).await
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The newest migration this release ships (and every connected schema is at).
    pub fn schema_version(&self) -> i32 {
        migrate::latest()
    }

    /// The pool (for health checks and metrics).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// A Checkpointer on this pool.
    pub fn checkpointer(&self) -> PostgresCheckpointer {
        PostgresCheckpointer::new(self.clone())
    }

    /// A SessionStore on this pool.
    pub fn session_store(&self) -> PostgresSessionStore {
        PostgresSessionStore::new(self.clone())
    }

    /// `table` qualified with the schema.
    pub(crate) fn table(&self, table: &str) -> String {
        format!("{}.{table}", self.schema)
    }

    /// A connection of `store` for `operation`.
    pub(crate) async fn client(
        &self,
        store: StoreKind,
        operation: &'static str,
    ) -> Result<deadpool_postgres::Object, PostgresError> {
        self.pool.get().await.map_err(pool(store, operation))
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

/// The upsert of one row of `table`: inserts `key` then `values` as `$1…$n` and, when a
/// row with that `key` exists, overwrites each of `values` with the new one.
pub(crate) fn upsert_sql(table: &str, key: &[&str], values: &[&str]) -> String {
    let columns: Vec<&str> = key.iter().chain(values).copied().collect();
    let placeholders: Vec<String> = (1..=columns.len()).map(|n| format!("${n}")).collect();
    let updates: Vec<String> = values
        .iter()
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT ({}) DO UPDATE SET {}",
        columns.join(", "),
        placeholders.join(", "),
        key.join(", "),
        updates.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::upsert_sql;

    #[test]
    fn upsert_sql_inserts_every_column_and_overwrites_the_values() {
        assert_eq!(
            upsert_sql("s.t", &["a", "b"], &["c", "d"]),
            "INSERT INTO s.t (a, b, c, d) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (a, b) DO UPDATE SET c = excluded.c, d = excluded.d"
        );
    }
}
