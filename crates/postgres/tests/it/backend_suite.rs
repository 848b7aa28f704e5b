//! The shared backend suite (`openarmature-testkit`) on a real PostgreSQL: the same
//! cases the SQLite backends pass. Each storage name is a schema; reopening connects
//! a new pool to it (another process would).

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::session::SessionStore;
use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_testkit::suite::{
    run_checkpointer_suite, run_paused_suite, run_session_suite, Backend,
};

pub struct PgSchemas {
    url: String,
}

impl PgSchemas {
    pub fn new(url: String) -> Arc<Self> {
        Arc::new(PgSchemas { url })
    }

    async fn open(&self, storage: &str) -> PgBackend {
        PgBackend::connect(PgConfig::new(&self.url).schema(storage).max_connections(4))
            .await
            .unwrap()
    }
}

impl Backend for PgSchemas {
    fn name(&self) -> &str {
        "postgres"
    }

    fn checkpointer<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn Checkpointer>> {
        Box::pin(async move { Arc::new(self.open(storage).await.checkpointer()) as _ })
    }

    fn session_store<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn SessionStore>> {
        Box::pin(async move { Arc::new(self.open(storage).await.session_store()) as _ })
    }

    fn remove<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let backend = self.open("public").await;
            let client = backend.pool().get().await.unwrap();
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {storage} CASCADE"))
                .await
                .unwrap();
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_checkpointer_passes_the_backend_suite() {
    let Some(url) = crate::server("postgres_checkpointer_passes_the_backend_suite") else {
        return;
    };
    assert!(run_checkpointer_suite(PgSchemas::new(url)).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_session_store_passes_the_backend_suite() {
    let Some(url) = crate::server("postgres_session_store_passes_the_backend_suite") else {
        return;
    };
    assert!(run_session_suite(PgSchemas::new(url)).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_paused_records_pass_the_backend_suite() {
    let Some(url) = crate::server("postgres_paused_records_pass_the_backend_suite") else {
        return;
    };
    assert!(run_paused_suite(PgSchemas::new(url)).await > 0);
}
