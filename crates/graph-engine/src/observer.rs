//! Spec: graph-engine §6 — observer hooks: events, phases, registration.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use openarmature_core::vocab::{llm, retrieval, tool};
use openarmature_core::Lineage;

use crate::cause::{cause_chain, derive, CauseLink};
use crate::error::BoxError;
use crate::state::StateView;

/// A shared, immutable, type-erased state snapshot carried by events.
pub type StateRef = Arc<dyn StateView>;

/// A node event's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Dispatched right before the wrapped node function runs.
    Started,
    /// Dispatched after the merge and edge resolution (or the failure).
    Completed,
    /// The node suspended (suspension §3): the attempt's terminal event instead of
    /// `completed`; [`NodeEvent::descriptor`] carries the signal descriptor.
    Suspended,
}

impl Phase {
    /// `"started"` / `"completed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Started => "started",
            Phase::Completed => "completed",
            Phase::Suspended => "suspended",
        }
    }
}

/// A non-empty set of phases an observer subscribes to (default: both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseSet {
    started: bool,
    completed: bool,
    suspended: bool,
}

/// An empty phase set was passed at registration (graph-engine §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an observer must subscribe to at least one phase")]
pub struct EmptyPhaseSet;

impl PhaseSet {
    /// Both phases.
    pub const ALL: PhaseSet = PhaseSet {
        started: true,
        completed: true,
        suspended: true,
    };

    /// The set of `phases`. `suspended` is a terminal phase like `completed`: a set
    /// with `completed` receives `suspended` events too.
    ///
    /// # Errors
    /// [`EmptyPhaseSet`] when `phases` is empty.
    pub fn new(phases: &[Phase]) -> Result<Self, EmptyPhaseSet> {
        let set = PhaseSet {
            started: phases.contains(&Phase::Started),
            completed: phases.contains(&Phase::Completed),
            suspended: phases.contains(&Phase::Suspended) || phases.contains(&Phase::Completed),
        };
        if set.started || set.completed || set.suspended {
            Ok(set)
        } else {
            Err(EmptyPhaseSet)
        }
    }

    /// Whether `phase` is in the set.
    pub fn contains(self, phase: Phase) -> bool {
        match phase {
            Phase::Started => self.started,
            Phase::Completed => self.completed,
            Phase::Suspended => self.suspended,
        }
    }
}

impl Default for PhaseSet {
    fn default() -> Self {
        PhaseSet::ALL
    }
}

/// The error on a failed node's `completed` event: the §4 category plus a snapshot
/// of the raised error (its message and cause chain). The error instance itself
/// propagates to the caller; events carry an immutable snapshot of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// The §4 category (`node_exception`, `reducer_error`, `routing_error`, …).
    pub category: String,
    /// The raised error's message.
    pub message: String,
    /// The raised error and its causes, outermost first.
    pub chain: Vec<CauseLink>,
}

impl EventError {
    /// The §6.4 derived category of the carried chain (outermost non-carrier link
    /// with a category), e.g. `provider_unavailable` under a `node_exception`.
    pub fn derived_category(&self) -> Option<String> {
        derive(&self.chain).0
    }

