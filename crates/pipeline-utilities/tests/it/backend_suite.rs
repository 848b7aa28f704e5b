//! pipeline-utilities §10.1 / sessions §5: the SQLite backends pass the shared backend
//! suite (`openarmature-testkit`), the same cases the PostgreSQL backends pass.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::session::SessionStore;
use openarmature_pipeline::{SqliteCheckpointer, SqliteSessionStore};
use openarmature_testkit::suite::{
    run_checkpointer_suite, run_paused_suite, run_session_suite, Backend,
};

/// One database file per storage name, under the system temp dir.
struct SqliteFiles {
    dir: PathBuf,
}

impl SqliteFiles {
    fn new() -> Arc<Self> {
        Arc::new(SqliteFiles {
            dir: std::env::temp_dir(),
        })
    }

    fn path(&self, storage: &str) -> PathBuf {
        self.dir.join(format!("{storage}.db"))
    }
}

impl Backend for SqliteFiles {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn checkpointer<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn Checkpointer>> {
        Box::pin(async move {
            Arc::new(SqliteCheckpointer::open(self.path(storage)).unwrap()) as Arc<dyn Checkpointer>
        })
    }

    fn session_store<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn SessionStore>> {
        Box::pin(async move {
            Arc::new(SqliteSessionStore::open(self.path(storage)).unwrap()) as Arc<dyn SessionStore>
        })
    }

    fn remove<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = self.path(storage).into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_checkpointer_passes_the_backend_suite() {
    assert!(run_checkpointer_suite(SqliteFiles::new()).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_session_store_passes_the_backend_suite() {
    assert!(run_session_suite(SqliteFiles::new()).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_paused_records_pass_the_backend_suite() {
    assert!(run_paused_suite(SqliteFiles::new()).await > 0);
}
