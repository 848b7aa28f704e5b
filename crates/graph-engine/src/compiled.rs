//! Spec: graph-engine §3 (execution model), §4 (error semantics), §6 (event dispatch).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use openarmature_core::Extensions;

use crate::builder::EdgeFn;
use crate::checkpoint::engine::{instance, originates_here, parent_json, saves_here, Start};
use crate::checkpoint::NodePosition;
use crate::error::{BoxError, CompileWarning, GraphError, NodeError, RuntimeCategory};
use crate::metadata::{enter_node, scoped, scoped_body};
use crate::middleware::{Middleware, Next, Terminal};
use crate::node::{Invocation, InvokeOptions, Node, NodeCtx, NodeFuture, Scope};
use crate::observer::{
    EventError, NodeConfig, NodeEvent, ObserverErrorSink, ObserverEvent, Phase, Registration,
    StateRef,
};
use crate::queue::{DrainSummary, Registry};
use crate::state::State;
use crate::subgraph::SubgraphFailure;

pub(crate) enum ResolvedEdge<S: State> {
    End,
    To(usize),
    Conditional(EdgeFn<S>),
}

pub(crate) struct CompiledNode<S: State> {
    pub(crate) name: Arc<str>,
    /// `[name]`: the namespace at the top level, built once.
    pub(crate) namespace: Arc<[String]>,
    pub(crate) node: Arc<dyn Node<S>>,
    pub(crate) chain: Vec<Arc<dyn Middleware<S>>>,
    pub(crate) edge: ResolvedEdge<S>,
}

pub(crate) struct Inner<S: State> {
    pub(crate) nodes: Vec<CompiledNode<S>>,
    pub(crate) entry: usize,
    pub(crate) defaults: S,
    pub(crate) observers: RwLock<Vec<Attached>>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) sink: ObserverErrorSink,
    pub(crate) warnings: Vec<CompileWarning>,
    /// The registered Checkpointer, schema version and migrations (§10), if any.
    pub(crate) checkpoint: Option<Arc<crate::checkpoint::runtime::CheckpointConfig>>,
    /// The registered SessionStore and its rules (sessions §5–§8), if any.
    pub(crate) sessions: Option<Arc<crate::session::SessionConfig>>,
    /// Where paused-invocation records go (suspension §8.5): the registered
    /// Checkpointer, else a store this graph owns.
    pub(crate) paused: Arc<dyn crate::checkpoint::Checkpointer>,
}

/// Orders observer attach/detach against invocation starts, so an invocation's
/// observer set (including its subgraphs') is the one in force when it began.
static OBSERVER_SEQ: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_seq() -> u64 {
    OBSERVER_SEQ.fetch_add(1, Ordering::SeqCst)
}

/// A graph-attached observer and when it was attached / detached.
pub(crate) struct Attached {
    pub(crate) registration: Registration,
    pub(crate) attached: u64,
    pub(crate) detached: Option<u64>,
}

impl<S: State> Inner<S> {
    /// The observers attached when the invocation numbered `seq` began.
    pub(crate) fn observers_at(&self, seq: u64) -> Vec<Registration> {
        self.observers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|a| a.attached < seq && a.detached.is_none_or(|d| d > seq))
            .map(|a| a.registration.clone())
            .collect()
    }
}