    /// Snapshots `error` under the §4 `category`.
    pub fn capture(category: &str, error: &(dyn std::error::Error + 'static)) -> Self {
        let chain = cause_chain(error);
        EventError {
            category: category.to_owned(),
            message: error.to_string(),
            chain,
        }
    }
}

/// A node-boundary event (graph-engine §6 *Node event shape*).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeEvent {
    /// Started or completed.
    pub phase: Phase,
    /// The node's name in its immediate graph.
    pub node_name: Arc<str>,
    /// Outermost-to-innermost node names leading to this node.
    pub namespace: Arc<[String]>,
    /// Monotonic per invocation, shared by all attempts of one node execution.
    pub step: u64,
    /// The state the node received.
    pub pre_state: StateRef,
    /// The merged state; only on successful `completed` events.
    pub post_state: Option<StateRef>,
    /// The failure; only on failed `completed` events.
    pub error: Option<EventError>,
    /// Containing graphs' states at subgraph entry, outermost first.
    pub parent_states: Arc<[StateRef]>,
    /// 0-based attempt index under the innermost re-attempting middleware.
    pub attempt_index: u32,
    /// The innermost enclosing fan-out instance index.
    pub fan_out_index: Option<usize>,
    /// The innermost enclosing parallel branch.
    pub branch_name: Option<String>,
    /// Fan-out lineage aligned to `namespace` boundaries (empty at top level).
    pub fan_out_index_chain: Arc<[Option<usize>]>,
    /// Branch lineage aligned to `namespace` boundaries (empty at top level).
    pub branch_name_chain: Arc<[Option<String>]>,
    /// The invocation that emitted the event.
    pub invocation_id: Arc<str>,
    /// The caller's correlation id, if any.
    pub correlation_id: Option<Arc<str>>,
    /// The invocation metadata in force in the node's context when the event was
    /// dispatched (observability §3.4, §5.6): the caller's plus earlier writes.
    pub metadata: crate::metadata::InvocationMetadata,
    /// When the engine dispatched the event (wall clock).
    pub at: std::time::SystemTime,
    /// The resolved configuration of a fan-out node (on its own events only).
    pub fan_out_config: Option<FanOutConfig>,
    /// The resolved configuration of a parallel-branches node (on its own events only).
    pub parallel_branches_config: Option<ParallelBranchesConfig>,
    /// The signal descriptor of a `suspended` event (suspension §4), else `None`.
    pub descriptor: Option<Arc<crate::suspension::SignalDescriptor>>,
}

/// A fan-out node's resolved configuration (graph-engine §6 `fan_out_config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanOutConfig {
    /// The resolved instance count.
    pub item_count: usize,
    /// The resolved concurrency bound (`None` = unbounded).
    pub concurrency: Option<usize>,
    /// `fail_fast` or `collect`.
    pub error_policy: String,
    /// The fan-out node's own name.
    pub parent_node_name: String,
}

/// A parallel-branches node's resolved configuration (graph-engine §6
/// `parallel_branches_config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelBranchesConfig {
    /// Every declared branch, in declaration order.
    pub branch_names: Vec<String>,
    /// How many branches are dispatched (after `when` skips).
    pub branch_count: usize,
    /// Which branches are dispatched (after `when` skips), in declaration order.
    pub dispatched: Vec<String>,
    /// `fail_fast` or `collect`.
    pub error_policy: String,
    /// The node's own name.
    pub parent_node_name: String,
}

/// The configuration a composite node reports on its own events.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeConfig {
    /// A fan-out node.
    FanOut(FanOutConfig),
    /// A parallel-branches node.
    ParallelBranches(ParallelBranchesConfig),
}

