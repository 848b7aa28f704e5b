//! Spec: graph-engine §2 (compile-error categories) and §4 (runtime error semantics).
//!
//! Every error family exposes `category()`: the spec's canonical identifier.

use std::error::Error as StdError;
use std::fmt;

pub use openarmature_core::{
    find_in, BoxError, Categorized, CategorizedError, Category, NodeError,
};

/// Canonical runtime category identifiers (graph-engine §4).
pub mod category {
    /// A node raised.
    pub const NODE_EXCEPTION: &str = "node_exception";
    /// An edge function raised.
    pub const EDGE_EXCEPTION: &str = "edge_exception";
    /// A reducer raised while merging a partial update.
    pub const REDUCER_ERROR: &str = "reducer_error";
    /// A conditional edge returned an undeclared destination.
    pub const ROUTING_ERROR: &str = "routing_error";
    /// State failed schema validation at a boundary.
    pub const STATE_VALIDATION_ERROR: &str = "state_validation_error";
}

/// A compile-time error (graph-engine §2 *Compiled graph*): the graph definition is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// No entry node was declared.
    #[error("no_declared_entry: the graph declares no entry node")]
    NoDeclaredEntry,
    /// A declared node has no path from the entry.
    #[error("unreachable_node: node `{node}` is not reachable from the entry")]
    UnreachableNode {
        /// The unreachable node.
        node: String,
    },
    /// An edge (or the entry) references an undeclared node.
    #[error("dangling_edge: `{from}` references undeclared node `{to}`")]
    DanglingEdge {
        /// The edge's source (or `<entry>`).
        from: String,
        /// The undeclared target.
        to: String,
    },
    /// A node has more than one outgoing edge.
    #[error("multiple_outgoing_edges: node `{node}` has more than one outgoing edge")]
    MultipleOutgoingEdges {
        /// The node.
        node: String,
    },
    /// A state field declares more than one reducer.
    #[error("conflicting_reducers: field `{field}` declares more than one reducer")]
    ConflictingReducers {
        /// The field.
        field: String,
    },
    /// A projection names a field absent from the relevant schema.
    #[error("mapping_references_undeclared_field: node `{node}` maps {side} field `{field}`, which is not declared")]
    MappingReferencesUndeclaredField {
        /// The subgraph-as-node.
        node: String,
        /// `parent` or `subgraph`.
        side: &'static str,
        /// The undeclared field.
        field: String,
    },
    /// A subgraph-as-node declares both same-name sets and explicit maps.
    #[error("conflicting_projection_forms: node `{node}` declares both projects_in/projects_out and inputs/outputs")]
    ConflictingProjectionForms {
        /// The subgraph-as-node.
        node: String,
    },
    /// A reducer factory got invalid parameters (e.g. `bounded_append(max_len=0)`).
    #[error("reducer_configuration_invalid: field `{field}`: {message}")]
    ReducerConfigurationInvalid {
        /// The field (empty when not yet known).
        field: String,
        /// What is invalid.
        message: String,
    },
    /// A node name was declared twice.
    #[error("duplicate_node: node `{node}` is declared more than once")]
    DuplicateNode {
        /// The node.
        node: String,
    },
    /// The registered state migrations are ambiguous (pipeline-utilities §10.12): a
    /// duplicate `(from, to)` pair, or several shortest chains to the declared version.
    #[error("checkpoint_state_migration_chain_ambiguous: more than one migration path from `{}` to `{}`", from_version.as_deref().unwrap_or("?"), to_version.as_deref().unwrap_or("?"))]
    CheckpointStateMigrationChainAmbiguous {
        /// The pair's input version, when known.
        from_version: Option<String>,
        /// The pair's output version, when known.
        to_version: Option<String>,
    },
    /// A category defined by another capability for a node it provides (e.g.
    /// pipeline-utilities `fan_out_field_not_list`, `parallel_branches_no_branches`).
    #[error("{category}: node `{node}`: {message}")]
    Node {
        /// The misconfigured node.
        node: String,
        /// The category identifier.
        category: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl CompileError {
    /// The spec's canonical compile-error category identifier.
    pub fn category(&self) -> &'static str {
        match self {
            CompileError::NoDeclaredEntry => "no_declared_entry",
            CompileError::UnreachableNode { .. } => "unreachable_node",
            CompileError::DanglingEdge { .. } => "dangling_edge",
            CompileError::MultipleOutgoingEdges { .. } => "multiple_outgoing_edges",
            CompileError::ConflictingReducers { .. } => "conflicting_reducers",
            CompileError::MappingReferencesUndeclaredField { .. } => {
                "mapping_references_undeclared_field"
            }
            CompileError::ConflictingProjectionForms { .. } => "conflicting_projection_forms",
            CompileError::ReducerConfigurationInvalid { .. } => "reducer_configuration_invalid",
            // Not a spec category: a builder misuse the spec has no name for.
            CompileError::DuplicateNode { .. } => "duplicate_node",
            CompileError::CheckpointStateMigrationChainAmbiguous { .. } => {
                "checkpoint_state_migration_chain_ambiguous"
            }
            CompileError::Node { category, .. } => category,
        }
    }
}

