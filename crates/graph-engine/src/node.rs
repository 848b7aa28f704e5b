//! Spec: graph-engine §2 *Node*, §6 *Node event shape* (the context a node runs in).

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_core::{CallSite, Extensions, Lineage};
use serde_json::{Map, Value};

use crate::error::{CompileError, CompileWarning, NodeError};
use crate::metadata::{InvocationMetadata, MetadataCell};
use crate::observer::{Registration, StateRef};
use crate::queue::{DrainSummary, EventQueue};
use crate::state::State;

/// What [`Node::run`] and [`crate::Middleware::call`] return: one attempt's partial
/// update of `S` (or the node's error), as a boxed future borrowing for `'a`.
pub type NodeFuture<'a, S> = BoxFuture<'a, Result<<S as State>::Update, NodeError>>;

/// An async unit of work: receives the current state, returns a partial update.
///
/// Async closures `Fn(Arc<S>, NodeCtx) -> impl Future<Output = Result<S::Update, NodeError>>`
/// are nodes. `?` inside one converts any categorized error (an `LlmError`, a
/// `CategorizedError`, ...) into the [`NodeError`] and keeps its category.
pub trait Node<S: State>: Send + Sync + 'static {
    /// Runs the node once (one attempt).
    fn run(&self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'_, S>;

    /// The resolved configuration this node reports on its own `started` /
    /// `completed` events (fan-out and parallel-branches nodes); computed by the
    /// engine from the state the node is about to receive. The default: none.
    fn event_config(&self, name: &str, state: &S) -> Option<crate::observer::NodeConfig> {
        let _ = (name, state);
        None
    }

    /// Whether the engine dispatches `started` / `completed` events for this node.
    /// A subgraph-as-node is transparent: its inner nodes emit events, the wrapper
    /// emits none and takes no step (graph-engine §6; fixtures 013 and 019).
    fn emits_node_events(&self) -> bool {
        true
    }

    /// Compile-time checks against the parent graph's state (subgraph projections
    /// use this). The default accepts.
    ///
    /// # Errors
    /// A [`CompileError`] when the node is misconfigured for this graph.
    fn check(&self, name: &str, parent: &S) -> Result<Vec<CompileWarning>, CompileError> {
        let _ = (name, parent);
        Ok(Vec::new())
    }
}