/// Everything the observer delivery queue carries. Open for later kinds
/// (failure-isolation events, typed LLM events) — match with a wildcard arm.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ObserverEvent {
    /// A node-boundary event.
    Node(NodeEvent),
    /// A failure-isolation middleware caught an error (pipeline-utilities §6.3).
    FailureIsolation(FailureIsolationEvent),
    /// An LLM `complete()` call succeeded (graph-engine §6 `LlmCompletionEvent`).
    LlmCompletion(llm::LlmCompletionEvent),
    /// An LLM `complete()` call raised (graph-engine §6 `LlmFailedEvent`).
    LlmFailed(llm::LlmFailedEvent),
    /// One wire attempt of an LLM call (the per-attempt span signal, llm-provider §7.1).
    LlmAttempt(llm::LlmAttemptEvent),
    /// One streamed delta of an LLM call made with `stream` set (graph-engine §6
    /// `LlmTokenEvent`).
    LlmToken(llm::LlmTokenEvent),
    /// An invocation of the outermost graph began (first on its queue).
    InvocationStarted(InvocationStarted),
    /// An invocation of the outermost graph ended (last on its queue).
    InvocationCompleted(InvocationCompleted),
    /// A named event of an opt-in extension (spec/extensions/).
    Extension(crate::extension_event::ExtensionEvent),
    /// Invocation metadata was added mid-invocation (observability §3.4 / §6).
    MetadataAugmented(crate::metadata::MetadataAugmented),
    /// An instrumented tool execution returned a result (graph-engine §6
    /// `ToolCallEvent`).
    ToolCall(tool::ToolCallEvent),
    /// An instrumented tool execution failed (graph-engine §6 `ToolCallFailedEvent`).
    ToolCallFailed(tool::ToolCallFailedEvent),
    /// An `embed()` call succeeded (graph-engine §6 `EmbeddingEvent`).
    Embedding(retrieval::EmbeddingEvent),
    /// An `embed()` call raised (graph-engine §6 `EmbeddingFailedEvent`).
    EmbeddingFailed(retrieval::EmbeddingFailedEvent),
    /// A `rerank()` call succeeded (graph-engine §6 `RerankEvent`).
    Rerank(retrieval::RerankEvent),
    /// A `rerank()` call raised (graph-engine §6 `RerankFailedEvent`).
    RerankFailed(retrieval::RerankFailedEvent),
}

/// The first event of every invocation: its identity and caller inputs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InvocationStarted {
    /// The invocation id.
    pub invocation_id: Arc<str>,
    /// The correlation id (caller-supplied, or minted as a UUIDv4).
    pub correlation_id: Arc<str>,
    /// Caller-supplied invocation metadata (observability §3.4).
    pub metadata: Arc<serde_json::Map<String, serde_json::Value>>,
    /// The caller's session id, when the invocation is session-bound (sessions §3).
    pub session_id: Option<Arc<str>>,
    /// The graph's entry node.
    pub entry: Arc<str>,
    /// The state the invocation starts from: the caller's initial state, or on a
    /// resume (pipeline-utilities §10.4) the outermost state restored from the
    /// checkpoint record. `None` when a record's state does not fit the schema (the
    /// run then fails with `checkpoint_record_invalid`).
    pub initial_state: Option<StateRef>,
    /// The invocation this run resumes, when it is a resume.
    pub resumed_from: Option<Arc<str>>,
    /// When the invocation began (wall clock).
    pub at: std::time::SystemTime,
}

/// The last event of every invocation: how it ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InvocationCompleted {
    /// The invocation id.
    pub invocation_id: Arc<str>,
    /// `None` when the run reached `END` or suspended; else the reported error category
    /// (`GraphError::category_name`) and message.
    pub error: Option<(String, String)>,
    /// The signal descriptor when the invocation suspended (suspension §5).
    pub suspended: Option<Arc<crate::suspension::SignalDescriptor>>,
    /// When the invocation ended (wall clock).
    pub at: std::time::SystemTime,
}

/// The structured error a failure-isolation middleware caught.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaughtException {
    /// The cause chain, outermost first, carriers marked.
    pub chain: Vec<CauseLink>,
    /// The derived category (outermost non-carrier link with a category).
    pub category: Option<String>,
    /// The derived message.
    pub message: String,
}

impl CaughtException {
    /// Classifies `error` (pipeline-utilities §6.4).
    pub fn capture(error: &(dyn std::error::Error + 'static)) -> Self {
        let chain = cause_chain(error);
        let (category, message) = derive(&chain);
        CaughtException {
            chain,
            category,
            message,
        }
    }
}

/// The framework-emitted failure-isolation event (pipeline-utilities §6.3): a kind of
/// its own, distinct from node events, on the same serial queue.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FailureIsolationEvent {
    /// The caller-supplied catch-site name.
    pub event_name: String,
    /// The wrapped node's lineage.
    pub lineage: Lineage,
    /// The state the wrapped chain received.
    pub pre_state: StateRef,
    /// The resolved degraded partial update, as JSON.
    pub post_state: serde_json::Value,
    /// What was caught.
    pub caught_exception: CaughtException,
    /// The invocation.
    pub invocation_id: Arc<str>,
    /// The caller's correlation id, if any.
    pub correlation_id: Option<Arc<str>>,
}

