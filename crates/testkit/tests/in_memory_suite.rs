//! The engine's in-memory backends pass the shared backend suite: the reference the
//! durable backends (SQLite, PostgreSQL) are held to. A storage name is one shared
//! in-memory store (clones share their maps), so "reopening" sees the same data.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{Checkpointer, InMemoryCheckpointer};
use openarmature_graph::session::{InMemorySessionStore, SessionStore};
use openarmature_testkit::suite::{
    run_checkpointer_suite, run_paused_suite, run_session_suite, Backend,
};

#[derive(Default)]
struct InMemory {
    checkpoints: Mutex<HashMap<String, InMemoryCheckpointer>>,
    sessions: Mutex<HashMap<String, InMemorySessionStore>>,
}

impl Backend for InMemory {
    fn name(&self) -> &str {
        "in_memory"
    }

    fn checkpointer<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn Checkpointer>> {
        let store = self
            .checkpoints
            .lock()
            .unwrap()
            .entry(storage.to_owned())
            .or_default()
            .clone();
        Box::pin(async move { Arc::new(store) as Arc<dyn Checkpointer> })
    }

    fn session_store<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn SessionStore>> {
        let store = self
            .sessions
            .lock()
            .unwrap()
            .entry(storage.to_owned())
            .or_default()
            .clone();
        Box::pin(async move { Arc::new(store) as Arc<dyn SessionStore> })
    }

    fn remove<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, ()> {
        self.checkpoints.lock().unwrap().remove(storage);
        self.sessions.lock().unwrap().remove(storage);
        Box::pin(async {})
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_checkpointer_passes_the_backend_suite() {
    assert!(run_checkpointer_suite(Arc::new(InMemory::default())).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_session_store_passes_the_backend_suite() {
    assert!(run_session_suite(Arc::new(InMemory::default())).await > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_paused_records_pass_the_backend_suite() {
    assert!(run_paused_suite(Arc::new(InMemory::default())).await > 0);
}
