//! Spec: pipeline-utilities §10 (checkpointing): the Checkpointer seam the engine saves
//! through at every `completed` event and resumes from, the record shape, the
//! in-memory reference backend, state migrations and the §10.10 error categories.
//!
//! Nodes must be idempotent under re-execution (§10.5): a node that was running when
//! the process stopped runs again on resume.
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::checkpoint::InMemoryCheckpointer;
//! use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
//!
//! state! {
//!     /// Pages fetched so far.
//!     #[derive(Default)]
//!     pub struct Crawl => CrawlUpdate {
//!         /// One entry per completed step.
//!         pub pages: Vec<String> => append,
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let store = InMemoryCheckpointer::new();
//! let graph = GraphBuilder::new(Crawl::default())
//!     .add_node("fetch", |_s: Arc<Crawl>, _c: NodeCtx| async {
//!         Ok(CrawlUpdate::default().pages(vec!["home".into()]))
//!     })
//!     .add_edge("fetch", END)
//!     .entry("fetch")
//!     .checkpointer(Arc::new(store.clone()))
//!     .schema_version("1")
//!     .compile()
//!     .unwrap();
//! let first = graph.invoke_with(Crawl::default(), InvokeOptions::default()).await.unwrap();
//!
//! // Later (e.g. after a crash): resume from the latest record. Completed nodes are
//! // not re-run; here the run had finished, so resuming only restores the state.
//! let resumed = graph
//!     .invoke_with(
//!         Crawl::default(),
//!         InvokeOptions::default().resume_invocation(&first.invocation_id),
//!     )
//!     .await
//!     .unwrap();
//! assert_eq!(resumed.state.pages, ["home"]);
//! assert_ne!(resumed.invocation_id, first.invocation_id);
//! # }
//! ```

mod delta;
pub(crate) mod engine;
mod fan_out;
mod instances;
mod memory;
mod migration;
mod positions;
mod record;
pub(crate) mod runtime;

pub(crate) use fan_out::{instance_of, lineage};

pub use delta::{join_instances, split_instances, FanOutWrite, PositionsWrite, SplitInstances};
pub use fan_out::{FanOutTracker, SavedContribution};
pub use instances::{Instances, InstancesVersion, Iter as InstancesIter};
pub use memory::InMemoryCheckpointer;
pub use migration::{MigrationFn, MigrationRegistry, StateMigration};
pub use positions::Positions;
pub use record::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer, FanOutProgress,
    InstanceProgress, InstanceState, LineageEntry, NodePosition,
};

use crate::BoxError;

/// The schema version of a graph that declares none (pipeline-utilities §10.2 leaves the
/// sentinel to the implementation). Declare a real one with
/// [`crate::GraphBuilder::schema_version`] before evolving the state, and register a
/// migration from this sentinel for records saved before.
pub const UNVERSIONED: &str = "unversioned";

/// A checkpointing failure (§10.10). Every variant is non-transient.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// `resume_invocation` named an invocation with no record (or no Checkpointer is
    /// registered).
    #[error("checkpoint_not_found: no checkpoint for invocation `{invocation_id}`")]
    NotFound {
        /// The invocation asked for.
        invocation_id: String,
    },
    /// The Checkpointer's `save` raised; the invocation stops (raised to the caller).
    #[error("checkpoint_save_failed: {source}")]
    SaveFailed {
        /// The backend's error.
        source: BoxError,
    },
    /// The loaded record does not fit the current graph.
    #[error("checkpoint_record_invalid: {description}")]
    RecordInvalid {
        /// What does not fit.
        description: String,
    },
    /// No registered chain bridges the record's version to the declared one.
    #[error("checkpoint_state_migration_missing: no migration chain from `{from_version}` to `{to_version}` ({registered_migrations_count} registered: {registry_description})")]
    MigrationMissing {
        /// The record's `schema_version`.
        from_version: String,
        /// The declared `schema_version`.
        to_version: String,
        /// How many migrations are registered.
        registered_migrations_count: usize,
        /// The registered set.
        registry_description: String,
    },
    /// A migration raised while the chain was applied.
    #[error("checkpoint_state_migration_failed: migration `{from_version}` -> `{to_version}` raised: {source}")]
    MigrationFailed {
        /// The failing migration's input version.
        from_version: String,
        /// The failing migration's output version.
        to_version: String,
        /// What it raised.
        source: BoxError,
    },
    /// A duplicate `(from, to)` registration, or several shortest chains.
    #[error("checkpoint_state_migration_chain_ambiguous: {}", ambiguity(.from_version, .to_version))]
    ChainAmbiguous {
        /// The pair's input version, when known.
        from_version: Option<String>,
        /// The pair's output version, when known.
        to_version: Option<String>,
    },
}

fn ambiguity(from: &Option<String>, to: &Option<String>) -> String {
    format!(
        "more than one migration path from `{}` to `{}`",
        from.as_deref().unwrap_or("?"),
        to.as_deref().unwrap_or("?")
    )
}

impl CheckpointError {
    /// The canonical category identifier.
    pub fn category(&self) -> &'static str {
        match self {
            CheckpointError::NotFound { .. } => "checkpoint_not_found",
            CheckpointError::SaveFailed { .. } => "checkpoint_save_failed",
            CheckpointError::RecordInvalid { .. } => "checkpoint_record_invalid",
            CheckpointError::MigrationMissing { .. } => "checkpoint_state_migration_missing",
            CheckpointError::MigrationFailed { .. } => "checkpoint_state_migration_failed",
            CheckpointError::ChainAmbiguous { .. } => "checkpoint_state_migration_chain_ambiguous",
        }
    }

    /// Always `false`: no checkpoint failure is fixed by retrying.
    pub fn is_transient(&self) -> bool {
        false
    }

    /// The §4 runtime category a graph error carrying this failure reports.
    pub fn runtime_category(&self) -> crate::RuntimeCategory {
        use crate::RuntimeCategory as C;
        match self {
            CheckpointError::NotFound { .. } => C::CheckpointNotFound,
            CheckpointError::SaveFailed { .. } => C::CheckpointSaveFailed,
            CheckpointError::MigrationMissing { .. } => C::CheckpointStateMigrationMissing,
            CheckpointError::MigrationFailed { .. } => C::CheckpointStateMigrationFailed,
            // A chain found ambiguous only at load time is still a bad record set up.
            CheckpointError::RecordInvalid { .. } | CheckpointError::ChainAmbiguous { .. } => {
                C::CheckpointRecordInvalid
            }
        }
    }
}

impl crate::Categorized for CheckpointError {
    fn category(&self) -> Option<crate::Category> {
        Some(crate::Category::from_name(CheckpointError::category(self)))
    }
}
