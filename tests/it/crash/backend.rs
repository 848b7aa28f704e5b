//! The store a child opens, from the environment the parent gives it, and the
//! parent's checks of it between two children.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature::graph::checkpoint::Checkpointer;
use openarmature::pipeline::SqliteCheckpointer;
use openarmature_postgres::{PgBackend, PgConfig};

use super::inspect;
use super::{BACKEND, SCHEMA, TARGET};

/// The store a child opens: a SQLite file, or a PostgreSQL schema.
#[derive(Clone)]
pub enum Backend {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A schema of a PostgreSQL database.
    Postgres { url: String, schema: String },
}

impl Backend {
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Backend::Sqlite(path) => vec![
                (BACKEND, "sqlite".into()),
                (TARGET, path.display().to_string()),
            ],
            Backend::Postgres { url, schema } => {
                // Named, so the parent can tell when the server is done with a dead child.
                let sep = if url.contains('?') { '&' } else { '?' };
                vec![
                    (BACKEND, "postgres".into()),
                    (TARGET, format!("{url}{sep}application_name={schema}")),
                    (SCHEMA, schema.clone()),
                ]
            }
        }
    }

    /// Waits until the server has finished with every connection of the dead child: a
    /// statement it sent before the SIGKILL still runs (and may commit) after the
    /// client is gone. SQLite has no server: the kill stops every write at once.
    /// Returns whether a statement was still running.
    async fn settle(&self) -> bool {
        let Backend::Postgres { url, schema } = self else {
            return false;
        };
        let backend = PgBackend::connect(PgConfig::new(url).schema(schema))
            .await
            .expect("postgres");
        let client = backend.pool().get().await.expect("a connection");
        let running = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'",
                &[schema],
            )
            .await
            .expect("pg_stat_activity");
        let started = Instant::now();
        loop {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[schema],
                )
                .await
                .expect("pg_stat_activity");
            if row.get::<_, i64>(0) == 0 {
                return running.get::<_, i64>(0) > 0;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the dead child's sessions never ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn open(&self) -> Arc<dyn Checkpointer> {
        match self {
            Backend::Sqlite(path) => Arc::new(SqliteCheckpointer::open(path).expect("sqlite")),
            Backend::Postgres { url, schema } => Arc::new(
                PgBackend::connect(PgConfig::new(url).schema(schema))
                    .await
                    .expect("postgres")
                    .checkpointer(),
            ),
        }
    }

    /// Checks the store and reads what its latest record marks done.
    pub async fn inspect(&self, correlation: &str) -> (inspect::Snapshot, bool) {
        let lingered = self.settle().await;
        if let Backend::Sqlite(path) = self {
            if path.exists() {
                inspect::sqlite_integrity(path);
            }
        }
        (
            inspect::inspect(&*self.open().await, correlation).await,
            lingered,
        )
    }
}