impl<S, F, Fut> Node<S> for F
where
    S: State,
    F: Fn(Arc<S>, NodeCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<S::Update, NodeError>> + Send + 'static,
{
    fn run(&self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'_, S> {
        Box::pin(self(state, ctx))
    }
}

/// Caller-supplied invocation inputs besides the initial state (graph-engine §3
/// *Invocation entry surface*).
#[derive(Clone, Default)]
pub struct InvokeOptions {
    /// Invocation-scoped observers, delivered after graph-attached ones.
    pub observers: Vec<Registration>,
    /// A caller correlation id, carried on every event.
    pub correlation_id: Option<String>,
    /// A caller invocation id, used verbatim (minted as a UUIDv4 when absent).
    pub invocation_id: Option<String>,
    /// Caller metadata (observability §3.4): the baseline every context of the
    /// invocation starts from. Kept as given; `OtelObserver::invoke` (and
    /// [`crate::metadata::validate`]) check it against the §3.4 rules.
    pub metadata: Map<String, Value>,
    /// Resume a prior invocation from its latest checkpoint (pipeline-utilities §10.4)
    /// instead of starting from the initial state.
    pub resume_invocation: Option<String>,
    /// The caller's session id (sessions §3): binds the invocation to a session that
    /// spans many invocations. Never minted; observers render it as
    /// `openarmature.session_id` and Langfuse's `trace.sessionId`.
    pub session_id: Option<String>,
    /// With [`InvokeOptions::resume_invocation`]: resume a *suspended* invocation
    /// (suspension §7) with this payload merged into its state, instead of a
    /// checkpoint resume.
    pub signal_payload: Option<Value>,
    /// The caller already loaded the session into the initial state
    /// ([`crate::CompiledGraph::load_session`]): the engine binds the invocation to it
    /// for saving without loading and merging it again.
    pub loaded_session: Option<crate::session::LoadedSession>,
}

impl InvokeOptions {
    /// Resumes a suspended invocation (with [`InvokeOptions::resume_invocation`]) with
    /// `payload` — an object of state fields — overlaid on its state (suspension §6:
    /// a direct overwrite, reducers are not consulted).
    pub fn signal_payload(mut self, payload: Value) -> Self {
        self.signal_payload = Some(payload);
        self
    }

    /// Resumes `invocation_id` from its latest checkpoint: the initial state passed to
    /// `invoke_with` is ignored, the record's correlation id is kept, and a fresh
    /// invocation id is minted (a caller-supplied one is ignored).
    pub fn resume_invocation(mut self, invocation_id: impl Into<String>) -> Self {
        self.resume_invocation = Some(invocation_id.into());
        self
    }

    /// Adds an invocation-scoped observer.
    pub fn observer(mut self, registration: Registration) -> Self {
        self.observers.push(registration);
        self
    }

    /// Sets the invocation id.
    pub fn invocation_id(mut self, id: impl Into<String>) -> Self {
        self.invocation_id = Some(id.into());
        self
    }

    /// Sets the correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Sets the caller metadata (observability §3.4).
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Binds the invocation to the caller's session `id` (sessions §3).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Binds the invocation to a session the caller already loaded and merged into the
    /// initial state (what a chat harness does to append the inbound message after
    /// the history): sets [`InvokeOptions::session_id`]; the invocation saves at `END`
    /// with the loaded version as its optimistic-concurrency baseline.
    pub fn loaded_session(mut self, loaded: crate::session::LoadedSession) -> Self {
        self.session_id = Some(loaded.session_id.clone());
        self.loaded_session = Some(loaded);
        self
    }
}

/// State shared by everything that runs in one invocation of the outermost graph.
pub(crate) struct Invocation {
    /// Orders this invocation against observer attach/detach.
    pub(crate) started_seq: u64,
    pub(crate) id: Arc<str>,
    pub(crate) correlation_id: Option<Arc<str>>,
    /// The caller's session id, when the invocation is session-bound.
    pub(crate) session_id: Option<Arc<str>>,
    /// The caller's metadata, as given at `invoke()`.
    pub(crate) metadata: InvocationMetadata,
    pub(crate) step: AtomicU64,
    /// Checkpoint bookkeeping, when the graph registered a Checkpointer.
    pub(crate) checkpoint: Option<Arc<crate::checkpoint::runtime::CheckpointRuntime>>,
    /// The bound session, when the graph registered sessions and a session id was given.
    pub(crate) session: Option<Arc<crate::session::runtime::SessionRuntime>>,
    pub(crate) queue: EventQueue,
    pub(crate) invocation_observers: Vec<Registration>,
    /// Where a resumed invocation re-enters (checkpoint or signal resume).
    pub(crate) resume: Option<crate::checkpoint::runtime::ResumeCursor>,
    /// A `suspend()` call being acted on (suspension §3).
    pub(crate) pending: crate::suspension::PendingSlot,
}

impl Invocation {
    pub(crate) fn next_step(&self) -> u64 {
        self.step.fetch_add(1, Ordering::SeqCst)
    }

    pub(crate) fn peek_step(&self) -> u64 {
        self.step.load(Ordering::SeqCst)
    }
}

/// Where one graph level runs inside an invocation: lineage and observers.
#[derive(Clone)]
pub(crate) struct Scope {
    pub(crate) inv: Arc<Invocation>,
    pub(crate) namespace_prefix: Arc<[String]>,
    pub(crate) parent_states: Arc<[StateRef]>,
    /// Graph-attached observers, outermost graph first.
    pub(crate) attached: Vec<Registration>,
    /// `attached` followed by the invocation-scoped observers.
    pub(crate) recipients: Arc<[Registration]>,
    pub(crate) fan_out_chain: Arc<[Option<usize>]>,
    pub(crate) branch_chain: Arc<[Option<String>]>,
    /// The attempt index inherited from a re-attempting wrapper around this level.
    pub(crate) inherited_attempt: u32,
    /// This context's invocation metadata (observability §3.4): shared with serial
    /// subgraphs, forked for fan-out instances and branches.
    pub(crate) metadata: Arc<MetadataCell>,
    /// Why `suspend()` is refused in this level (a collecting fan-out instance or
    /// branch, suspension §8.2 / §8.3), inherited by nested levels.
    pub(crate) suspension_forbidden: Option<Arc<str>>,
    /// The nested graph's node namespaces, shared by the instances of one
    /// [`crate::InstanceEntry`] (none elsewhere: built per node execution).
    pub(crate) namespaces: Option<Arc<crate::entry::NamespaceCache>>,
}

impl Scope {
    pub(crate) fn recipients_for(
        attached: &[Registration],
        inv: &Invocation,
    ) -> Arc<[Registration]> {
        attached
            .iter()
            .chain(inv.invocation_observers.iter())
            .cloned()
            .collect::<Vec<_>>()
            .into()
    }
}

/// The context of one node attempt: identity, lineage and invocation handles.
/// Middleware passes it down the chain; retry middleware sets the attempt index.
#[derive(Clone)]
pub struct NodeCtx {
    pub(crate) node_name: Arc<str>,
    pub(crate) namespace: Arc<[String]>,
    pub(crate) step: u64,
    pub(crate) attempt_index: u32,
    /// Set by [`NodeCtx::with_attempt_index`]; consumed by the next `Next::run`.
    pub(crate) attempt_scoped: bool,
    /// The index of the latest attempt started in this node execution.
    pub(crate) latest_attempt: Arc<AtomicU32>,
    /// The node's resolved configuration, reported on its events.
    pub(crate) node_config: Option<Arc<crate::observer::NodeConfig>>,
    /// Per node execution: what other crates attach ([`NodeCtx::extensions`]).
    pub(crate) extensions: Extensions,
    pub(crate) scope: Arc<Scope>,
}

/// The kind of dispatch boundary a nested run crosses (graph-engine §6 lineage).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Boundary {
    /// A plain subgraph-as-node.
    Subgraph,
    /// One fan-out instance, by 0-based index.
    FanOutInstance(usize),
    /// One parallel branch, by name.
    Branch(String),
}