/// A non-fatal compile-time diagnostic (graph-engine §2 *Reducer round-trip warning*).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompileWarning {
    /// A projection copies a parent field in and merges it back out through a
    /// reducer that is not round-trip-idempotent.
    ProjectionReducerRoundTrip {
        /// The subgraph-as-node.
        node: String,
        /// The parent field that round-trips.
        field: String,
        /// The parent field's reducer.
        reducer: String,
    },
}

impl CompileWarning {
    /// The warning's category identifier.
    pub fn category(&self) -> &'static str {
        match self {
            CompileWarning::ProjectionReducerRoundTrip { .. } => "projection_reducer_round_trip",
        }
    }
}

impl fmt::Display for CompileWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileWarning::ProjectionReducerRoundTrip {
                node,
                field,
                reducer,
            } => write!(
                f,
                "projection_reducer_round_trip: node `{node}` projects `{field}` in and back out through non-idempotent reducer `{reducer}`"
            ),
        }
    }
}

/// A reducer failed while merging one field (graph-engine §4 `ReducerError`, before the
/// engine attaches the producing node).
#[derive(Debug, thiserror::Error)]
#[error("reducer `{reducer}` failed on field `{field}`: {source}")]
pub struct MergeError {
    /// The offending field.
    pub field: String,
    /// The reducer's name.
    pub reducer: String,
    /// The root cause.
    #[source]
    pub source: BoxError,
}

/// State failed schema validation (graph-engine §4 `state_validation_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state validation failed: {}", .problems.join("; "))]
pub struct StateValidationError {
    /// The offending field names.
    pub fields: Vec<String>,
    /// One human-readable problem per offending field.
    pub problems: Vec<String>,
}

impl StateValidationError {
    /// One offending field.
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        let field = field.into();
        let problem = format!("`{field}`: {}", problem.into());
        StateValidationError {
            fields: vec![field],
            problems: vec![problem],
        }
    }
}

/// The runtime error categories of graph-engine §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RuntimeCategory {
    /// A node raised.
    NodeException,
    /// An edge function raised.
    EdgeException,
    /// A reducer raised while merging.
    ReducerError,
    /// A conditional edge returned an undeclared destination.
    RoutingError,
    /// State failed schema validation.
    StateValidationError,
    /// `resume_invocation` named an invocation with no checkpoint (pipeline-utilities
    /// §10.10).
    CheckpointNotFound,
    /// The Checkpointer's `save` raised.
    CheckpointSaveFailed,
    /// A loaded checkpoint does not fit the graph.
    CheckpointRecordInvalid,
    /// No migration chain bridges a loaded checkpoint's schema version.
    CheckpointStateMigrationMissing,
    /// A state migration raised.
    CheckpointStateMigrationFailed,
    /// The caller-supplied invocation metadata breaks observability §3.4 (a
    /// reserved key or a value that is not an OTel attribute value); rejected at the
    /// `invoke` boundary before any work begins.
    InvocationMetadataInvalid,
    /// The SessionStore's `load` raised, or the stored session does not fit (sessions §10).
    SessionLoadFailed,
    /// The SessionStore's `save` raised (sessions §10).
    SessionSaveFailed,
    /// No migration chain bridges a loaded session's schema version (sessions §10).
    SessionStateMigrationMissing,
    /// A session migration raised (sessions §10).
    SessionStateMigrationFailed,
    /// The session migrations are ambiguous (sessions §10).
    SessionStateMigrationChainAmbiguous,
    /// An optimistic-concurrency session save conflicted (sessions §8.2).
    SessionWriteConflict,
    /// `suspend()` was called where it is not permitted (suspension §9).
    SuspensionInUnsupportedContext,
    /// The paused-invocation record (or its session, §8.6) could not be persisted
    /// (suspension §9).
    SuspensionPersistenceFailed,
    /// Resume named an invocation that is not suspended (suspension §9).
    SuspensionRecordInvalid,
    /// The signal payload does not fit the state schema (suspension §9).
    SuspensionResumePayloadInvalid,
    /// Not a failure: the invocation suspended, and the caller used `invoke` /
    /// `invoke_with`, which return only a final state. The paused record is persisted;
    /// the source is a [`crate::suspension::SuspendedInvocation`]. Use
    /// [`crate::CompiledGraph::run`] to receive the suspended outcome instead. An
    /// implementation-defined category (`invocation_suspended`), not in the spec.
    InvocationSuspended,
}

