//! Spec: pipeline-utilities §9 — the fan-out dispatcher seam: where each fan-out
//! instance's subgraph run happens.
//!
//! A [`FanOutNode`](crate::FanOutNode) resolves its instances, keeps up to its
//! concurrency bound in flight, runs each instance's middleware chain, records its
//! per-instance checkpoint progress and merges the contributions in item order. Only
//! the innermost step — running the subgraph from the instance's initial state to its
//! final state — goes through a [`FanOutDispatcher`]. The default
//! ([`InProcessDispatcher`], also what a node without a dispatcher does) runs it in
//! this process with [`CompiledGraph::run_within`], so inner events reach the
//! invocation's observers with the instance's lineage. Another crate (a
//! durable-execution adapter) can send it to a remote worker instead:
//!
//! - the request names the instance durably ([`InstanceKey`]:
//!   `{invocation}/{fan-out path}/{index}`; [`InstanceKey::run_key`] is the same on
//!   a checkpoint resume) and carries its initial state, serializable as JSON
//!   ([`InstanceRequest::job`] builds the wire form, [`InstanceJob`]);
//! - the worker runs the same subgraph with [`run_job`] and answers with the final
//!   state as JSON or an [`InstanceFailure`] (a category and message);
//! - the dispatcher turns the answer back into a state ([`decode_state`]) or a
//!   categorized error ([`InstanceRequest::failure`]).
//!
//! Because the seam sits inside the instance middleware, everything around it keeps
//! its meaning whatever the dispatcher: the concurrency bound (at most that many
//! `dispatch` calls are pending at once), fail-fast (the pending `dispatch` futures of
//! the siblings are dropped), collect (a failure becomes an `errors_field` record),
//! degrade and retry (instance middleware wraps each `dispatch` call; a retry calls
//! `dispatch` again with a higher [`InstanceRequest::attempt`]), and per-instance
//! checkpoint progress (an instance is recorded complete when its `dispatch` returned
//! and its contribution was saved; a resumed run dispatches only the rest).
//!
//! Chunking: the node issues up to `concurrency` `dispatch` calls at once and polls
//! them together, so a dispatcher may coalesce the concurrent calls of one fan-out
//! execution ([`InstanceKey::fan_out`] + [`InstanceKey::invocation_id`]) into one remote
//! job and complete each call from that job's answers;
//! [`InstanceRequest::instance_count`] tells it how many instances the execution has.
//!
//! What a remote run does not have: the inner node events reach the worker's
//! observers, not the caller's; a remote failure keeps its category, message and
//! failing node, not the inner state; an instance cannot suspend remotely.

mod wire;

use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::{CompiledGraph, NodeCtx, NodeError, State};
use serde::{Deserialize, Serialize};

pub use wire::{decode_state, run_job, InstanceFailure, InstanceJob};

/// Runs fan-out instances: the seam between a [`FanOutNode`](crate::FanOutNode) and
/// where its instances execute (see the [module docs](self)).
///
/// `dispatch` returns the instance's final subgraph state (the node projects its
/// `collect_field` and extra outputs from it) or its error; a categorized error
/// ([`InstanceRequest::failure`], or any error carrying an
/// [`openarmature_core::Category`]) keeps its category through the error policy,
/// retry classification and failure isolation. Dropping the returned future cancels
/// the instance (fail-fast, or the invocation dropped): a remote dispatcher should
/// then stop waiting and may cancel the remote job.
pub trait FanOutDispatcher<C: State>: Send + Sync + 'static {
    /// Runs one instance to its final state.
    fn dispatch<'a>(
        &'a self,
        request: InstanceRequest<'a, C>,
    ) -> BoxFuture<'a, Result<C, NodeError>>;
}

/// The default dispatcher: runs every instance in this process, nested in the
/// fan-out node's invocation ([`InstanceRequest::run_in_process`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcessDispatcher;

impl<C: State> FanOutDispatcher<C> for InProcessDispatcher {
    fn dispatch<'a>(
        &'a self,
        request: InstanceRequest<'a, C>,
    ) -> BoxFuture<'a, Result<C, NodeError>> {
        Box::pin(request.run_in_process())
    }
}

