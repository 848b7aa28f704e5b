//! Spec: pipeline-utilities §10.3 / §10.4 — the step loop's checkpoint hooks: preparing
//! a fresh or resumed invocation, where a level starts on resume, routing after the
//! node a record was saved at, and which levels save (§10.3: every level but those
//! inside a parallel branch; saves inside fan-out instances record per-instance
//! progress, §10.11).

use std::sync::Arc;

use serde_json::Value;

use super::runtime::{state_from_json, CheckpointRuntime, LevelResume, ResumeCursor};
use super::CheckpointError;
use crate::compiled::{Inner, ResolvedEdge};
use crate::error::{BoxError, GraphError, RoutingError, RuntimeCategory};
use crate::node::Scope;
use crate::state::State;
use crate::Target;

/// Where a resumed level starts.
pub(crate) enum Start {
    /// Run this node first.
    At(usize),
    /// Continue after this node (evaluate its edge).
    After(usize),
}

/// A prepared invocation's checkpoint side: the runtime (when a Checkpointer is
/// registered), where a resume re-enters, the correlation id and the first step.
pub(crate) struct Prepared {
    pub(crate) checkpoint: Option<Arc<CheckpointRuntime>>,
    pub(crate) cursor: Option<ResumeCursor>,
    pub(crate) correlation: Arc<str>,
    pub(crate) first_step: u64,
}

/// Whether a level saves: not inside a parallel branch (the branches node saves when it
/// completes, and a resume re-runs it whole). Inside a fan-out instance the saves
/// record per-instance progress (§10.11).
pub(crate) fn saves_here(scope: &Scope) -> bool {
    scope.branch_chain.iter().all(Option::is_none)
}

/// The fan-out instance the level runs in, if any.
pub(crate) fn instance(scope: &Scope) -> Option<super::fan_out::InstanceKey> {
    super::instance_of(&scope.namespace_prefix, &scope.fan_out_chain)
}

/// The containing levels' states, outermost first.
pub(crate) fn parent_json(scope: &Scope) -> Vec<Value> {
    scope.parent_states.iter().map(|s| s.to_json()).collect()
}

/// Whether a node's error was raised at this level (not carried up from a subgraph, and
/// not a checkpoint failure): only the originating level records a failure save.
pub(crate) fn originates_here(err: &(dyn std::error::Error + 'static)) -> bool {
    !err.is::<crate::SubgraphFailure>() && !err.is::<CheckpointError>()
}

impl<S: State> Inner<S> {
    /// The invocation's checkpoint bookkeeping, correlation id and first step: a fresh
    /// run, or the loaded (and migrated) record of `resume`.
    pub(crate) async fn prepare_checkpoint(
        &self,
        resume: Option<&str>,
        correlation: Option<String>,
    ) -> Result<Prepared, CheckpointError> {
        match (resume, &self.checkpoint) {
            (Some(id), None) => Err(CheckpointError::NotFound {
                invocation_id: id.to_owned(),
            }),
            (Some(id), Some(config)) => {
                let (runtime, cursor, step) =
                    CheckpointRuntime::resume(Arc::clone(config), id).await?;
                let correlation: Arc<str> = runtime.correlation_id().into();
                Ok(Prepared {
                    checkpoint: Some(Arc::new(runtime)),
                    cursor,
                    correlation,
                    first_step: step,
                })
            }
            (None, config) => {
                let correlation: Arc<str> =
                    correlation.unwrap_or_else(crate::ids::mint_uuid).into();
                let runtime = config
                    .as_ref()
                    .map(|c| Arc::new(CheckpointRuntime::fresh(Arc::clone(c), &correlation)));
                Ok(Prepared {
                    checkpoint: runtime,
                    cursor: None,
                    correlation,
                    first_step: 0,
                })
            }
        }
    }

    /// How the level `scope` describes starts, when a resume passes through it.
    pub(crate) fn resume_level(
        &self,
        cursor: &ResumeCursor,
        scope: &Scope,
    ) -> Result<Option<(Arc<S>, Start)>, CheckpointError> {
        let Some(level) = cursor.take_level(&scope.namespace_prefix) else {
            return Ok(None);
        };
        let index = |name: &str| {
            self.nodes
                .iter()
                .position(|n| *n.name == *name)
                .ok_or_else(|| CheckpointError::RecordInvalid {
                    description: format!(
                        "the saved position names node `{name}`, which this graph does not declare"
                    ),
                })
        };
        Ok(Some(match level {
            LevelResume::Entry { state } => (
                Arc::new(state_from_json(&self.defaults, state)?),
                Start::At(self.entry),
            ),
            LevelResume::Into { state, node } => (
                Arc::new(state_from_json(&self.defaults, state)?),
                Start::At(index(&node)?),
            ),
            LevelResume::After { state, node } => (
                Arc::new(state_from_json(&self.defaults, state)?),
                Start::After(index(&node)?),
            ),
        }))
    }

    /// The node after `node` given `state`: `None` at `END`.
    pub(crate) fn route(
        &self,
        node: &crate::compiled::CompiledNode<S>,
        state: &S,
    ) -> Result<Option<usize>, (RuntimeCategory, BoxError)> {
        match &node.edge {
            ResolvedEdge::End => Ok(None),
            ResolvedEdge::To(i) => Ok(Some(*i)),
            ResolvedEdge::Conditional(f) => match f(state) {
                Ok(Target::End) => Ok(None),
                Ok(Target::Node(name)) => match self.nodes.iter().position(|n| *n.name == *name) {
                    Some(i) => Ok(Some(i)),
                    None => Err((
                        RuntimeCategory::RoutingError,
                        Box::new(RoutingError {
                            from: node.name.to_string(),
                            destination: name,
                        }),
                    )),
                },
                Err(err) => Err((RuntimeCategory::EdgeException, err)),
            },
        }
    }

    /// An error raised by the level itself (before any node of it ran).
    pub(crate) fn level_error(
        &self,
        category: RuntimeCategory,
        scope: &Scope,
        source: BoxError,
        state: &Arc<S>,
    ) -> GraphError<S> {
        GraphError {
            category,
            node: String::new(),
            namespace: scope.namespace_prefix.to_vec(),
            state: (**state).clone(),
            invocation_id: scope.inv.id.to_string(),
            source,
        }
    }
}
