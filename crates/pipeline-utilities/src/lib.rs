//! # openarmature-pipeline
//!
//! Spec: pipeline-utilities §2–§6 (OpenArmature specification, pinned release
//! v0.109.0).
//!
//! The canonical middleware for nodes that call flaky providers:
//!
//! - [`RetryMiddleware`] on the shared [`retry::RetryConfig`] record (§6.1): default
//!   transient classifier, full-jitter backoff, injectable sleeper;
//! - [`TimingMiddleware`] (§6.2): monotonic, per-node or per-graph;
//! - [`FailureIsolationMiddleware`] (§6.3): degrade instead of crash, with a
//!   framework event observers can see;
//! - [`classify`] (§6.4): the cause-chain classification all three share.
//!
//! # The three-piece pattern
//!
//! ```text
//! FailureIsolationMiddleware   outer: catches what escapes retry, returns a degraded update
//!   RetryMiddleware            inner: sees raw transients first, retries them
//!     node body                re-raises transients, handles what it knows
//! ```
//!
//! # Two retry lanes
//!
//! Node-level retry (this crate) re-runs the whole node; call-level retry
//! (`openarmature-llm`, same [`retry::RetryConfig`]) re-sends one LLM call without
//! repeating calls that already succeeded. Budgets multiply when stacked (3 node
//! attempts × 5 call attempts = 15 requests per logical call): retry provider
//! transients at the call level and keep node retry for what only a re-run fixes.
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::{state, GraphBuilder, NodeCtx, CategorizedError, END};
//! use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware, retry::{Constant, RetryConfig}};
//!
//! state! {
//!     /// Extraction output.
//!     #[derive(Default)]
//!     pub struct Out => OutUpdate {
//!         /// The result.
//!         pub result: String,
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let graph = GraphBuilder::new(Out::default())
//!     .add_node("extract", |_s: Arc<Out>, _c: NodeCtx| async {
//!         Err::<OutUpdate, _>(CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "down").into())
//!     })
//!     .node_middleware("extract", Arc::new(
//!         FailureIsolationMiddleware::<Out>::new("extract_failed", |_| OutUpdate::default().result("degraded".into())),
//!     ))
//!     .node_middleware("extract", Arc::new(RetryMiddleware::new(
//!         RetryConfig::default().max_attempts(3).backoff(Constant(std::time::Duration::ZERO)),
//!     )))
//!     .add_edge("extract", END)
//!     .entry("extract")
//!     .compile()
//!     .unwrap();
//! assert_eq!(graph.invoke(Out::default()).await.unwrap().result, "degraded");
//! # });
//! ```

mod branches;
pub mod dispatch;
mod fan_out;
mod isolation;
pub mod retry;
#[cfg(feature = "tracing-spans")]
mod spans;
#[cfg(feature = "sqlite")]
mod sqlite_checkpoint;
#[cfg(feature = "sqlite")]
mod sqlite_db;
#[cfg(feature = "sqlite")]
mod sqlite_instances;
#[cfg(feature = "sqlite")]
mod sqlite_paused;
#[cfg(feature = "sqlite")]
mod sqlite_positions;
#[cfg(feature = "sqlite")]
mod sqlite_session;
mod timing;

pub use branches::{
    Branch, BranchFn, BranchWork, CallBranch, ParallelBranchesNode, SubgraphBranch,
};
pub use dispatch::{FanOutDispatcher, InProcessDispatcher};
pub use fan_out::{ErrorPolicy, FanOutNode, OnEmpty, Resolve, StateFn};
pub use isolation::{FailureIsolationMiddleware, OnCaught};
pub use retry::{RetryConfig, RetryMiddleware};
#[cfg(feature = "sqlite")]
pub use sqlite_checkpoint::{SqliteCheckpointError, SqliteCheckpointer};
#[cfg(feature = "sqlite")]
pub use sqlite_session::{SqliteSessionError, SqliteSessionStore};
pub use timing::{MonotonicClock, OnComplete, Outcome, TimingMiddleware, TimingRecord, TokioClock};

/// The §6.4 classification of an error: its cause chain and derived category.
pub use openarmature_graph::CaughtException as Classification;

/// Classifies `error` through its cause chain (pipeline-utilities §6.4): the links
/// outermost first (engine carriers marked), and the derived category and message
/// (the outermost non-carrier link with a category). The same primitive backs
/// [`FailureIsolationMiddleware::catch`], its event, and the retry classifier's
/// carrier rule.
pub fn classify(error: &(dyn std::error::Error + 'static)) -> Classification {
    Classification::capture(error)
}

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "pipeline-utilities";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// `(a, b)` field-name pairs as owned strings (the projection builders' argument form).
pub(crate) fn field_pairs<I, A, B>(pairs: I) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (A, B)>,
    A: Into<String>,
    B: Into<String>,
{
    pairs
        .into_iter()
        .map(|(a, b)| (a.into(), b.into()))
        .collect()
}

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