/// An immutable, executable graph (graph-engine §2 *Compiled graph*). Cheap to
/// clone; clones share observers and drain state.
pub struct CompiledGraph<S: State> {
    pub(crate) inner: Arc<Inner<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        CompiledGraph {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// A completed invocation: the final state and the invocation's id.
#[derive(Debug, Clone)]
pub struct Completed<S> {
    /// The state at `END`.
    pub state: S,
    /// The invocation id (caller-supplied or minted).
    pub invocation_id: String,
}

impl<S: State> CompiledGraph<S> {
    /// Runs the graph from `initial` to `END`.
    ///
    /// Returns as soon as execution finishes; observer delivery may still be in
    /// flight (use [`CompiledGraph::drain`]).
    ///
    /// # Errors
    /// A [`GraphError`] with the §4 category and the recoverable state.
    ///
    /// # Cancel safety
    /// Dropping the future stops the run at its current await point; no further
    /// node starts.
    pub async fn invoke(&self, initial: S) -> Result<S, GraphError<S>> {
        self.invoke_with(initial, InvokeOptions::default())
            .await
            .map(|c| c.state)
    }

    /// Attaches an observer; it fires from the next invocation on (invocations in
    /// flight keep the set they started with, subgraphs included).
    pub fn attach_observer(&self, registration: Registration) {
        let mut observers = self
            .inner
            .observers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        observers.push(Attached {
            registration,
            attached: next_seq(),
            detached: None,
        });
    }

    /// Detaches every observer registered under `name` from the next invocation on;
    /// true if any was attached.
    pub fn detach_observer(&self, name: &str) -> bool {
        let seq = next_seq();
        let mut observers = self
            .inner
            .observers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut any = false;
        for a in observers.iter_mut() {
            if a.detached.is_none() && a.registration.name() == name {
                a.detached = Some(seq);
                any = true;
            }
        }
        any
    }

    /// Waits until every event of the invocations active now is delivered, or the
    /// timeout elapses; on timeout their delivery is cancelled and the graph
    /// stays usable (graph-engine §6 *Drain*). Worst case without a timeout: as long
    /// as the slowest observer takes for all queued events.
    pub async fn drain(&self, timeout: Option<Duration>) -> DrainSummary {
        self.inner.registry.drain(timeout).await
    }

    /// Waits until every event `invocation_id` emitted so far is delivered, or the
    /// timeout elapses; never cancels delivery (graph-engine §6 *Per-invocation drain*).
    pub async fn drain_events_for(
        &self,
        invocation_id: &str,
        timeout: Option<Duration>,
    ) -> DrainSummary {
        self.inner
            .registry
            .drain_events_for(invocation_id, timeout)
            .await
    }

    /// Runs this graph nested inside `ctx` — a context from [`NodeCtx::enter`] —
    /// the way a subgraph runs inside its parent: same invocation, same event queue,
    /// lineage from `ctx`, this graph's attached observers added, and inner events
    /// carrying `ctx`'s attempt index unless an inner retry sets its own. This is
    /// the primitive composite nodes (fan-out instances, parallel branches) use.
    ///
    /// # Errors
    /// A [`crate::SubgraphFailure`] (a §4 carrier keeping the inner category, the
    /// inner node, its namespace and the inner state at failure).
    pub async fn run_within(&self, initial: S, ctx: &NodeCtx) -> Result<S, BoxError> {
        let outer = &ctx.scope;
        let own = self.inner.observers_at(outer.inv.started_seq);
        // A graph attaching no observer of its own reaches its parent's recipients
        // (the common case for fan-out instances: nothing to rebuild per run).
        let (attached, recipients) = if own.is_empty() {
            (outer.attached.clone(), Arc::clone(&outer.recipients))
        } else {
            let mut attached = outer.attached.clone();
            attached.extend(own);
            let recipients = Scope::recipients_for(&attached, &outer.inv);
            (attached, recipients)
        };
        let scope = Arc::new(Scope {
            recipients,
            attached,
            inv: Arc::clone(&outer.inv),
            namespace_prefix: Arc::clone(&outer.namespace_prefix),
            parent_states: Arc::clone(&outer.parent_states),
            fan_out_chain: Arc::clone(&outer.fan_out_chain),
            branch_chain: Arc::clone(&outer.branch_chain),
            inherited_attempt: ctx.attempt_index,
            metadata: Arc::clone(&outer.metadata),
            suspension_forbidden: outer.suspension_forbidden.clone(),
            namespaces: outer.namespaces.clone(),
        });
        match self.inner.run_level(Arc::new(initial), scope).await {
            Ok(done) => Ok(unwrap_arc(done)),
            Err(err) => {
                let GraphError {
                    category,
                    node,
                    namespace,
                    state,
                    source,
                    ..
                } = err;
                let state: StateRef = Arc::new(state);
                Err(Box::new(SubgraphFailure::new(
                    category,
                    node,
                    namespace,
                    Some(state),
                    source,
                )))
            }
        }
    }

    /// The compile-time warnings (e.g. `projection_reducer_round_trip`).
    pub fn warnings(&self) -> &[CompileWarning] {
        &self.inner.warnings
    }

    /// The schema defaults the graph was built with.
    pub fn defaults(&self) -> &S {
        &self.inner.defaults
    }

    /// The Checkpointer registered with [`crate::GraphBuilder::checkpointer`], if any
    /// (what a durable runtime consults to find where an invocation stopped).
    pub fn checkpointer(&self) -> Option<&Arc<dyn crate::checkpoint::Checkpointer>> {
        self.inner.checkpoint.as_ref().map(|c| &c.checkpointer)
    }

    /// The entry node's name.
    pub fn entry(&self) -> &str {
        &self.inner.nodes[self.inner.entry].name
    }

    /// The declared node names, in declaration order.
    pub fn node_names(&self) -> Vec<&str> {
        self.inner.nodes.iter().map(|n| &*n.name).collect()
    }
}

pub(crate) struct CloseOnDrop(pub(crate) Arc<Invocation>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.queue.close();
    }
}

pub(crate) fn unwrap_arc<S: Clone>(state: Arc<S>) -> S {
    Arc::try_unwrap(state).unwrap_or_else(|shared| (*shared).clone())
}

/// Where a node execution's failure is reported (what [`GraphError`] names).
/// Borrowed, so the success path pays nothing for it.
struct Site<'a> {
    node_name: &'a str,
    /// The enclosing levels' namespace (the node's is this plus `node_name`).
    prefix: &'a [String],
    invocation_id: &'a str,
}

