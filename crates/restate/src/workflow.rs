//! The Restate workflow that serves a graph: `run` (one per invocation id, the
//! workflow key), `signal` and `status` (shared handlers).
//!
//! Retry rule (so Restate's retries never multiply the LLM call-level ones):
//! - a graph turn is one journaled step whose closure never fails with the graph's
//!   errors: a failed turn is journaled as an `error_response` result, final. The
//!   graph's own lanes (call-level LLM retry, retry middleware) already ran.
//! - the step fails (and Restate retries it, at most [`STORE_ATTEMPTS`] times) only
//!   when the Checkpointer could not be consulted before anything ran;
//! - a lost worker (crash, kill, lost connection) is retried by Restate's invocation
//!   retry policy: the replayed step re-enters the graph at its newest checkpoint, so
//!   only the node attempts (or fan-out instances) in flight at the loss run again —
//!   each of their LLM calls is sent at most once more per lost worker.

use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runner::DurableGraph;
use crate::step::Step;

/// The name the workflow is registered under.
pub const SERVICE_NAME: &str = "OpenArmatureGraph";

/// The workflow state key naming the signal a suspended run awaits.
const AWAITING: &str = "awaiting";

/// The category of a signal payload the suspended state cannot take.
const RESUME_PAYLOAD_INVALID: &str = "suspension_resume_payload_invalid";

/// How often a step that could not consult the Checkpointer is attempted.
pub const STORE_ATTEMPTS: u32 = 5;

/// What a suspended workflow awaits: the answer of the `status` and `signal` handlers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Awaiting {
    /// Which suspension of the run this is (1 for the first).
    pub round: u32,
    /// The paused engine invocation.
    pub invocation_id: String,
    /// The awaited signal id.
    pub signal_id: String,
    /// The error payload of the previous signal, when it was refused
    /// (`suspension_resume_payload_invalid`: it does not fit the state) and the run
    /// went on waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Value>,
}

impl Awaiting {
    fn promise(round: u32) -> String {
        format!("signal-{round}")
    }
}

/// The workflow: a served graph, its state type erased.
pub(crate) struct GraphWorkflow {
    pub(crate) graph: Arc<dyn DurableGraph>,
}

/// The registered options both services start from (a worker's
/// [`crate::Worker::options`] are applied on top, for the workflow): inactivity
/// timeout 1 min, abort timeout 30 min (a turn running longer is aborted and
/// retried), and the invocation retry policy after a lost worker — 100 ms doubling to
/// 2 s, 200 attempts, then paused (resumable from the Restate CLI / UI).
pub(crate) fn default_options() -> ServiceOptions {
    ServiceOptions::new()
        .inactivity_timeout(Duration::from_secs(60))
        .abort_timeout(Duration::from_secs(30 * 60))
        .retry_policy_initial_interval(Duration::from_millis(100))
        .retry_policy_exponentiation_factor(2.0)
        .retry_policy_max_interval(Duration::from_secs(2))
        .retry_policy_max_attempts(200)
        .retry_policy_pause_on_max_attempts()
}

fn store_retry() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(200))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(5))
        .max_attempts(STORE_ATTEMPTS)
}

#[restate_sdk::workflow(name = "OpenArmatureGraph")]
impl GraphWorkflow {
    /// Runs the graph for the invocation id the workflow is keyed by: fresh, or from
    /// its newest checkpoint; a suspension waits on a durable promise the `signal`
    /// handler resolves, then resumes (on whichever worker Restate picks).
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        input: Json<Value>,
    ) -> Result<Json<Step>, HandlerError> {
        let key = ctx.key().to_owned();
        let payload = input.into_inner();
        let graph = Arc::clone(&self.graph);
        let (k, p) = (key.clone(), payload.clone());
        let mut step = ctx
            .run(|| async move { Ok(Json(graph.start(k, p).await?)) })
            .name("graph")
            .retry_policy(store_retry())
            .await?
            .into_inner();
        let mut round = 0u32;
        let mut rejected = None;
        while let Step::SuspendedAcknowledgment {
            invocation_id,
            descriptor,
        } = &step
        {
            round += 1;
            let awaiting = Awaiting {
                round,
                invocation_id: invocation_id.clone(),
                signal_id: descriptor.signal_id.clone(),
                rejected: rejected.take(),
            };
            let waiting = step.clone();
            ctx.set(AWAITING, Json(awaiting.clone()));
            let signal = ctx
                .promise::<Json<Value>>(&Awaiting::promise(round))
                .await?
                .into_inner();
            let graph = Arc::clone(&self.graph);
            let (k, p) = (key.clone(), payload.clone());
            step = ctx
                .run(|| async move {
                    Ok(Json(
                        graph.resume(k, awaiting.invocation_id, p, signal).await?,
                    ))
                })
                .name(format!("resume-{round}"))
                .retry_policy(store_retry())
                .await?
                .into_inner();
            // A payload that does not fit the state left the run suspended (nothing was
            // claimed): wait for the next signal instead of ending the workflow.
            if step.error_category() == Some(RESUME_PAYLOAD_INVALID) {
                if let Step::ErrorResponse { error } = step {
                    rejected = Some(error);
                }
                step = waiting;
            }
        }
        ctx.clear(AWAITING);
        Ok(Json(step))
    }

    /// Delivers a signal payload (an object of state fields) to the suspended run.
    /// Rejected with 409 when the run awaits nothing.
    #[handler]
    async fn signal(
        &self,
        ctx: SharedWorkflowContext<'_>,
        payload: Json<Value>,
    ) -> Result<Json<Awaiting>, HandlerError> {
        let Some(Json(awaiting)) = ctx.get::<Json<Awaiting>>(AWAITING).await? else {
            return Err(TerminalError::new_with_code(409, "the workflow awaits no signal").into());
        };
        ctx.resolve_promise(&Awaiting::promise(awaiting.round), payload);
        Ok(Json(awaiting))
    }

    /// The signal the run awaits (`null` when it awaits none).
    #[handler]
    async fn status(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<Option<Awaiting>>, HandlerError> {
        let awaiting = ctx.get::<Json<Awaiting>>(AWAITING).await?;
        Ok(Json(awaiting.map(Json::into_inner)))
    }
}
