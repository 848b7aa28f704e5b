//! Spec: pipeline-utilities §9 — the wire form of a dispatched fan-out instance: the
//! job a remote worker receives, the failure it answers with, and the worker-side run.

use openarmature_graph::{
    CategorizedError, Category, CompiledGraph, GraphError, InvokeOptions, NodeError,
    RuntimeCategory, State, SubgraphFailure,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::InstanceKey;

/// One fan-out instance as sent to a worker (see [`super::InstanceRequest::job`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceJob {
    /// The instance's durable identity.
    pub key: InstanceKey,
    /// The instance attempt ([`super::InstanceRequest::attempt`]).
    pub attempt: u32,
    /// The fan-out node's attempt ([`super::InstanceRequest::node_attempt`]).
    pub node_attempt: u32,
    /// The initial subgraph state ([`State::to_json`]).
    pub state: Value,
}

/// A failed instance as a worker reports it: the categories and message that the
/// caller's error policy, retry classifier and failure isolation read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceFailure {
    /// The failure's category at the instance boundary: the graph-engine §4 category
    /// of the instance's run (`node_exception`, `reducer_error`, …).
    pub category: String,
    /// The classified cause's category (pipeline-utilities §6.4: the outermost
    /// non-carrier link with one, e.g. `provider_unavailable`), if any.
    pub cause_category: Option<String>,
    /// The original message (the innermost cause's).
    pub message: String,
    /// The subgraph node at which the failure surfaced, when known.
    pub node: Option<String>,
    /// The failing node's namespace inside the subgraph, outermost first (empty when
    /// unknown).
    #[serde(default)]
    pub namespace: Vec<String>,
}

impl InstanceFailure {
    /// The failure of a subgraph run (what [`run_job`] reports).
    pub fn from_graph_error<S>(error: &GraphError<S>) -> Self {
        InstanceFailure {
            category: error.category().as_str().to_owned(),
            cause_category: crate::classify(error.cause()).category,
            message: error.original_message(),
            node: Some(error.node().to_owned()),
            namespace: error.namespace().to_vec(),
        }
    }

    /// A failure that happened outside the subgraph (a transport error, a job the
    /// engine rejected), categorized by `category`.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        InstanceFailure {
            category: Category::NODE_EXCEPTION.as_str().to_owned(),
            cause_category: Some(category.as_str().to_owned()),
            message: message.into(),
            node: None,
            namespace: Vec::new(),
        }
    }

    /// The classified category: the cause's when known, else the boundary's.
    pub fn category(&self) -> Category {
        Category::from_name(self.cause_category.as_deref().unwrap_or(&self.category))
    }

    /// The error the fan-out sees, shaped like an in-process subgraph failure: a
    /// [`SubgraphFailure`] of the boundary category whose namespace is `prefix` (the
    /// fan-out node's, [`InstanceRequest::failure`](super::InstanceRequest::failure)
    /// passes it) followed by the reported one, and whose source is the categorized
    /// cause, so a cause-chain classification finds `cause_category` (and its
    /// transience). A boundary category outside graph-engine §4's node-level set is
    /// carried as `node_exception`.
    pub fn into_error(self, prefix: &[String]) -> NodeError {
        let cause = CategorizedError::with_category(
            self.cause_category.as_deref().map(Category::from_name),
            self.message,
        );
        let category = match self.category.as_str() {
            "edge_exception" => RuntimeCategory::EdgeException,
            "reducer_error" => RuntimeCategory::ReducerError,
            "routing_error" => RuntimeCategory::RoutingError,
            "state_validation_error" => RuntimeCategory::StateValidationError,
            _ => RuntimeCategory::NodeException,
        };
        let namespace = prefix.iter().cloned().chain(self.namespace).collect();
        let node = self.node.unwrap_or_default();
        NodeError::new(SubgraphFailure::new(
            category,
            node,
            namespace,
            None,
            Box::new(cause),
        ))
    }
}

/// A state of `template`'s type from its JSON form ([`State::to_json`]): each field of
/// the object set on a copy of `template` (the subgraph's defaults, for a worker).
///
/// # Errors
/// `state_validation_error` when `value` is not an object or a field is undeclared or
/// of the wrong type.
pub fn decode_state<C: State>(template: &C, value: Value) -> Result<C, NodeError> {
    let Value::Object(fields) = value else {
        return Err(CategorizedError::new(
            Category::STATE_VALIDATION_ERROR,
            format!("a fan-out instance state must be a JSON object, got {value}"),
        )
        .into());
    };
    let mut state = template.clone();
    for (field, value) in fields {
        state = state.with_field_json(&field, value)?;
    }
    Ok(state)
}

/// The worker side of a dispatched instance: decodes the job's state onto `graph`'s
/// defaults and runs `graph` as its own invocation (id: the job's key), answering with
/// the final state as JSON or the failure.
pub async fn run_job<C: State>(
    graph: &CompiledGraph<C>,
    job: &InstanceJob,
) -> Result<Value, InstanceFailure> {
    let initial =
        decode_state(graph.defaults(), job.state.clone()).map_err(|error| InstanceFailure {
            category: Category::STATE_VALIDATION_ERROR.as_str().to_owned(),
            cause_category: openarmature_graph::category_of(&error).map(|c| c.as_str().to_owned()),
            message: error.to_string(),
            node: None,
            namespace: Vec::new(),
        })?;
    let options = InvokeOptions::default().invocation_id(job.key.to_string());
    match graph.invoke_with(initial, options).await {
        Ok(done) => Ok(done.state.to_json()),
        Err(error) => Err(InstanceFailure::from_graph_error(&error)),
    }
}