impl FailureIsolationEvent {
    /// Builds the event for the node attempt `ctx` describes.
    pub fn new(
        ctx: &crate::NodeCtx,
        event_name: impl Into<String>,
        pre_state: StateRef,
        post_state: serde_json::Value,
        caught_exception: CaughtException,
    ) -> Self {
        FailureIsolationEvent {
            event_name: event_name.into(),
            lineage: ctx.lineage(),
            pre_state,
            post_state,
            caught_exception,
            invocation_id: Arc::from(ctx.invocation_id()),
            correlation_id: ctx.correlation_id().map(Arc::from),
        }
    }
}

impl ObserverEvent {
    /// The invocation that emitted the event.
    pub fn invocation_id(&self) -> &str {
        match self {
            ObserverEvent::Node(e) => &e.invocation_id,
            ObserverEvent::FailureIsolation(e) => &e.invocation_id,
            ObserverEvent::LlmCompletion(e) => &e.site.invocation_id,
            ObserverEvent::LlmFailed(e) => &e.site.invocation_id,
            ObserverEvent::LlmAttempt(e) => &e.site.invocation_id,
            ObserverEvent::LlmToken(e) => &e.site.invocation_id,
            ObserverEvent::InvocationStarted(e) => &e.invocation_id,
            ObserverEvent::InvocationCompleted(e) => &e.invocation_id,
            ObserverEvent::Extension(e) => &e.invocation_id,
            ObserverEvent::MetadataAugmented(e) => &e.invocation_id,
            ObserverEvent::ToolCall(e) => &e.call.site.invocation_id,
            ObserverEvent::ToolCallFailed(e) => &e.call.site.invocation_id,
            ObserverEvent::Embedding(e) => &e.site.invocation_id,
            ObserverEvent::EmbeddingFailed(e) => &e.site.invocation_id,
            ObserverEvent::Rerank(e) => &e.site.invocation_id,
            ObserverEvent::RerankFailed(e) => &e.site.invocation_id,
        }
    }

    /// The node event, if this is one.
    pub fn as_node(&self) -> Option<&NodeEvent> {
        match self {
            ObserverEvent::Node(e) => Some(e),
            _ => None,
        }
    }

    /// The phase, for node-boundary events (others carry none and are not filtered).
    pub fn phase(&self) -> Option<Phase> {
        self.as_node().map(|e| e.phase)
    }
}

/// Receives events from the serial delivery queue. Observers cannot change control
/// flow: a returned error (or a panic) is reported and otherwise ignored.
pub trait Observer: Send + Sync + 'static {
    /// Handles one event. The queue awaits this before delivering anything else.
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>>;

    /// Handles one event at once, without a future, when this observer's handling
    /// never waits: `Some(outcome)` is the delivery's outcome and the queue does not call
    /// [`Observer::on_event`] for this event; `None` (the default) hands the event to
    /// `on_event`. An observer whose `on_event` returns a ready future implements both
    /// the same way, which saves the boxed future per delivered event.
    fn on_event_now(&self, event: &Arc<ObserverEvent>) -> Option<Result<(), BoxError>> {
        let _ = event;
        None
    }
}

/// An [`Observer`] made from a plain (non-async) closure (see [`sync_observer_fn`]):
/// each event is handled where it is delivered, with no future per event.
pub struct SyncFnObserver<F>(F);

