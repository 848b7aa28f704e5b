//! Spec: harness §6 — the signal coordinator: subscriptions registered when a turn
//! suspends, and the lookup from an arriving signal to the paused invocation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use openarmature_graph::suspension::SignalDescriptor;
use openarmature_graph::{BoxError, CompiledGraph, State};

/// Routes signals back to paused invocations. Implementations map a descriptor to a
/// runtime subscription (a callback URL, a topic, a schedule) at suspend time and back
/// at arrival.
pub trait SignalCoordinator: Send + Sync + 'static {
    /// Registers that `invocation_id` awaits `descriptor`. A failure turns the
    /// suspended turn into `harness_signal_subscription_failed` (§6).
    fn subscribe<'a>(
        &'a self,
        invocation_id: &'a str,
        descriptor: &'a SignalDescriptor,
    ) -> BoxFuture<'a, Result<(), BoxError>>;

    /// The paused invocation awaiting `signal_id`, if any.
    fn resolve<'a>(&'a self, signal_id: &'a str)
        -> BoxFuture<'a, Result<Option<String>, BoxError>>;

    /// Forgets the subscription of `invocation_id` (its signal arrived).
    fn unsubscribe<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>>;
}

/// Subscriptions in this process's memory (`signal_id` → invocation id).
#[derive(Debug, Clone, Default)]
pub struct InMemoryCoordinator {
    subscriptions: Arc<Mutex<HashMap<String, String>>>,
}

impl InMemoryCoordinator {
    /// No subscriptions.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many subscriptions are registered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl SignalCoordinator for InMemoryCoordinator {
    fn subscribe<'a>(
        &'a self,
        invocation_id: &'a str,
        descriptor: &'a SignalDescriptor,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.lock()
            .insert(descriptor.signal_id.clone(), invocation_id.to_owned());
        Box::pin(async { Ok(()) })
    }

    fn resolve<'a>(
        &'a self,
        signal_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        let found = self.lock().get(signal_id).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn unsubscribe<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.lock().retain(|_, id| id != invocation_id);
        Box::pin(async { Ok(()) })
    }
}

/// Subscriptions are the paused records themselves: `resolve` lists the graph's paused
/// records awaiting the signal (in its Checkpointer, so every worker sharing a durable
/// one resolves the same signals — nothing is kept in memory).
pub struct PausedStoreCoordinator<S: State> {
    graph: CompiledGraph<S>,
    by_correlation: bool,
}

impl<S: State> PausedStoreCoordinator<S> {
    /// Resolves signals against `graph`'s paused records.
    pub fn new(graph: CompiledGraph<S>) -> Self {
        PausedStoreCoordinator {
            graph,
            by_correlation: false,
        }
    }

    /// Like [`PausedStoreCoordinator::new`], but `resolve` answers the paused record's
    /// *correlation id* instead of its invocation id: the key a durable runtime files
    /// the whole invocation under (openarmature-restate's workflow key), which stays
    /// the same across checkpoint resumes while the engine's invocation id does not.
    pub fn by_correlation(graph: CompiledGraph<S>) -> Self {
        PausedStoreCoordinator {
            graph,
            by_correlation: true,
        }
    }
}

impl<S: State> SignalCoordinator for PausedStoreCoordinator<S> {
    fn subscribe<'a>(
        &'a self,
        _invocation_id: &'a str,
        _descriptor: &'a SignalDescriptor,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        // The paused record, already persisted, is the subscription.
        Box::pin(async { Ok(()) })
    }

    fn resolve<'a>(
        &'a self,
        signal_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            let records = self.graph.paused_records(Some(signal_id)).await?;
            Ok(records.into_iter().next().map(|r| {
                if self.by_correlation {
                    r.correlation_id
                } else {
                    r.invocation_id
                }
            }))
        })
    }

    fn unsubscribe<'a>(&'a self, _invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
}