impl NodeCtx {
    /// The node's name in its immediate graph.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Outermost-to-innermost node names leading to this node.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// The invocation-wide step of this node execution (shared by all its attempts).
    /// For a subgraph-as-node, which takes no step, the step its first inner node
    /// will take.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The current attempt index (0 unless a re-attempting middleware set it).
    pub fn attempt_index(&self) -> u32 {
        self.attempt_index
    }

    /// A copy with the attempt index set: what a re-attempting middleware (retry)
    /// passes to `next` for each attempt. Events of the attempt carry this index, and
    /// a failure returned through that `next` call closes the attempt (its
    /// `completed` event carries the error).
    pub fn with_attempt_index(&self, attempt_index: u32) -> NodeCtx {
        NodeCtx {
            attempt_index,
            attempt_scoped: true,
            ..self.clone()
        }
    }

    /// The configuration the engine resolved for this node execution through
    /// [`Node::event_config`] (once, before the first attempt); composite nodes reuse
    /// it instead of resolving their callables a second time.
    pub fn node_config(&self) -> Option<&crate::observer::NodeConfig> {
        self.node_config.as_deref()
    }

    /// The index of the latest attempt started in this node execution (what a
    /// middleware outside a retry reports after the retry gave up).
    pub fn latest_attempt_index(&self) -> u32 {
        self.latest_attempt.load(Ordering::SeqCst)
    }

    /// The state other crates attach to this node execution, by type (e.g.
    /// `openarmature-llm`'s call ordinals). One map per node execution: every attempt
    /// shares it, as do the copies middleware passes down
    /// ([`NodeCtx::with_attempt_index`]) and the contexts entered under this node
    /// ([`NodeCtx::enter`]); the next node execution starts with an empty one.
    /// Per-attempt state keys itself by [`NodeCtx::latest_attempt_index`].
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The event-source identity of this node at its latest attempt.
    pub fn lineage(&self) -> Lineage {
        Lineage {
            namespace: Arc::clone(&self.namespace),
            attempt_index: self.latest_attempt_index(),
            fan_out_index: self.fan_out_index(),
            branch_name: self.branch_name().map(str::to_owned),
            fan_out_index_chain: Arc::clone(&self.scope.fan_out_chain),
            branch_name_chain: Arc::clone(&self.scope.branch_chain),
        }
    }

    /// The site of a call (an LLM `complete()`, an `embed()`, a tool execution) this
    /// node attempt issues: its identity, lineage and the invocation metadata in force.
    pub fn call_site(&self) -> CallSite {
        CallSite::new(
            Arc::clone(&self.scope.inv.id),
            self.scope.inv.correlation_id.clone(),
            Arc::clone(&self.node_name),
            self.lineage(),
            self.invocation_metadata(),
        )
    }

    /// Dispatches a framework-emitted event (e.g. a failure-isolation event) onto this
    /// invocation's serial observer queue, to the same observers as this node's
    /// events. Never waits for delivery.
    pub fn dispatch_event(&self, event: crate::observer::ObserverEvent) {
        self.scope
            .inv
            .queue
            .dispatch(event, Arc::clone(&self.scope.recipients));
    }