impl Site<'_> {
    fn namespace(&self) -> Vec<String> {
        self.prefix
            .iter()
            .cloned()
            .chain(std::iter::once(self.node_name.to_owned()))
            .collect()
    }
}

/// The node attempt whose terminal (`completed`) event is still owed.
pub(crate) struct OpenAttempt<S: State> {
    pub(crate) ctx: NodeCtx,
    pub(crate) pre: Arc<S>,
    /// Whether the attempt raised.
    failed: bool,
    /// The node's failure as its event reports it: captured only when an observer
    /// will receive the event (the cause-chain walk formats every link).
    failure: Option<EventError>,
    /// A copy of a successful attempt's update, kept only under middleware (which
    /// may discard it and start another attempt).
    success: Option<S::Update>,
}

/// Tracks one node execution's attempts so every `started` gets exactly one
/// `completed` (graph-engine §6 *Event dispatch*):
///
/// - a failed attempt's `completed` is owed until its outcome is final: it is sent
///   when a re-attempting middleware (one that passed a context made by
///   [`NodeCtx::with_attempt_index`]) sees the failure, when another attempt starts,
///   or when the chain ends with an error;
/// - if the chain instead recovers (a middleware catches the failure and returns an
///   update), the attempt completes with the merged state — the outcome the engine
///   saw (pipeline-utilities §2/§5, fixture 006);
/// - a successful attempt completes after the merge and edge resolution.
pub(crate) struct AttemptTerminal<'a, S: State> {
    node: &'a dyn Node<S>,
    emits: bool,
    /// Keep copies of successful updates (only when middleware wraps the node).
    keep_updates: bool,
    open: Mutex<Option<OpenAttempt<S>>>,
    /// Set when the node body suspended: the terminal's future then never completes,
    /// and the step loop drops the middleware chain (suspension §3 / §8.4).
    suspended: AtomicBool,
}

