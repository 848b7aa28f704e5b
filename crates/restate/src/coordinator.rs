//! Spec: harness §6 — the signal coordinator of a Restate deployment.

use futures::future::BoxFuture;
use openarmature_graph::suspension::SignalDescriptor;
use openarmature_graph::{BoxError, CompiledGraph, State};
use openarmature_harness::SignalCoordinator;

/// Signals on Restate: a suspended run's subscription is its paused record (in the
/// graph's Checkpointer, shared by every worker) plus the durable promise its workflow
/// waits on. `resolve` maps a signal id to the *workflow key* of the invocation
/// awaiting it (the paused record's correlation id, which is the invocation id the
/// caller submitted), which [`crate::RestateClient::signal`] delivers to.
pub struct RestateCoordinator<S: State> {
    graph: CompiledGraph<S>,
}

impl<S: State> RestateCoordinator<S> {
    /// Resolves signals against `graph`'s paused records.
    pub fn new(graph: CompiledGraph<S>) -> Self {
        RestateCoordinator { graph }
    }
}

impl<S: State> SignalCoordinator for RestateCoordinator<S> {
    fn subscribe<'a>(
        &'a self,
        _invocation_id: &'a str,
        _descriptor: &'a SignalDescriptor,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        // The persisted paused record and the workflow's promise are the subscription.
        Box::pin(async { Ok(()) })
    }

    fn resolve<'a>(
        &'a self,
        signal_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            let records = self.graph.paused_records(Some(signal_id)).await?;
            Ok(records.into_iter().next().map(|r| r.correlation_id))
        })
    }

    fn unsubscribe<'a>(&'a self, _invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
}
