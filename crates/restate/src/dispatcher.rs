//! Spec: pipeline-utilities §9 — the Restate fan-out dispatcher: each instance a
//! durable job on whichever worker Restate picks.

use futures::future::BoxFuture;
use openarmature_graph::{CategorizedError, NodeError, State};
use openarmature_pipeline::dispatch::{decode_state, FanOutDispatcher, InstanceRequest};
use reqwest::Method;

use crate::client::RestateClient;
use crate::error::RestateError;
use crate::instance::{InstanceAnswer, INSTANCE_SERVICE_NAME};

/// Sends every fan-out instance to the `OpenArmatureInstance` service through the
/// Restate ingress, as a call with an idempotency key naming the instance
/// ([`RestateDispatcher::job_key`]), and turns the answer back into the instance's
/// final state or its failure.
///
/// The fan-out node keeps everything else: the concurrency bound (that many calls at
/// most), the error policy (fail-fast drops the pending calls; the jobs already
/// started finish on their own), instance middleware (a retry is a new attempt, so a
/// new key), degrade, the per-instance checkpoint progress and the fan-in in item
/// order. The workers serving the instances must register the fan-out's subgraph
/// under its path with [`crate::Worker::fan_out`].
#[derive(Debug, Clone)]
pub struct RestateDispatcher {
    client: RestateClient,
}

impl RestateDispatcher {
    /// Dispatches through the ingress at `ingress_url`.
    pub fn new(ingress_url: impl Into<String>) -> Self {
        RestateDispatcher {
            client: RestateClient::new(ingress_url),
        }
    }

    /// Dispatches through `client`'s ingress.
    pub fn with_client(client: RestateClient) -> Self {
        RestateDispatcher { client }
    }

    /// The idempotency key of a request: `{correlation}/{fan-out}/{index}` (the same
    /// for a run and its checkpoint resumes), suffixed `#{attempt}.{node_attempt}`
    /// when either attempt is not the first, so a retried instance is a new job.
    pub fn job_key<C: State>(request: &InstanceRequest<'_, C>) -> String {
        let key = request.key().run_key();
        match (request.attempt(), request.node_attempt()) {
            (0, 0) => key,
            (attempt, node) => format!("{key}#{attempt}.{node}"),
        }
    }
}

impl<C: State> FanOutDispatcher<C> for RestateDispatcher {
    fn dispatch<'a>(
        &'a self,
        request: InstanceRequest<'a, C>,
    ) -> BoxFuture<'a, Result<C, NodeError>> {
        Box::pin(async move {
            let job = request.job();
            let body = serde_json::to_value(&job).map_err(|e| {
                NodeError::from(CategorizedError::new(
                    openarmature_graph::Category::STATE_VALIDATION_ERROR,
                    format!("fan-out instance {} does not encode: {e}", job.key),
                ))
            })?;
            let path = format!("{INSTANCE_SERVICE_NAME}/run");
            let answer = self
                .client
                .call(
                    "dispatch",
                    Method::POST,
                    &path,
                    Some(&body),
                    Some(&Self::job_key(&request)),
                )
                .await
                .map_err(unavailable)?;
            let answer: InstanceAnswer = serde_json::from_value(answer).map_err(|e| {
                unavailable(RestateError::Malformed {
                    operation: "dispatch",
                    url: path.clone(),
                    reason: e.to_string(),
                })
            })?;
            match answer {
                InstanceAnswer::Completed { state } => {
                    decode_state(request.graph().defaults(), state)
                }
                InstanceAnswer::Failed { failure } => Err(request.failure(failure)),
            }
        })
    }
}

fn unavailable(e: RestateError) -> NodeError {
    NodeError::from(CategorizedError::new(e.category(), e.to_string()))
}