impl<S: State> AttemptTerminal<'_, S> {
    fn take_open(&self) -> Option<OpenAttempt<S>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Closes an attempt a middleware moved past: a failure completes with its
    /// error; a success whose update was set aside completes with the state that
    /// update would have produced.
    fn supersede(previous: OpenAttempt<S>) {
        if previous.failed {
            return Self::flush(previous, None);
        }
        let Some(update) = previous.success else {
            return;
        };
        match previous.pre.merge(update) {
            Ok(post) => emit(
                &previous.ctx,
                Phase::Completed,
                &previous.pre,
                Some(&Arc::new(post)),
                None,
            ),
            Err(err) => {
                let error = EventError::capture(RuntimeCategory::ReducerError.as_str(), &err);
                emit(
                    &previous.ctx,
                    Phase::Completed,
                    &previous.pre,
                    None,
                    Some(error),
                );
            }
        }
    }

    pub(crate) fn flush(open: OpenAttempt<S>, error: Option<EventError>) {
        let error = error.or(open.failure);
        emit(&open.ctx, Phase::Completed, &open.pre, None, error);
    }
}

impl<S: State> Terminal<S> for AttemptTerminal<'_, S> {
    fn run<'a>(&'a self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'a, S> {
        Box::pin(async move {
            let ctx = ctx.unscoped();
            ctx.latest_attempt
                .store(ctx.attempt_index, Ordering::SeqCst);
            if self.emits {
                if let Some(previous) = self.take_open() {
                    // A new attempt began without the previous one being closed.
                    Self::supersede(previous);
                }
                emit(&ctx, Phase::Started, &state, None, None);
            }
            // §3.4 per-attempt scoping: a failed attempt's metadata writes are discarded.
            let before = ctx.scope.metadata.snapshot();
            crate::metadata::set_in_body(true);
            let attempt = self.node.run(Arc::clone(&state), ctx.clone());
            let result = crate::spans::node_attempt(&ctx, attempt).await;
            crate::metadata::set_in_body(false);
            if result.is_err() {
                ctx.scope.metadata.restore(before);
            }
            if self.emits {
                // Without observers the attempt is still tracked (its index is the
                // checkpoint position's), but nothing is built for its events.
                let observed = ctx.has_observers();
                let failure = result
                    .as_ref()
                    .err()
                    .filter(|_| observed)
                    .map(|err| EventError::capture(node_failure_category(err).as_str(), err));
                let success = match (&result, self.keep_updates && observed) {
                    (Ok(update), true) => Some(update.clone()),
                    _ => None,
                };
                *self.open.lock().unwrap_or_else(PoisonError::into_inner) = Some(OpenAttempt {
                    ctx: ctx.clone(),
                    pre: state,
                    failed: result.is_err(),
                    failure,
                    success,
                });
            }
            if ctx.scope.inv.pending.suspends(&ctx.scope, &ctx.node_name) {
                // `next.run(..)` never returns to the middleware around the node.
                self.suspended.store(true, Ordering::SeqCst);
                std::future::pending::<()>().await;
            }
            result
        })
    }

    fn attempt_failed(&self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.as_ref().is_some_and(|o| o.failed) {
            if let Some(attempt) = open.take() {
                drop(open);
                Self::flush(attempt, None);
            }
        }
    }
}

