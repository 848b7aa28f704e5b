//! Spec: pipeline-utilities §9 — fan-out instances as durable Restate jobs: the
//! `OpenArmatureInstance` service that runs one dispatched instance on whichever
//! worker Restate picks.
//!
//! A [`crate::RestateDispatcher`] calls it through the ingress with an idempotency key
//! naming the instance (`{invocation}/{fan-out}/{index}`, the invocation's
//! correlation id, so a checkpoint-resumed parent gets the same key): the first call
//! starts the job, a repeated one (the parent's worker was lost and its turn resumed)
//! attaches to it — running, or finished — instead of running the instance again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{CompiledGraph, State};
use openarmature_pipeline::dispatch::{run_job, InstanceFailure, InstanceJob};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::RESTATE_FAN_OUT_UNKNOWN;

/// The name the instance service is registered under.
pub const INSTANCE_SERVICE_NAME: &str = "OpenArmatureInstance";

/// How a dispatched instance ended, as the instance service journals and answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum InstanceAnswer {
    /// The subgraph reached `END`: its final state.
    Completed {
        /// The final subgraph state as JSON.
        state: Value,
    },
    /// The subgraph failed (final: the fan-out's error policy and instance middleware
    /// decide what happens next, not Restate).
    Failed {
        /// The failure's categories and message.
        failure: InstanceFailure,
    },
}

/// A fan-out's subgraph with its state type erased.
pub(crate) type InstanceRunner =
    Arc<dyn Fn(InstanceJob) -> BoxFuture<'static, InstanceAnswer> + Send + Sync>;

/// The runner of `graph`'s instances.
pub(crate) fn runner<C: State>(graph: CompiledGraph<C>) -> InstanceRunner {
    Arc::new(move |job: InstanceJob| {
        let graph = graph.clone();
        Box::pin(async move {
            match run_job(&graph, &job).await {
                Ok(state) => InstanceAnswer::Completed { state },
                Err(failure) => InstanceAnswer::Failed { failure },
            }
        })
    })
}

/// The instance service: the subgraph of every fan-out this worker serves, by the
/// fan-out node's path.
pub(crate) struct InstanceService {
    pub(crate) fan_outs: Arc<HashMap<String, InstanceRunner>>,
}

#[restate_sdk::service(name = "OpenArmatureInstance")]
impl InstanceService {
    /// Runs one fan-out instance to its final state (one journaled step; a lost worker
    /// is Restate's invocation retry, which runs the instance again from its entry).
    #[handler]
    async fn run(
        &self,
        ctx: Context<'_>,
        job: Json<InstanceJob>,
    ) -> Result<Json<InstanceAnswer>, HandlerError> {
        let job = job.into_inner();
        let Some(run) = self.fan_outs.get(job.key.fan_out()).cloned() else {
            let failure = InstanceFailure::new(
                RESTATE_FAN_OUT_UNKNOWN,
                format!(
                    "this worker serves no fan-out `{}` (Worker::fan_out)",
                    job.key.fan_out()
                ),
            );
            return Ok(Json(InstanceAnswer::Failed { failure }));
        };
        let answer = ctx
            .run(|| async move { Ok(Json(run(job).await)) })
            .name("instance")
            .retry_policy(
                RunRetryPolicy::new()
                    .initial_delay(Duration::from_millis(200))
                    .max_attempts(1),
            )
            .await?;
        Ok(answer)
    }
}
