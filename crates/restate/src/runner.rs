//! The graph side of a durable invocation: one turn of the served harness, started
//! fresh or re-entered where the Checkpointer says the invocation stopped.
//!
//! The workflow key (the caller's invocation id) is both the first engine
//! invocation's id and the correlation id of every record it leaves: a checkpoint
//! resume keeps the correlation id (and mints a new invocation id), so the newest
//! record with that correlation id is where the invocation stands, however many
//! workers it has crossed.

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::CheckpointFilter;
use openarmature_graph::suspension::PausedStatus;
use openarmature_graph::{BoxError, InvokeOptions, State};
use openarmature_harness::{Harness, Transmission};
use serde_json::Value;

use crate::error::RestateError;
use crate::step::Step;

/// A served graph with its state type erased: what the workflow's handlers call.
pub(crate) trait DurableGraph: Send + Sync + 'static {
    /// The turn of invocation `key` with `payload`: fresh when nothing was recorded
    /// for it, otherwise re-entered from its newest record (a suspended one is
    /// acknowledged again without running anything).
    ///
    /// `Err` only when the store could not be consulted (nothing ran).
    fn start(&self, key: String, payload: Value) -> BoxFuture<'static, Result<Step, BoxError>>;

    /// Delivers `signal` to the paused engine invocation `paused` of `key`. When the
    /// record was already claimed (a worker died after claiming it), the invocation
    /// re-enters from its newest record instead.
    fn resume(
        &self,
        key: String,
        paused: String,
        payload: Value,
        signal: Value,
    ) -> BoxFuture<'static, Result<Step, BoxError>>;
}

impl<S: State> DurableGraph for Harness<S> {
    fn start(&self, key: String, payload: Value) -> BoxFuture<'static, Result<Step, BoxError>> {
        let harness = self.clone();
        Box::pin(async move { start(&harness, &key, payload).await })
    }

    fn resume(
        &self,
        key: String,
        paused: String,
        payload: Value,
        signal: Value,
    ) -> BoxFuture<'static, Result<Step, BoxError>> {
        let harness = self.clone();
        Box::pin(async move {
            let record = harness.graph().paused_record(&paused).await?;
            match record {
                Some(r) if r.status == PausedStatus::Suspended => {
                    let turn = harness
                        .handle_with(
                            Transmission::signal_for(paused, signal),
                            InvokeOptions::default(),
                        )
                        .await;
                    Ok(Step::of(&turn.outbound))
                }
                // Claimed by an earlier attempt of this same step: its merged state was
                // checkpointed before the claim, so the chain continues from there.
                _ => start(&harness, &key, payload).await,
            }
        })
    }
}

/// The engine invocation `key` stands at: the newest record whose correlation id is
/// `key`.
async fn latest<S: State>(harness: &Harness<S>, key: &str) -> Result<Option<String>, BoxError> {
    let checkpointer = harness
        .graph()
        .checkpointer()
        .ok_or(RestateError::NoCheckpointer)?;
    let filter = CheckpointFilter::new().correlation_id(key);
    let records = checkpointer.list(Some(&filter)).await?;
    Ok(records
        .into_iter()
        .max_by_key(|r| r.last_saved_at)
        .map(|r| r.invocation_id))
}

async fn start<S: State>(
    harness: &Harness<S>,
    key: &str,
    payload: Value,
) -> Result<Step, BoxError> {
    let options = match latest(harness, key).await? {
        Some(id) => {
            if let Some(record) = harness.graph().paused_record(&id).await? {
                if record.status == PausedStatus::Suspended {
                    return Ok(Step::SuspendedAcknowledgment {
                        invocation_id: record.invocation_id,
                        descriptor: record.descriptor,
                    });
                }
            }
            InvokeOptions::default().resume_invocation(id)
        }
        None => InvokeOptions::default()
            .invocation_id(key)
            .correlation_id(key),
    };
    let turn = harness
        .handle_with(Transmission::new(payload), options)
        .await;
    Ok(Step::of(&turn.outbound))
}
