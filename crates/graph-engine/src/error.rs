//! Spec: graph-engine §2 (compile-error categories) and §4 (runtime error semantics).
//!
//! Every error family exposes `category()`: the spec's canonical identifier.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// A boxed, thread-safe error: what node bodies, edges and observers return.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

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

/// An error with an explicit category and transience: the concrete error type the
/// framework's classifiers recognise (pipeline-utilities §6.1/§6.4 walk chains of these).
///
/// Node bodies may return any error; wrap it in a `CategorizedError` to give it a
/// category.
///
/// # Examples
/// ```
/// use openarmature_graph::CategorizedError;
/// let err = CategorizedError::new(Some("provider_rate_limit"), "slow down").transient(true);
/// assert_eq!(err.category(), Some("provider_rate_limit"));
/// assert_eq!(err.to_string(), "slow down");
/// ```
#[derive(Debug, Clone)]
pub struct CategorizedError {
    category: Option<String>,
    message: String,
    transient: bool,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl CategorizedError {
    /// An error with `category` (`None` = uncategorised) and `message`.
    pub fn new(category: Option<&str>, message: impl Into<String>) -> Self {
        CategorizedError {
            category: category.map(str::to_owned),
            message: message.into(),
            transient: false,
            source: None,
        }
    }

    /// Marks the error transient (informational; classifiers decide from the category).
    pub fn transient(mut self, transient: bool) -> Self {
        self.transient = transient;
        self
    }

    /// Attaches a cause.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The category, if any.
    pub fn category(&self) -> Option<&str> {
        self.category.as_deref()
    }

    /// The transience flag.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// The message (equal to `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CategorizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for CategorizedError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
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
        }
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
            Some(carrier) if self.category == RuntimeCategory::NodeException => carrier.category(),
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

/// Recognises another crate's error type: returns its category when `err` is one.
pub type CategoryProbe = fn(&(dyn StdError + 'static)) -> Option<&'static str>;

static PROBES: std::sync::RwLock<Vec<CategoryProbe>> = std::sync::RwLock::new(Vec::new());

/// Registers a [`CategoryProbe`] so [`category_of`] (and with it the retry
/// classifier, failure isolation and event error chains) recognises a foreign
/// error type — e.g. `openarmature-llm` registers its `LlmError`, so `?` on one
/// inside a node keeps its category. Registering the same probe twice is a no-op.
pub fn register_category_probe(probe: CategoryProbe) {
    let mut probes = PROBES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !probes.iter().any(|p| std::ptr::fn_addr_eq(*p, probe)) {
        probes.push(probe);
    }
}

/// The category of one error-chain link: a [`CategorizedError`]'s category, a
/// [`MergeError`]'s `reducer_error`, a [`RoutingError`]'s `routing_error`, a
/// [`StateValidationError`]'s `state_validation_error`, or a nested subgraph
/// failure's category. `None` for any other error.
pub fn category_of<'e>(err: &'e (dyn StdError + 'static)) -> Option<&'e str> {
    if let Some(e) = err.downcast_ref::<CategorizedError>() {
        return e.category();
    }
    if err.is::<MergeError>() {
        return Some(category::REDUCER_ERROR);
    }
    if err.is::<RoutingError>() {
        return Some(category::ROUTING_ERROR);
    }
    if err.is::<StateValidationError>() {
        return Some(category::STATE_VALIDATION_ERROR);
    }
    if let Some(e) = err.downcast_ref::<crate::subgraph::SubgraphFailure>() {
        return Some(e.category().as_str());
    }
    if let Some(e) = err.downcast_ref::<crate::cause::Carrier>() {
        return Some(e.category());
    }
    if let Some(e) = err.downcast_ref::<crate::metadata::MetadataError>() {
        return Some(e.category());
    }
    if let Some(e) = err.downcast_ref::<crate::session::SessionError>() {
        return Some(e.category());
    }
    let probes = PROBES
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    probes.iter().find_map(|probe| probe(err))
}