    /// A context for work nested under this node across `boundary` (a subgraph, a
    /// fan-out instance, a parallel branch): events from inside carry this node's
    /// namespace as prefix, `parent` appended to `parent_states`, and the boundary
    /// in their lineage chains. The returned context still names this node; run a
    /// compiled graph inside it with [`crate::CompiledGraph::run_within`].
    pub fn enter(&self, parent: StateRef, boundary: Boundary) -> NodeCtx {
        let outer = &self.scope;
        let (fan_out, branch) = match boundary {
            Boundary::Subgraph => (None, None),
            Boundary::FanOutInstance(i) => (Some(i), None),
            Boundary::Branch(name) => (None, Some(name)),
        };
        // §3.4: a serial subgraph runs in this context; an instance or a branch gets
        // its own copy, seeded now.
        let metadata = if fan_out.is_none() && branch.is_none() {
            Arc::clone(&outer.metadata)
        } else {
            outer.metadata.fork()
        };
        self.nested(
            outer
                .parent_states
                .iter()
                .cloned()
                .chain([parent])
                .collect(),
            outer
                .fan_out_chain
                .iter()
                .cloned()
                .chain([fan_out])
                .collect(),
            outer.branch_chain.iter().cloned().chain([branch]).collect(),
            metadata,
            None,
        )
    }

    /// The nested context [`NodeCtx::enter`] and
    /// [`InstanceEntry::enter`](crate::InstanceEntry::enter) return.
    pub(crate) fn nested(
        &self,
        parent_states: Arc<[StateRef]>,
        fan_out_chain: Arc<[Option<usize>]>,
        branch_chain: Arc<[Option<String>]>,
        metadata: Arc<MetadataCell>,
        namespaces: Option<Arc<crate::entry::NamespaceCache>>,
    ) -> NodeCtx {
        let outer = &self.scope;
        let scope = Scope {
            inv: Arc::clone(&outer.inv),
            namespace_prefix: Arc::clone(&self.namespace),
            parent_states,
            attached: outer.attached.clone(),
            recipients: Arc::clone(&outer.recipients),
            fan_out_chain,
            branch_chain,
            inherited_attempt: self.attempt_index,
            metadata,
            suspension_forbidden: outer.suspension_forbidden.clone(),
            namespaces,
        };
        NodeCtx {
            attempt_scoped: false,
            latest_attempt: Arc::new(AtomicU32::new(self.attempt_index)),
            node_config: None,
            scope: Arc::new(scope),
            ..self.clone()
        }
    }

    /// This context with `suspend()` refused inside it (and in every level nested
    /// under it) with `suspension_in_unsupported_context`, `reason` saying why: a
    /// composite node whose instances' errors are collected rather than raised calls
    /// this on the contexts it [`enter`](NodeCtx::enter)s (suspension §8.2 / §8.3).
    #[must_use]
    pub fn forbid_suspension(mut self, reason: impl Into<Arc<str>>) -> NodeCtx {
        Arc::make_mut(&mut self.scope).suspension_forbidden = Some(reason.into());
        self
    }

    pub(crate) fn unscoped(self) -> NodeCtx {
        NodeCtx {
            attempt_scoped: false,
            ..self
        }
    }

    /// The invocation id (caller-supplied or minted).
    pub fn invocation_id(&self) -> &str {
        &self.scope.inv.id
    }

    /// Whether any observer receives this node's events (lets callers skip building
    /// costly framework events nobody reads).
    pub fn has_observers(&self) -> bool {
        !self.scope.recipients.is_empty()
    }

    /// The invocation's correlation id (caller-supplied, or minted as a UUIDv4).
    pub fn correlation_id(&self) -> Option<&str> {
        self.scope.inv.correlation_id.as_deref()
    }

    /// The session the invocation is bound to (sessions §3), if any.
    pub fn session_id(&self) -> Option<&str> {
        self.scope.inv.session_id.as_deref()
    }

    /// The caller-supplied invocation metadata as given at `invoke()` (the baseline;
    /// [`NodeCtx::invocation_metadata`] adds the writes visible in this context).
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.scope.inv.metadata
    }

    /// The innermost enclosing fan-out instance index.
    pub fn fan_out_index(&self) -> Option<usize> {
        self.scope.fan_out_chain.iter().rev().find_map(|x| *x)
    }

    /// The innermost enclosing parallel branch name.
    pub fn branch_name(&self) -> Option<&str> {
        self.scope
            .branch_chain
            .iter()
            .rev()
            .find_map(|x| x.as_deref())
    }

    /// Waits until every observer event this invocation emitted so far is delivered,
    /// or the timeout elapses (graph-engine §6 *Per-invocation drain*). Never cancels
    /// delivery.
    pub async fn drain_events(&self, timeout: Option<Duration>) -> DrainSummary {
        self.scope.inv.queue.drain_snapshot(timeout).await
    }
}
