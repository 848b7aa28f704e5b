//! # openarmature-postgres
//!
//! Spec: pipeline-utilities §10.13 (backend layering), sessions §5.5 — PostgreSQL
//! backends for the two durable seams, behind the same traits as the SQLite ones:
//!
//! - [`PostgresCheckpointer`] ([`openarmature_graph::checkpoint::Checkpointer`]): a run
//!   checkpointed by worker A resumes on worker B;
//! - [`PostgresSessionStore`] ([`openarmature_graph::session::SessionStore`]): any
//!   replica reads a session's latest state; §8.2 optimistic concurrency is atomic
//!   across processes.
//!
//! Both share one [`PgBackend`] (a connection pool and a schema). The schema is created
//! by versioned migrations this crate ships (`migrations/`), applied on connect, each
//! once, under an advisory lock. Every write is transactional. Errors are
//! [`PostgresError`]s carrying the spec's categories
//! ([`PostgresError::category`]).
//!
//! The [`PostgresCheckpointer`] also stores paused-invocation records (suspension
//! §8.5): a table of their own, listed by signal, claimed by one conditional
//! `UPDATE … RETURNING` so that of any number of processes resuming one signal, one
//! wins.
//!
//! ## Why tokio-postgres and deadpool
//!
//! The driver is `tokio-postgres` with a `deadpool-postgres` pool rather than `sqlx`:
//! the workspace already runs on tokio, the two crates add about a third of sqlx's
//! dependency tree, need no compile-time query checking or database at build time
//! (sqlx without its macros gives none of its main benefit), and expose the prepared
//! statement cache and transactions directly. The crate is opt-in: a program that
//! wants only SQLite never compiles a PostgreSQL driver.
//!
//! ```no_run
//! use std::sync::Arc;
//! use openarmature_postgres::{PgBackend, PgConfig};
//! # async fn demo() -> Result<(), openarmature_postgres::PostgresError> {
//! let backend = PgBackend::connect(
//!     PgConfig::new("postgres://app@db.internal/app").schema("openarmature"),
//! )
//! .await?;
//! let checkpointer = Arc::new(backend.checkpointer());
//! let sessions = Arc::new(backend.session_store());
//! // GraphBuilder::new(..).checkpointer(checkpointer).sessions(SessionConfig::new(sessions))
//! # let _ = (checkpointer, sessions); Ok(())
//! # }
//! ```

mod backend;
mod checkpoint;
mod checkpoint_rows;
mod error;
mod migrate;
mod paused;
mod session;

pub use backend::{PgBackend, PgConfig};
pub use checkpoint::PostgresCheckpointer;
pub use error::{PostgresError, StoreKind, CHECKPOINT_BACKEND_UNAVAILABLE};
pub use session::PostgresSessionStore;

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