impl RuntimeCategory {
    /// The canonical identifier, e.g. `node_exception`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeCategory::NodeException => category::NODE_EXCEPTION,
            RuntimeCategory::EdgeException => category::EDGE_EXCEPTION,
            RuntimeCategory::ReducerError => category::REDUCER_ERROR,
            RuntimeCategory::RoutingError => category::ROUTING_ERROR,
            RuntimeCategory::StateValidationError => category::STATE_VALIDATION_ERROR,
            RuntimeCategory::CheckpointNotFound => "checkpoint_not_found",
            RuntimeCategory::CheckpointSaveFailed => "checkpoint_save_failed",
            RuntimeCategory::CheckpointRecordInvalid => "checkpoint_record_invalid",
            RuntimeCategory::CheckpointStateMigrationMissing => {
                "checkpoint_state_migration_missing"
            }
            RuntimeCategory::CheckpointStateMigrationFailed => "checkpoint_state_migration_failed",
            RuntimeCategory::InvocationMetadataInvalid => {
                crate::metadata::INVOCATION_METADATA_INVALID
            }
            RuntimeCategory::SessionLoadFailed => "session_load_failed",
            RuntimeCategory::SessionSaveFailed => "session_save_failed",
            RuntimeCategory::SessionStateMigrationMissing => "session_state_migration_missing",
            RuntimeCategory::SessionStateMigrationFailed => "session_state_migration_failed",
            RuntimeCategory::SessionStateMigrationChainAmbiguous => {
                "session_state_migration_chain_ambiguous"
            }
            RuntimeCategory::SessionWriteConflict => "session_write_conflict",
            RuntimeCategory::SuspensionInUnsupportedContext => "suspension_in_unsupported_context",
            RuntimeCategory::SuspensionPersistenceFailed => "suspension_persistence_failed",
            RuntimeCategory::SuspensionRecordInvalid => "suspension_record_invalid",
            RuntimeCategory::SuspensionResumePayloadInvalid => "suspension_resume_payload_invalid",
            RuntimeCategory::InvocationSuspended => "invocation_suspended",
        }
    }
}

impl RuntimeCategory {
    /// The typed [`Category`].
    pub fn as_category(self) -> Category {
        Category::from_name(self.as_str())
    }
}

impl fmt::Display for RuntimeCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A conditional edge returned a destination that is neither a declared node nor `END`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("edge from `{from}` routed to undeclared destination `{destination}`")]
pub struct RoutingError {
    /// The node whose outgoing edge was evaluated.
    pub from: String,
    /// The undeclared destination.
    pub destination: String,
}

/// A graph run failed (graph-engine §4). Carries the category, the node the failure
/// surfaced at, and the state at the point of failure.
///
/// The recoverable state is the state the failing step started from, except for
/// `routing_error` / `edge_exception`, where it is the post-merge state the edge saw.
#[derive(Debug)]
pub struct GraphError<S> {
    pub(crate) category: RuntimeCategory,
    pub(crate) node: String,
    pub(crate) namespace: Vec<String>,
    pub(crate) state: S,
    pub(crate) invocation_id: String,
    pub(crate) source: BoxError,
}

impl<S> GraphError<S> {
    /// The §4 category.
    pub fn category(&self) -> RuntimeCategory {
        self.category
    }

    /// The category identifier to report: the §4 category, or — when the node
    /// raised a [`crate::Carrier`] (a `node_exception` subtype such as
    /// `parallel_branches_branch_failed`) — the subtype's.
    pub fn category_name(&self) -> &str {
        match self.source.downcast_ref::<crate::Carrier>() {
            Some(carrier) if self.category == RuntimeCategory::NodeException => {
                carrier.category().as_str()
            }
            _ => self.category.as_str(),
        }
    }

    /// The failing parallel branch, when a [`crate::Carrier`] in the cause chain
    /// names one.
    pub fn branch_name(&self) -> Option<&str> {
        let mut current: Option<&(dyn StdError + 'static)> = Some(self.source.as_ref());
        while let Some(err) = current {
            if let Some(name) = err
                .downcast_ref::<crate::Carrier>()
                .and_then(crate::Carrier::branch_name)
            {
                return Some(name);
            }
            current = err.source();
        }
        None
    }

    /// The node (in the invoked graph) at which the failure surfaced. For a failure
    /// inside a subgraph this is the subgraph-as-node; see [`GraphError::namespace`].
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The namespace of the node that originally failed, outermost first.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// The state at the point of failure (graph-engine §4 "recoverable").
    pub fn recoverable_state(&self) -> &S {
        &self.state
    }

    /// Consumes the error, returning the recoverable state.
    pub fn into_state(self) -> S {
        self.state
    }

    /// The invocation in which the failure happened.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The underlying cause (the node's own error, a [`MergeError`], a
    /// [`RoutingError`], a [`StateValidationError`], or a nested subgraph failure).
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.source.as_ref()
    }