/// The durable identity of one fan-out instance: the invocation, the fan-out node's
/// path in it and the instance index. Displayed (and used as a job id) as
/// `{invocation_id}/{fan_out}/{index}`.
///
/// The path is the fan-out node's namespace joined with `/`, each level entered
/// through a fan-out instance suffixed `[i]` and through a parallel branch `(name)`:
/// `outer[3]/inner` is the fan-out `inner` inside instance 3 of `outer`.
///
/// A checkpoint resume (pipeline-utilities §10.4) is a new invocation with a fresh
/// id that keeps the resumed record's correlation id: a dispatcher whose jobs must
/// survive a resume (a re-sent invocation finding the instances its first run
/// finished remotely) keys them by [`InstanceKey::run_key`] instead.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "KeyWire", into = "KeyWire")]
pub struct InstanceKey {
    invocation_id: Arc<str>,
    correlation_id: Option<Arc<str>>,
    fan_out: Arc<str>,
    index: usize,
}

impl InstanceKey {
    /// A key from its parts.
    pub fn new(
        invocation_id: impl Into<Arc<str>>,
        correlation_id: Option<Arc<str>>,
        fan_out: impl Into<Arc<str>>,
        index: usize,
    ) -> Self {
        InstanceKey {
            invocation_id: invocation_id.into(),
            correlation_id,
            fan_out: fan_out.into(),
            index,
        }
    }

    /// The invocation the fan-out runs in.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The invocation's correlation id (kept by a checkpoint resume).
    pub fn correlation_id(&self) -> Option<&str> {
        self.correlation_id.as_deref()
    }

    /// The fan-out node's path (see the type docs).
    pub fn fan_out(&self) -> &str {
        &self.fan_out
    }

    /// The 0-based instance index (item order).
    pub fn index(&self) -> usize {
        self.index
    }

    /// `{correlation_id}/{fan_out}/{index}` (the invocation id when there is no
    /// correlation id): the same for a run and its checkpoint resumes.
    pub fn run_key(&self) -> String {
        let run = self.correlation_id.as_ref().unwrap_or(&self.invocation_id);
        format!("{run}/{}/{}", self.fan_out, self.index)
    }
}

/// The serialized form of an [`InstanceKey`] (its fields as strings).
#[derive(Serialize, Deserialize)]
struct KeyWire {
    invocation_id: String,
    correlation_id: Option<String>,
    fan_out: String,
    index: usize,
}

impl From<KeyWire> for InstanceKey {
    fn from(wire: KeyWire) -> Self {
        InstanceKey::new(
            wire.invocation_id,
            wire.correlation_id.map(Arc::from),
            wire.fan_out,
            wire.index,
        )
    }
}

impl From<InstanceKey> for KeyWire {
    fn from(key: InstanceKey) -> Self {
        KeyWire {
            invocation_id: key.invocation_id.to_string(),
            correlation_id: key.correlation_id.as_deref().map(str::to_owned),
            fan_out: key.fan_out.to_string(),
            index: key.index,
        }
    }
}

impl fmt::Display for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.invocation_id, self.fan_out, self.index)
    }
}

/// What one fan-out execution shares with each of its requests (built once, only
/// when a dispatcher is set).
pub(crate) struct DispatchSite {
    pub(crate) invocation_id: Arc<str>,
    pub(crate) correlation_id: Option<Arc<str>>,
    pub(crate) fan_out: Arc<str>,
    pub(crate) instance_count: usize,
    pub(crate) concurrency: usize,
    pub(crate) node_attempt: u32,
}

impl DispatchSite {
    /// The site of the fan-out node `ctx` runs, about to dispatch `instance_count`
    /// instances, at most `concurrency` at once.
    pub(crate) fn new(ctx: &NodeCtx, instance_count: usize, concurrency: usize) -> Self {
        DispatchSite {
            invocation_id: ctx.invocation_id().into(),
            correlation_id: ctx.correlation_id().map(Arc::from),
            fan_out: fan_out_path(ctx).into(),
            instance_count,
            concurrency,
            node_attempt: ctx.attempt_index(),
        }
    }
}

/// The fan-out node's path: its namespace, with the instance / branch each level
/// was entered through.
fn fan_out_path(ctx: &NodeCtx) -> String {
    let lineage = ctx.lineage();
    let mut path = String::new();
    for (k, name) in lineage.namespace.iter().enumerate() {
        if k > 0 {
            path.push('/');
        }
        path.push_str(name);
        if let Some(Some(index)) = lineage.fan_out_index_chain.get(k) {
            let _ = write!(path, "[{index}]");
        }
        if let Some(Some(branch)) = lineage.branch_name_chain.get(k) {
            let _ = write!(path, "({branch})");
        }
    }
    path
}

