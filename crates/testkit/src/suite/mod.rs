//! One behaviour suite for every durable backend: each case takes a [`Backend`] (a
//! factory that opens stores on named storage) and asserts the protocol's behaviour;
//! [`run_checkpointer_suite`] / [`run_session_suite`] / [`run_paused_suite`] run every
//! case and fail with the names of those that failed.
//!
//! ```text
//! #[tokio::test(flavor = "multi_thread")]
//! async fn sqlite_backend_suite() {
//!     openarmature_testkit::suite::run_checkpointer_suite(&SqliteFiles::new()).await;
//! }
//! ```

mod checkpoint;
mod checkpoint_wide;
mod paused;
mod session;

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::session::SessionStore;

pub use checkpoint::CHECKPOINT_CASES;
pub use paused::{CLAIMERS, PAUSED_CASES};
pub use session::SESSION_CASES;

/// Opens stores of one backend on named storage. Two stores opened on the same name
/// see the same data (a restarted process, another worker); different names are
/// independent and start empty.
pub trait Backend: Send + Sync {
    /// The backend's name, for messages.
    fn name(&self) -> &str;

    /// A Checkpointer on `storage` (`[a-z0-9_]` name; a file, a schema, …). The paused
    /// cases open several at once on one storage name, as separate workers would.
    fn checkpointer<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn Checkpointer>>;

    /// A SessionStore on `storage`.
    fn session_store<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, Arc<dyn SessionStore>>;

    /// Removes `storage` after a case (default: nothing).
    fn remove<'a>(&'a self, storage: &'a str) -> BoxFuture<'a, ()> {
        let _ = storage;
        Box::pin(async {})
    }
}

/// One case: a name and the body, given the backend and fresh storage names.
pub type Case = (
    &'static str,
    for<'a> fn(&'a dyn Backend, &'a str) -> BoxFuture<'a, ()>,
);

/// Runs `cases` on `backend` one after the other, each on fresh storage; prints one
/// line per case and panics listing the failures. Returns how many passed.
///
/// Needs a multi-thread tokio runtime (each case runs in its own task so a failing
/// assertion is caught and named).
pub async fn run_cases(backend: Arc<dyn Backend>, suite: &str, cases: &[Case]) -> usize {
    let mut failed = Vec::new();
    for (name, body) in cases.iter().copied() {
        let storage = crate::services::unique_name("oa_suite");
        let b = Arc::clone(&backend);
        let s = storage.clone();
        let outcome = tokio::spawn(async move { body(&*b, &s).await }).await;
        backend.remove(&storage).await;
        match outcome {
            Ok(()) => eprintln!("{suite} [{}] {name} ... ok", backend.name()),
            Err(e) => {
                eprintln!("{suite} [{}] {name} ... FAILED: {e}", backend.name());
                failed.push(name);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{suite} on {}: {} of {} cases failed: {failed:?}",
        backend.name(),
        failed.len(),
        cases.len()
    );
    eprintln!(
        "{suite} [{}]: {} passed, 0 failed",
        backend.name(),
        cases.len()
    );
    cases.len()
}

/// Every Checkpointer case on `backend`.
pub async fn run_checkpointer_suite(backend: Arc<dyn Backend>) -> usize {
    run_cases(backend, "checkpointer suite", CHECKPOINT_CASES).await
}

/// Every SessionStore case on `backend`.
pub async fn run_session_suite(backend: Arc<dyn Backend>) -> usize {
    run_cases(backend, "session store suite", SESSION_CASES).await
}

/// Every paused-invocation record case (the Checkpointer's `*_paused` methods) on
/// `backend`.
pub async fn run_paused_suite(backend: Arc<dyn Backend>) -> usize {
    run_cases(backend, "paused record suite", PAUSED_CASES).await
}