/// The category a node failure carries: a nested subgraph keeps its own.
pub(crate) fn node_failure_category(err: &(dyn std::error::Error + 'static)) -> RuntimeCategory {
    if let Some(node_error) = err.downcast_ref::<NodeError>() {
        return node_failure_category(node_error.inner());
    }
    if let Some(e) = err.downcast_ref::<crate::suspension::SuspensionError>() {
        return e.runtime_category();
    }
    if let Some(cp) = err.downcast_ref::<crate::checkpoint::CheckpointError>() {
        // A composite node's own checkpoint failure (fan-out count drift, an
        // instance-completed save that raised) keeps its §10.10 category.
        return cp.runtime_category();
    }
    err.downcast_ref::<SubgraphFailure>()
        .map_or(RuntimeCategory::NodeException, SubgraphFailure::category)
}

pub(crate) fn emit<S: State>(
    ctx: &NodeCtx,
    phase: Phase,
    pre: &Arc<S>,
    post: Option<&Arc<S>>,
    error: Option<EventError>,
) {
    emit_with(ctx, phase, pre, post, error, None);
}

/// [`emit`] with a `suspended` event's descriptor.
pub(crate) fn emit_with<S: State>(
    ctx: &NodeCtx,
    phase: Phase,
    pre: &Arc<S>,
    post: Option<&Arc<S>>,
    error: Option<EventError>,
    descriptor: Option<Arc<crate::suspension::SignalDescriptor>>,
) {
    let scope = &ctx.scope;
    if scope.recipients.is_empty() {
        // Nobody listens: skip building the event (the hot path without observers).
        return;
    }
    let event = NodeEvent {
        phase,
        node_name: Arc::clone(&ctx.node_name),
        namespace: Arc::clone(&ctx.namespace),
        step: ctx.step,
        pre_state: Arc::clone(pre) as StateRef,
        post_state: post.map(|p| Arc::clone(p) as StateRef),
        error,
        parent_states: Arc::clone(&scope.parent_states),
        attempt_index: ctx.attempt_index,
        fan_out_index: ctx.fan_out_index(),
        branch_name: ctx.branch_name().map(str::to_owned),
        fan_out_index_chain: Arc::clone(&scope.fan_out_chain),
        branch_name_chain: Arc::clone(&scope.branch_chain),
        invocation_id: Arc::clone(&scope.inv.id),
        correlation_id: scope.inv.correlation_id.clone(),
        metadata: scope.metadata.read(),
        at: std::time::SystemTime::now(),
        fan_out_config: match ctx.node_config.as_deref() {
            Some(NodeConfig::FanOut(c)) => Some(c.clone()),
            _ => None,
        },
        parallel_branches_config: match ctx.node_config.as_deref() {
            Some(NodeConfig::ParallelBranches(c)) => Some(c.clone()),
            _ => None,
        },
        descriptor,
    };
    scope
        .inv
        .queue
        .dispatch(ObserverEvent::Node(event), Arc::clone(&scope.recipients));
}

impl<S: State> Inner<S> {
    /// Runs this graph's step loop inside `scope` (the outermost level or a subgraph),
    /// with an ambient slot the loop fills with each node's context.
    pub(crate) async fn run_level(
        &self,
        initial: Arc<S>,
        scope: Arc<Scope>,
    ) -> Result<Arc<S>, GraphError<S>> {
        scoped(None, self.step_loop(initial, scope)).await
    }

    async fn step_loop(&self, initial: Arc<S>, scope: Arc<Scope>) -> Result<Arc<S>, GraphError<S>> {
        let mut state = initial;
        let mut current = self.entry;
        if let Some(cursor) = &scope.inv.resume {
            match self.resume_level(cursor, &scope) {
                Ok(None) => {}
                Ok(Some((restored, Start::At(i)))) => {
                    state = restored;
                    current = i;
                }
                Ok(Some((restored, Start::After(i)))) => {
                    state = restored;
                    match self.route(&self.nodes[i], &state) {
                        Ok(None) => return Ok(state),
                        Ok(Some(next)) => current = next,
                        Err((category, err)) => {
                            return Err(self.level_error(category, &scope, err, &state));
                        }
                    }
                }
                Err(e) => {
                    let category = e.runtime_category();
                    return Err(self.level_error(category, &scope, Box::new(e), &state));
                }
            }
        }
        loop {
            let node = &self.nodes[current];
            let namespace: Arc<[String]> = if scope.namespace_prefix.is_empty() {
                Arc::clone(&node.namespace)
            } else {
                let build = || {
                    scope
                        .namespace_prefix
                        .iter()
                        .cloned()
                        .chain(std::iter::once(node.name.to_string()))
                        .collect()
                };
                match &scope.namespaces {
                    // Instances of one fan-out share their nodes' namespaces.
                    Some(cache) => cache.get(self as *const Self as usize, current, build),
                    None => build(),
                }
            };
            let site = Site {
                node_name: &node.name,
                prefix: &scope.namespace_prefix,
                invocation_id: &scope.inv.id,
            };
            let ctx = NodeCtx {
                node_name: Arc::clone(&node.name),
                namespace,
                step: if node.node.emits_node_events() {
                    scope.inv.next_step()
                } else {
                    scope.inv.peek_step()
                },
                attempt_index: scope.inherited_attempt,
                attempt_scoped: false,
                latest_attempt: Arc::new(AtomicU32::new(scope.inherited_attempt)),
                node_config: node.node.event_config(&node.name, &state).map(Arc::new),
                extensions: Extensions::new(),
                scope: Arc::clone(&scope),
            };
            let step = ctx.step;
            let terminal = AttemptTerminal {
                node: &*node.node,
                emits: node.node.emits_node_events(),
                keep_updates: !node.chain.is_empty(),
                open: Mutex::new(None),
                suspended: AtomicBool::new(false),
            };
            // The chain (middleware and node) runs with this node as the ambient
            // context (`get_invocation_metadata` / `set_invocation_metadata`); it
            // stays there through the merge and edge, until the next node.
            enter_node(ctx.clone());
            let chain = Next::new(&node.chain, &terminal).run(Arc::clone(&state), ctx);
            let result = crate::suspension::run::unless_suspended(chain, &terminal.suspended).await;
            let open = terminal.take_open();
            // A `suspend()` on this node's path (suspension §3): whatever the chain
            // returned, the level stops here.
            if let Some(interrupt) = scope.inv.pending.interrupt(&scope, &node.name) {
                let attempt = open
                    .as_ref()
                    .map_or(scope.inherited_attempt, |o| o.ctx.attempt_index);
                let position = NodePosition::new(
                    scope.namespace_prefix.to_vec(),
                    &*node.name,
                    step,
                    attempt,
                    scope.fan_out_chain.iter().rev().find_map(|x| *x),
                );
                return Err(self.interrupted(interrupt, &scope, &node.name, &state, open, position));
            }
            let result = match result {
                Some(result) => result.map_err(crate::error::erase),
                None => Err("the node suspended outside the suspension's path".into()),
            };

            let update = match result {
                Ok(update) => update,
                Err(err) => {
                    let category = node_failure_category(&*err);
                    if let Some(rt) = &scope.inv.checkpoint {
                        if terminal.emits && saves_here(&scope) && originates_here(&*err) {
                            // Best effort: the node's own error is what the caller sees.
                            let _ = rt
                                .failed(
                                    &scope.inv.id,
                                    instance(&scope),
                                    state.to_json(),
                                    parent_json(&scope),
                                )
                                .await;
                        }
                    }
                    if let Some(open) = open {
                        // The attempt's own failure, when it raised, is what its event
                        // reports; else this error (built only for an observer).
                        let error = (!open.failed && open.ctx.has_observers())
                            .then(|| EventError::capture(category.as_str(), &*err));
                        AttemptTerminal::flush(open, error);
                    }
                    return Err(self.fail(category, &site, err, &state));
                }
            };

            let merged = match state.merge(update) {
                Ok(merged) => merged,
                Err(err) => {
                    let err: BoxError = Box::new(err);
                    return Err(self.fail_after(
                        RuntimeCategory::ReducerError,
                        &site,
                        open,
                        err,
                        &state,
                    ));
                }
            };
            if let Err(err) = merged.validate() {
                let err: BoxError = Box::new(err);
                return Err(self.fail_after(
                    RuntimeCategory::StateValidationError,
                    &site,
                    open,
                    err,
                    &state,
                ));
            }
            let merged = Arc::new(merged);

            let next = match self.route(node, &merged) {
                Ok(next) => next,
                Err((category, err)) => {
                    return Err(self.fail_after(category, &site, open, err, &merged));
                }
            };

            let attempt = open
                .as_ref()
                .map_or(scope.inherited_attempt, |o| o.ctx.attempt_index);
            if let Some(open) = open {
                emit(&open.ctx, Phase::Completed, &open.pre, Some(&merged), None);
            }
            if let Some(rt) = &scope.inv.checkpoint {
                if terminal.emits && saves_here(&scope) {
                    let position = NodePosition::new(
                        scope.namespace_prefix.to_vec(),
                        &*node.name,
                        step,
                        attempt,
                        scope.fan_out_chain.iter().rev().find_map(|x| *x),
                    );
                    let parents = parent_json(&scope);
                    let saved = rt
                        .completed(
                            &scope.inv.id,
                            position,
                            instance(&scope),
                            merged.to_json(),
                            parents,
                        )
                        .await;
                    if let Err(e) = saved {
                        let category = e.runtime_category();
                        return Err(self.fail(category, &site, Box::new(e), &merged));
                    }
                }
            }
            state = merged;
            match next {
                Some(i) => current = i,
                None => return Ok(state),
            }
        }
    }

    /// A failure after the chain returned an update (merge, validation, edge): the
    /// open attempt completes with this error, then the error is built with
    /// `recoverable` as its state.
    fn fail_after(
        &self,
        category: RuntimeCategory,
        site: &Site<'_>,
        open: Option<OpenAttempt<S>>,
        err: BoxError,
        recoverable: &Arc<S>,
    ) -> GraphError<S> {
        if let Some(open) = open {
            let error = open
                .ctx
                .has_observers()
                .then(|| EventError::capture(category.as_str(), &*err));
            AttemptTerminal::flush(open, error);
        }
        self.fail(category, site, err, recoverable)
    }

    fn fail(
        &self,
        category: RuntimeCategory,
        site: &Site<'_>,
        err: BoxError,
        state: &Arc<S>,
    ) -> GraphError<S> {
        let namespace = err
            .downcast_ref::<SubgraphFailure>()
            .map_or_else(|| site.namespace(), |f| f.namespace().to_vec());
        GraphError {
            category,
            node: site.node_name.to_string(),
            namespace,
            state: (**state).clone(),
            invocation_id: site.invocation_id.to_string(),
            source: err,
        }
    }
}

/// Runs `f` as a synthetic event-source unit named `name` inside `ctx` (a context
/// from [`NodeCtx::enter`]): one `started` / `completed` pair with that name, the
/// next step, `ctx`'s attempt index and lineage — how an inline-callable parallel
/// branch reports itself (graph-engine §6). `completed` carries the state `f`'s
/// update produces, or the error.
///
/// # Errors
/// `f`'s error, unchanged.
pub async fn run_unit<S, F, Fut>(
    ctx: &NodeCtx,
    name: &str,
    state: Arc<S>,
    f: F,
) -> Result<S::Update, NodeError>
where
    S: State,
    F: FnOnce(Arc<S>, NodeCtx) -> Fut,
    Fut: std::future::Future<Output = Result<S::Update, NodeError>>,
{
    let scope = &ctx.scope;
    let unit = NodeCtx {
        node_name: Arc::from(name),
        namespace: scope
            .namespace_prefix
            .iter()
            .cloned()
            .chain(std::iter::once(name.to_owned()))
            .collect(),
        step: scope.inv.next_step(),
        attempt_index: ctx.attempt_index,
        attempt_scoped: false,
        latest_attempt: Arc::new(AtomicU32::new(ctx.attempt_index)),
        node_config: None,
        extensions: Extensions::new(),
        scope: Arc::clone(scope),
    };
    emit(&unit, Phase::Started, &state, None, None);
    match scoped_body(unit.clone(), f(Arc::clone(&state), unit.clone())).await {
        Ok(update) => {
            match state.merge(update.clone()) {
                Ok(post) => emit(&unit, Phase::Completed, &state, Some(&Arc::new(post)), None),
                Err(err) => {
                    let error = EventError::capture(RuntimeCategory::ReducerError.as_str(), &err);
                    emit(&unit, Phase::Completed, &state, None, Some(error));
                }
            }
            Ok(update)
        }
        Err(err) => {
            match scope.inv.pending.interrupt(scope, name) {
                Some(crate::suspension::run::Interrupt::Suspend { descriptor, .. }) => {
                    let descriptor = Some(Arc::new(descriptor));
                    emit_with(&unit, Phase::Suspended, &state, None, None, descriptor);
                }
                _ => {
                    let error = EventError::capture(RuntimeCategory::NodeException.as_str(), &err);
                    emit(&unit, Phase::Completed, &state, None, Some(error));
                }
            }
            Err(err)
        }
    }
}