/// One instance to run: its key, its initial state, the subgraph and the instance's
/// context (given to [`FanOutDispatcher::dispatch`]).
pub struct InstanceRequest<'a, C: State> {
    key: InstanceKey,
    instance_count: usize,
    concurrency: usize,
    node_attempt: u32,
    state: Arc<C>,
    graph: &'a CompiledGraph<C>,
    ctx: &'a NodeCtx,
}

impl<'a, C: State> InstanceRequest<'a, C> {
    pub(crate) fn new(
        site: &DispatchSite,
        index: usize,
        state: Arc<C>,
        graph: &'a CompiledGraph<C>,
        ctx: &'a NodeCtx,
    ) -> Self {
        InstanceRequest {
            key: InstanceKey {
                invocation_id: Arc::clone(&site.invocation_id),
                correlation_id: site.correlation_id.clone(),
                fan_out: Arc::clone(&site.fan_out),
                index,
            },
            instance_count: site.instance_count,
            concurrency: site.concurrency,
            node_attempt: site.node_attempt,
            state,
            graph,
            ctx,
        }
    }

    /// The instance's durable identity.
    pub fn key(&self) -> &InstanceKey {
        &self.key
    }

    /// How many instances this fan-out execution resolved (a chunking dispatcher's
    /// hint: the indices run `0..instance_count`).
    pub fn instance_count(&self) -> usize {
        self.instance_count
    }

    /// The fan-out's concurrency bound in this execution (1 to `instance_count`): at
    /// most this many `dispatch` calls are pending at once, so a chunking dispatcher
    /// never waits for more than this many requests to fill a chunk.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The attempt index of this instance run: 0, or the attempt a re-attempting
    /// instance middleware (retry) started. A dispatcher that deduplicates jobs by
    /// key must tell attempts apart (e.g. suffix the key when either attempt index
    /// is non-zero), or a retry gets the recorded failure back.
    pub fn attempt(&self) -> u32 {
        self.ctx.attempt_index()
    }

    /// The attempt index of the fan-out node itself (a retry around the fan-out
    /// node re-dispatches every instance with the next index).
    pub fn node_attempt(&self) -> u32 {
        self.node_attempt
    }

    /// The instance's initial subgraph state (projected from the parent).
    pub fn state(&self) -> &Arc<C> {
        &self.state
    }

    /// The subgraph every instance runs.
    pub fn graph(&self) -> &'a CompiledGraph<C> {
        self.graph
    }

    /// The instance's context (nested under the fan-out node, its lineage carrying
    /// the instance index): what an in-process run needs, and where to read the
    /// invocation's correlation id and metadata.
    pub fn ctx(&self) -> &'a NodeCtx {
        self.ctx
    }

    /// The wire form of this request: key, attempts and the initial state as JSON.
    pub fn job(&self) -> InstanceJob {
        InstanceJob {
            key: self.key.clone(),
            attempt: self.attempt(),
            node_attempt: self.node_attempt,
            state: self.state.to_json(),
        }
    }

    /// The error for a failure a worker reported ([`InstanceFailure::into_error`]
    /// under this instance's namespace): what a remote dispatcher returns from
    /// `dispatch` so the failure reads as it would have in process.
    pub fn failure(&self, failure: InstanceFailure) -> NodeError {
        failure.into_error(self.ctx.namespace())
    }

    /// Runs the instance here, nested in the fan-out node's invocation (what
    /// [`InProcessDispatcher`] does).
    ///
    /// # Errors
    /// The subgraph's failure (a carrier keeping the inner category).
    pub async fn run_in_process(self) -> Result<C, NodeError> {
        run_default(self.graph, self.state, self.ctx).await
    }
}

/// The in-process run behind a node without a dispatcher (no request is built).
pub(crate) async fn run_default<C: State>(
    graph: &CompiledGraph<C>,
    state: Arc<C>,
    ctx: &NodeCtx,
) -> Result<C, NodeError> {
    Ok(graph.run_within(Arc::unwrap_or_clone(state), ctx).await?)
}
