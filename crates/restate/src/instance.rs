//! Spec: pipeline-utilities §9 — fan-out instances as durable Restate jobs: the
//! `OpenArmatureInstance` service that runs one dispatched instance (or a chunk of
//! consecutive instances) on whichever worker Restate picks.
//!
//! A [`crate::RestateDispatcher`] calls it through the ingress with an idempotency key
//! naming the instance (`{invocation}/{fan-out}/{index}`, the invocation's
//! correlation id, so a checkpoint-resumed parent gets the same key): the first call
//! starts the job, a repeated one (the parent's worker was lost and its turn resumed)
//! attaches to it — running, or finished — instead of running the instance again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
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

/// Consecutive instances of one fan-out execution sent as one job (a
/// [`crate::RestateDispatcher`] with a chunk size above 1): the chunk's key is
/// `{invocation}/{fan-out}/{first}-{last}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkJob {
    /// The instances to run (those of the chunk the parent still needs).
    pub jobs: Vec<InstanceJob>,
}

/// How each instance of a [`ChunkJob`] ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkAnswer {
    /// One answer per job, by instance index.
    pub answers: Vec<IndexedAnswer>,
}

/// One instance's answer in a [`ChunkAnswer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexedAnswer {
    /// The instance index.
    pub index: usize,
    /// How it ended.
    pub answer: InstanceAnswer,
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
        Ok(Json(
            self.journaled(&ctx, job.into_inner(), "instance").await?,
        ))
    }

    /// Runs a chunk of instances concurrently, each answer its own journaled step
    /// (journaled in index order): when the worker is lost mid-chunk, Restate's retry
    /// of the job replays the answers already journaled and runs only the other
    /// instances again.
    #[handler]
    async fn run_chunk(
        &self,
        ctx: Context<'_>,
        chunk: Json<ChunkJob>,
    ) -> Result<Json<ChunkAnswer>, HandlerError> {
        let launcher = Arc::new(Launcher::new(
            chunk.into_inner().jobs,
            Arc::clone(&self.fan_outs),
        ));
        let mut answers = Vec::with_capacity(launcher.len());
        for slot in 0..launcher.len() {
            let index = launcher.index(slot);
            let launcher = Arc::clone(&launcher);
            // Executed only when the journal has no answer for this slot yet (a
            // replayed step returns the journaled answer): the first executed step
            // starts every instance from its slot on, concurrently.
            let answer = ctx
                .run(move || async move { Ok(Json(launcher.answer(slot).await)) })
                .name(format!("instance-{index}"))
                .retry_policy(once())
                .await?;
            answers.push(IndexedAnswer {
                index,
                answer: answer.into_inner(),
            });
        }
        Ok(Json(ChunkAnswer { answers }))
    }
}

/// The journaled steps' retry policy: one attempt (a step never fails: a failed
/// instance is an answer).
fn once() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(200))
        .max_attempts(1)
}

/// A chunk's instances, started on demand: the first slot whose answer is not
/// journaled starts it and every later slot as concurrent tasks (aborted when the
/// chunk's handler ends or is dropped).
struct Launcher {
    indices: Vec<usize>,
    state: Mutex<Vec<Slot>>,
    fan_outs: Arc<HashMap<String, InstanceRunner>>,
}

enum Slot {
    Pending(InstanceJob),
    Started(tokio::task::JoinHandle<InstanceAnswer>),
    Taken,
}

impl Launcher {
    fn new(jobs: Vec<InstanceJob>, fan_outs: Arc<HashMap<String, InstanceRunner>>) -> Self {
        Launcher {
            indices: jobs.iter().map(|j| j.key.index()).collect(),
            state: Mutex::new(jobs.into_iter().map(Slot::Pending).collect()),
            fan_outs,
        }
    }

    fn len(&self) -> usize {
        self.indices.len()
    }

    fn index(&self, slot: usize) -> usize {
        self.indices[slot]
    }

    /// Starts every pending instance from `slot` on, then waits for `slot`'s answer.
    async fn answer(&self, slot: usize) -> InstanceAnswer {
        let handle = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            for entry in state.iter_mut().skip(slot) {
                if let Slot::Pending(_) = entry {
                    let Slot::Pending(job) = std::mem::replace(entry, Slot::Taken) else {
                        continue;
                    };
                    let run = self.fan_outs.get(job.key.fan_out()).cloned();
                    *entry = Slot::Started(tokio::spawn(async move {
                        match run {
                            Some(run) => run(job).await,
                            None => unknown_fan_out(job.key.fan_out()),
                        }
                    }));
                }
            }
            std::mem::replace(&mut state[slot], Slot::Taken)
        };
        match handle {
            Slot::Started(handle) => handle.await.unwrap_or_else(|e| InstanceAnswer::Failed {
                failure: InstanceFailure::new(
                    openarmature_graph::Category::NODE_EXCEPTION,
                    format!("the instance task ended abnormally: {e}"),
                ),
            }),
            Slot::Pending(_) | Slot::Taken => InstanceAnswer::Failed {
                failure: InstanceFailure::new(
                    openarmature_graph::Category::NODE_EXCEPTION,
                    "a chunk slot was asked for twice",
                ),
            },
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for entry in state.iter() {
            if let Slot::Started(handle) = entry {
                handle.abort();
            }
        }
    }
}

/// The answer for a fan-out this worker does not serve.
fn unknown_fan_out(fan_out: &str) -> InstanceAnswer {
    InstanceAnswer::Failed {
        failure: InstanceFailure::new(
            RESTATE_FAN_OUT_UNKNOWN,
            format!("this worker serves no fan-out `{fan_out}` (Worker::fan_out)"),
        ),
    }
}

impl InstanceService {
    /// One instance as one journaled step named `name` (a lost worker is Restate's
    /// invocation retry, which runs the instance again from its entry); a fan-out
    /// this worker does not serve is a failed answer.
    async fn journaled(
        &self,
        ctx: &Context<'_>,
        job: InstanceJob,
        name: impl Into<String>,
    ) -> Result<InstanceAnswer, TerminalError> {
        let Some(run) = self.fan_outs.get(job.key.fan_out()).cloned() else {
            return Ok(unknown_fan_out(job.key.fan_out()));
        };
        let answer = ctx
            .run(|| async move { Ok(Json(run(job).await)) })
            .name(name)
            .retry_policy(once())
            .await?;
        Ok(answer.into_inner())
    }
}