    /// The message of the original cause: the innermost error that is not an engine
    /// wrapper (for a node that raised `"boom"`, `"boom"`).
    pub fn original_message(&self) -> String {
        let mut current: &(dyn StdError + 'static) = self.source.as_ref();
        while is_engine_wrapper(current) {
            match current.source() {
                Some(next) => current = next,
                None => break,
            }
        }
        current.to_string()
    }
}

/// True for the engine's own carrier types (a nested subgraph failure).
pub(crate) fn is_engine_wrapper(err: &(dyn StdError + 'static)) -> bool {
    crate::cause::is_carrier(err)
}

impl<S> fmt::Display for GraphError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at node `{}`: {}",
            self.category, self.node, self.source
        )
    }
}

impl<S: fmt::Debug> StdError for GraphError<S> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self.source.as_ref())
    }
}

/// The category of one error-chain link: a [`NodeError`]'s captured category (or, when
/// it captured none, its wrapped error's), a [`CategorizedError`]'s category, a
/// [`MergeError`]'s `reducer_error`, a [`RoutingError`]'s `routing_error`, a
/// [`StateValidationError`]'s `state_validation_error`, a nested subgraph failure's or a
/// carrier's category, a metadata or session error's. `None` for any other error.
///
/// An error of another crate (an `LlmError`, say) has its category here when it was
/// converted into a [`NodeError`] (which `?` in a node body does): no registry is involved.
pub fn category_of(err: &(dyn StdError + 'static)) -> Option<Category> {
    if let Some(e) = err.downcast_ref::<NodeError>() {
        return e.category().or_else(|| category_of(e.inner()));
    }
    if let Some(e) = err.downcast_ref::<CategorizedError>() {
        return e.category();
    }
    if err.is::<MergeError>() {
        return Some(Category::REDUCER_ERROR);
    }
    if err.is::<RoutingError>() {
        return Some(Category::ROUTING_ERROR);
    }
    if err.is::<StateValidationError>() {
        return Some(Category::STATE_VALIDATION_ERROR);
    }
    if let Some(e) = err.downcast_ref::<crate::subgraph::SubgraphFailure>() {
        return Some(e.category().as_category());
    }
    if let Some(e) = err.downcast_ref::<crate::cause::Carrier>() {
        return Some(e.category());
    }
    if let Some(e) = err.downcast_ref::<crate::metadata::MetadataError>() {
        return Some(Category::from_name(e.category()));
    }
    if let Some(e) = err.downcast_ref::<crate::session::SessionError>() {
        return Some(Category::from_name(e.category()));
    }
    if let Some(e) = err.downcast_ref::<crate::checkpoint::CheckpointError>() {
        return Some(Category::from_name(e.category()));
    }
    None
}

/// Whether `err` is transient: a [`NodeError`] or [`CategorizedError`] says so, or its
/// category is transient by default.
pub fn is_transient_link(err: &(dyn StdError + 'static)) -> bool {
    if let Some(e) = err.downcast_ref::<NodeError>() {
        return e.is_transient() || is_transient_link(e.inner());
    }
    if let Some(e) = err.downcast_ref::<CategorizedError>() {
        return e.is_transient();
    }
    category_of(err).is_some_and(Category::is_transient)
}

/// The engine's conversion of a [`NodeError`] into a plain boxed error (what carriers and
/// `GraphError` hold): the wrapped error itself when it has no category or the engine
/// recognises its category unaided (a carrier, a subgraph failure, a checkpoint error, a
/// [`CategorizedError`], ...), else the `NodeError`, boxed, so [`category_of`] still finds
/// the category it captured.
pub fn erase(err: NodeError) -> BoxError {
    if err.category().is_none() || category_of(err.inner()).is_some() {
        return err.into_inner();
    }
    Box::new(err)
}

impl Categorized for MergeError {
    fn category(&self) -> Option<Category> {
        Some(Category::REDUCER_ERROR)
    }
}

impl Categorized for RoutingError {
    fn category(&self) -> Option<Category> {
        Some(Category::ROUTING_ERROR)
    }
}

impl Categorized for StateValidationError {
    fn category(&self) -> Option<Category> {
        Some(Category::STATE_VALIDATION_ERROR)
    }
}