/// Wraps a closure that handles an event without waiting as an [`Observer`].
///
/// # Examples
/// ```
/// use openarmature_graph::{sync_observer_fn, ObserverEvent};
/// let obs = sync_observer_fn(|event: &std::sync::Arc<ObserverEvent>| {
///     if let Some(node) = event.as_node() {
///         println!("{} {}", node.phase.as_str(), node.node_name);
///     }
///     Ok(())
/// });
/// # let _ = obs;
/// ```
pub fn sync_observer_fn<F>(f: F) -> SyncFnObserver<F>
where
    F: Fn(&Arc<ObserverEvent>) -> Result<(), BoxError> + Send + Sync + 'static,
{
    SyncFnObserver(f)
}

impl<F> Observer for SyncFnObserver<F>
where
    F: Fn(&Arc<ObserverEvent>) -> Result<(), BoxError> + Send + Sync + 'static,
{
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(std::future::ready((self.0)(&event)))
    }

    fn on_event_now(&self, event: &Arc<ObserverEvent>) -> Option<Result<(), BoxError>> {
        Some((self.0)(event))
    }
}

/// An [`Observer`] made from an async closure (see [`observer_fn`]).
pub struct FnObserver<F>(F);

/// Wraps an async closure as an [`Observer`].
///
/// # Examples
/// ```
/// use openarmature_graph::{observer_fn, ObserverEvent};
/// let obs = observer_fn(|event: std::sync::Arc<ObserverEvent>| async move {
///     if let Some(node) = event.as_node() {
///         println!("{} {}", node.phase.as_str(), node.node_name);
///     }
///     Ok(())
/// });
/// # let _ = obs;
/// ```
pub fn observer_fn<F, Fut>(f: F) -> FnObserver<F>
where
    F: Fn(Arc<ObserverEvent>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    FnObserver(f)
}

impl<F, Fut> Observer for FnObserver<F>
where
    F: Fn(Arc<ObserverEvent>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin((self.0)(event))
    }
}

/// An observer plus its phase subscription and a name for error reports.
#[derive(Clone)]
pub struct Registration {
    pub(crate) name: Arc<str>,
    pub(crate) phases: PhaseSet,
    pub(crate) observer: Arc<dyn Observer>,
    pub(crate) invocation_events: bool,
}

impl Registration {
    /// Subscribes `observer` to both phases.
    pub fn new(name: impl Into<Arc<str>>, observer: impl Observer) -> Self {
        Registration {
            name: name.into(),
            phases: PhaseSet::ALL,
            observer: Arc::new(observer),
            invocation_events: false,
        }
    }

    /// Subscribes an already shared observer.
    pub fn shared(name: impl Into<Arc<str>>, observer: Arc<dyn Observer>) -> Self {
        Registration {
            name: name.into(),
            phases: PhaseSet::ALL,
            observer,
            invocation_events: false,
        }
    }

    /// Restricts the subscription to `phases`.
    pub fn phases(mut self, phases: PhaseSet) -> Self {
        self.phases = phases;
        self
    }

    /// The registration's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Also receives the invocation lifecycle events
    /// ([`ObserverEvent::InvocationStarted`] / [`ObserverEvent::InvocationCompleted`]),
    /// which are not part of the spec's event stream and are off by default.
    pub fn with_invocation_events(mut self) -> Self {
        self.invocation_events = true;
        self
    }

    pub(crate) fn wants(&self, event: &ObserverEvent) -> bool {
        match event {
            ObserverEvent::InvocationStarted(_) | ObserverEvent::InvocationCompleted(_) => {
                self.invocation_events
            }
            other => other.phase().is_none_or(|p| self.phases.contains(p)),
        }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("phases", &self.phases)
            .finish_non_exhaustive()
    }
}

/// Where observer failures are reported (graph-engine §6: "SHOULD report observer
/// errors through a language-idiomatic warning channel").
pub type ObserverErrorSink = Arc<dyn Fn(&str, &BoxError) + Send + Sync>;
