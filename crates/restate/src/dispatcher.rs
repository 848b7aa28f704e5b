//! Spec: pipeline-utilities §9 — the Restate fan-out dispatcher: each instance (or
//! each chunk of consecutive instances) a durable job on whichever worker Restate
//! picks.

use std::num::NonZeroUsize;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{CategorizedError, NodeError, State};
use openarmature_pipeline::dispatch::{decode_state, FanOutDispatcher, InstanceRequest};
use reqwest::Method;

use crate::chunk::{Chunker, Slot};
use crate::client::RestateClient;
use crate::error::RestateError;
use crate::instance::{InstanceAnswer, INSTANCE_SERVICE_NAME};

/// How long a chunk that cannot fill waits for more instances by default.
pub const DEFAULT_CHUNK_LINGER: Duration = Duration::from_millis(20);

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
///
/// With [`RestateDispatcher::chunk_size`] k > 1, k consecutive instances travel as
/// one job (see the method).
#[derive(Debug, Clone)]
pub struct RestateDispatcher {
    client: RestateClient,
    chunk: NonZeroUsize,
    linger: Duration,
    chunker: Chunker,
}

impl RestateDispatcher {
    /// Dispatches through the ingress at `ingress_url`.
    pub fn new(ingress_url: impl Into<String>) -> Self {
        RestateDispatcher::with_client(RestateClient::new(ingress_url))
    }

    /// Dispatches through `client`'s ingress.
    pub fn with_client(client: RestateClient) -> Self {
        RestateDispatcher {
            client,
            chunk: NonZeroUsize::MIN,
            linger: DEFAULT_CHUNK_LINGER,
            chunker: Chunker::default(),
        }
    }

    /// Sends `size` consecutive instances of a fan-out execution as one durable job
    /// (default 1: one job per instance), keyed `{invocation}/{fan-out}/{first}-{last}`:
    /// far fewer Restate invocations for 10^5+ items. On the worker each instance of
    /// the chunk is its own journaled step, run concurrently with the others; a worker
    /// lost mid-chunk costs only the chunk's instances not journaled yet (Restate's
    /// retry of the job replays the rest), and a resumed parent re-sends the chunk's
    /// unrecorded instances under the same key, attaching to the job. The fan-out node
    /// still records each instance's progress and fans in by item order; its error
    /// policy, degrade and concurrency bound keep their meaning (a chunk never exceeds
    /// the bound: k is capped by it, so keep the bound a multiple of k to keep every
    /// chunk full). A re-attempted instance (instance retry middleware) is sent alone.
    #[must_use]
    pub fn chunk_size(mut self, size: NonZeroUsize) -> Self {
        self.chunk = size;
        self
    }

    /// How long a chunk that cannot fill (a resumed run skips the instances recorded
    /// complete) waits, with nothing of its fan-out in flight, before it is sent
    /// partial (default [`DEFAULT_CHUNK_LINGER`]).
    #[must_use]
    pub fn chunk_linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// The chunk `request` belongs to, `None` when it travels alone (chunk size 1, or
    /// a re-attempted instance).
    fn slot<C: State>(&self, request: &InstanceRequest<'_, C>) -> Option<Slot> {
        let size = self.chunk.get().min(request.concurrency());
        if size <= 1 || request.attempt() != 0 {
            return None;
        }
        let index = request.key().index();
        let chunk = index / size;
        let first = chunk * size;
        let last = (first + size).min(request.instance_count()).max(first + 1) - 1;
        let suffix = match request.node_attempt() {
            0 => String::new(),
            node => format!("#0.{node}"),
        };
        Some(Slot {
            chunk,
            bounds: (first, last),
            suffix,
        })
    }

    /// One instance as its own job.
    async fn alone<C: State>(&self, request: &InstanceRequest<'_, C>) -> Result<C, NodeError> {
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
                Some(&Self::job_key(request)),
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
        outcome(request, answer)
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
            let Some(slot) = self.slot(&request) else {
                return self.alone(&request).await;
            };
            let reply = self
                .chunker
                .join(&self.client, self.linger, slot, request.job())
                .await;
            match reply {
                Ok(Ok(Some(answer))) => outcome(&request, answer),
                // The chunk's key attached to a job sent with other instances.
                Ok(Ok(None)) => self.alone(&request).await,
                Ok(Err(e)) => Err(NodeError::from(CategorizedError::new(
                    e.category(),
                    e.to_string(),
                ))),
                Err(_) => Err(unavailable(RestateError::Unavailable {
                    operation: "dispatch",
                    url: format!("{INSTANCE_SERVICE_NAME}/run_chunk"),
                    message: "the chunk job was dropped before it answered".into(),
                })),
            }
        })
    }
}

/// The instance's final state or failure from its answer.
fn outcome<C: State>(
    request: &InstanceRequest<'_, C>,
    answer: InstanceAnswer,
) -> Result<C, NodeError> {
    match answer {
        InstanceAnswer::Completed { state } => decode_state(request.graph().defaults(), state),
        InstanceAnswer::Failed { failure } => Err(request.failure(failure)),
    }
}

fn unavailable(e: RestateError) -> NodeError {
    NodeError::from(CategorizedError::new(e.category(), e.to_string()))
}
