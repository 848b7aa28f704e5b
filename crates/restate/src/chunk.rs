//! Spec: pipeline-utilities §9 — chunked dispatch: the concurrent `dispatch` calls of
//! one fan-out execution coalesced into jobs of k consecutive instances.
//!
//! Chunk c of an execution covers the instances `c·k ..= min(c·k + k, n) − 1` (k: the
//! dispatcher's chunk size, capped by the fan-out's concurrency bound, so a chunk can
//! always fill). A call joins its chunk's open batch; the batch is sent as one Restate
//! job (key `{invocation}/{fan-out}/{first}-{last}`, the chunk's bounds) as soon as
//! every instance of the chunk has joined, or — when some never will (a resumed run
//! skips the instances recorded complete) — once no job of the execution is in flight
//! and no call has joined for the linger time. Each call is completed from the job's
//! answer for its instance; an instance the answer lacks (the key attached to a job
//! sent earlier with other members, e.g. before a checkpoint resume) is dispatched
//! alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use openarmature_pipeline::dispatch::InstanceJob;
use reqwest::Method;
use tokio::sync::oneshot;

use crate::client::RestateClient;
use crate::error::RestateError;
use crate::instance::{ChunkAnswer, ChunkJob, InstanceAnswer, INSTANCE_SERVICE_NAME};

/// What a call waiting in a batch receives: its instance's answer, `None` when the
/// job's answer has none for it, or the job's failure.
pub(crate) type Reply = Result<Option<InstanceAnswer>, Arc<RestateError>>;

/// One fan-out execution: its run key (correlation or invocation id), the fan-out
/// path and the fan-out node's attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Execution {
    run: String,
    fan_out: String,
    node_attempt: u32,
}

#[derive(Debug, Default)]
struct Open {
    /// Chunk number → the batch still collecting.
    batches: HashMap<usize, Batch>,
    /// Jobs sent and not answered yet.
    in_flight: usize,
    /// When the last call joined.
    last_join: Option<Instant>,
}

#[derive(Debug)]
struct Batch {
    /// The chunk's idempotency key.
    key: String,
    /// How many instances the chunk covers.
    size: usize,
    members: Vec<(InstanceJob, oneshot::Sender<Reply>)>,
}

/// Where a call goes: the chunk's bounds and the execution's identity.
pub(crate) struct Slot {
    /// The chunk number.
    pub(crate) chunk: usize,
    /// The chunk's first and last instance.
    pub(crate) bounds: (usize, usize),
    /// Suffix of the key for a re-attempted fan-out node (empty on its first attempt).
    pub(crate) suffix: String,
}

/// The open batches of every execution a dispatcher serves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chunker {
    open: Arc<Mutex<HashMap<Execution, Open>>>,
}

impl Chunker {
    /// Adds `job` to its chunk's batch; the receiver gets its answer.
    pub(crate) fn join(
        &self,
        client: &RestateClient,
        linger: Duration,
        slot: Slot,
        job: InstanceJob,
    ) -> oneshot::Receiver<Reply> {
        let (tx, rx) = oneshot::channel();
        let execution = Execution {
            run: job
                .key
                .correlation_id()
                .unwrap_or(job.key.invocation_id())
                .to_owned(),
            fan_out: job.key.fan_out().to_owned(),
            node_attempt: job.node_attempt,
        };
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let state = open.entry(execution.clone()).or_default();
        state.last_join = Some(Instant::now());
        let (first, last) = slot.bounds;
        let batch = state.batches.entry(slot.chunk).or_insert_with(|| {
            self.watch(client.clone(), linger, execution.clone(), slot.chunk);
            Batch {
                key: format!(
                    "{}/{}/{first}-{last}{}",
                    execution.run, execution.fan_out, slot.suffix
                ),
                size: last - first + 1,
                members: Vec::new(),
            }
        });
        // Calls of an execution dropped meanwhile (its turn was lost and resumed in this
        // process under the same correlation id) make room for the new ones.
        batch.members.retain(|(_, waiting)| !waiting.is_closed());
        batch.members.push((job, tx));
        if batch.members.len() >= batch.size {
            if let Some(full) = state.batches.remove(&slot.chunk) {
                state.in_flight += 1;
                self.send(client.clone(), execution, full);
            }
        }
        rx
    }

    /// Sends the batch of `chunk` once the execution is idle (no job in flight, no
    /// call joined for `linger`), unless it filled and left first.
    fn watch(&self, client: RestateClient, linger: Duration, execution: Execution, chunk: usize) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(linger).await;
                let mut open = this.open.lock().unwrap_or_else(PoisonError::into_inner);
                let Some(state) = open.get_mut(&execution) else {
                    return;
                };
                let Some(batch) = state.batches.get_mut(&chunk) else {
                    return;
                };
                // Calls dropped meanwhile (fail-fast, a cancelled invocation) leave.
                batch.members.retain(|(_, tx)| !tx.is_closed());
                if batch.members.is_empty() {
                    state.batches.remove(&chunk);
                    this.forget_if_idle(&mut open, &execution);
                    return;
                }
                let idle = state.last_join.is_none_or(|t| t.elapsed() >= linger);
                if state.in_flight == 0 && idle {
                    if let Some(batch) = state.batches.remove(&chunk) {
                        state.in_flight += 1;
                        drop(open);
                        this.send(client, execution, batch);
                    }
                    return;
                }
            }
        });
    }

    /// Sends `batch` as one job and completes its calls from the answer.
    fn send(&self, client: RestateClient, execution: Execution, batch: Batch) {
        let this = self.clone();
        tokio::spawn(async move {
            let Batch { key, members, .. } = batch;
            let (jobs, waiting): (Vec<_>, Vec<_>) = members.into_iter().unzip();
            let indices: Vec<usize> = jobs.iter().map(|j| j.key.index()).collect();
            let answer = call(&client, &key, ChunkJob { jobs }).await;
            match answer {
                Ok(ChunkAnswer { answers }) => {
                    let mut by_index: HashMap<usize, InstanceAnswer> =
                        answers.into_iter().map(|a| (a.index, a.answer)).collect();
                    for (index, tx) in indices.into_iter().zip(waiting) {
                        let _ = tx.send(Ok(by_index.remove(&index)));
                    }
                }
                Err(e) => {
                    let e = Arc::new(e);
                    for tx in waiting {
                        let _ = tx.send(Err(Arc::clone(&e)));
                    }
                }
            }
            let mut open = this.open.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(state) = open.get_mut(&execution) {
                state.in_flight = state.in_flight.saturating_sub(1);
            }
            this.forget_if_idle(&mut open, &execution);
        });
    }

    /// Drops the execution's entry when nothing of it is open or in flight.
    fn forget_if_idle(&self, open: &mut HashMap<Execution, Open>, execution: &Execution) {
        if open
            .get(execution)
            .is_some_and(|s| s.in_flight == 0 && s.batches.is_empty())
        {
            open.remove(execution);
        }
    }
}

/// One chunk job through the ingress, deduplicated by `key`.
async fn call(
    client: &RestateClient,
    key: &str,
    job: ChunkJob,
) -> Result<ChunkAnswer, RestateError> {
    let path = format!("{INSTANCE_SERVICE_NAME}/run_chunk");
    let malformed = |reason: String| RestateError::Malformed {
        operation: "dispatch",
        url: path.clone(),
        reason,
    };
    let body = serde_json::to_value(&job).map_err(|e| malformed(e.to_string()))?;
    let answer = client
        .call("dispatch", Method::POST, &path, Some(&body), Some(key))
        .await?;
    serde_json::from_value(answer).map_err(|e| malformed(e.to_string()))
}
