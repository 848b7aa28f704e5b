//! Where breaker state lives. The trait runs the [`BreakerMachine`] operations
//! atomically per endpoint; [`InMemoryBreakerStore`] is the process-local default.
//! A shared store (many worker processes) implements the same three operations
//! atomically (e.g. a compare-and-set on a serialized machine, or a server-side
//! script) and passes a wall-clock `now`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;

use super::machine::{Admission, BreakerMachine, BreakerPolicy, BreakerState, Transition};

/// Stores per-endpoint breaker state. Every method is atomic per endpoint.
pub trait BreakerStore: Send + Sync + 'static {
    /// [`BreakerMachine::acquire`] on `endpoint`'s record.
    fn acquire(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> (Admission, Option<Transition>);

    /// [`BreakerMachine::record`] on `endpoint`'s record.
    fn record(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> Option<Transition>;

    /// [`BreakerMachine::release`] on `endpoint`'s record.
    fn release(&self, endpoint: &str, probe: bool);

    /// `endpoint`'s state.
    fn state(&self, endpoint: &str) -> BreakerState;

    /// [`BreakerMachine::open_remaining`] on `endpoint`'s record.
    fn open_remaining(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> Option<Duration>;

    /// [`BreakerStore::acquire`], awaited by [`super::CircuitBreaker::acquire`]: a store
    /// on the network (shared by many processes) overrides it so the runtime is never
    /// blocked. The default runs the synchronous method.
    fn acquire_async<'a>(
        &'a self,
        endpoint: &'a str,
        policy: &'a BreakerPolicy,
        now: Duration,
    ) -> BoxFuture<'a, (Admission, Option<Transition>)> {
        Box::pin(std::future::ready(self.acquire(endpoint, policy, now)))
    }

    /// [`BreakerStore::record`], awaited by [`super::Permit::finish`]. The default runs
    /// the synchronous method.
    fn record_async<'a>(
        &'a self,
        endpoint: &'a str,
        policy: &'a BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> BoxFuture<'a, Option<Transition>> {
        Box::pin(std::future::ready(
            self.record(endpoint, policy, probe, failed, now),
        ))
    }
}

/// Breaker state in this process's memory.
#[derive(Debug, Default)]
pub struct InMemoryBreakerStore {
    machines: Mutex<HashMap<String, BreakerMachine>>,
}

impl InMemoryBreakerStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryBreakerStore::default()
    }

    fn with<T>(&self, endpoint: &str, f: impl FnOnce(&mut BreakerMachine) -> T) -> T {
        let mut map: MutexGuard<'_, _> =
            self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        f(map.entry(endpoint.to_owned()).or_default())
    }
}

impl BreakerStore for InMemoryBreakerStore {
    fn acquire(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> (Admission, Option<Transition>) {
        self.with(endpoint, |m| m.acquire(policy, now))
    }

    fn record(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> Option<Transition> {
        self.with(endpoint, |m| m.record(policy, probe, failed, now))
    }

    fn release(&self, endpoint: &str, probe: bool) {
        self.with(endpoint, |m| m.release(probe));
    }

    fn state(&self, endpoint: &str) -> BreakerState {
        self.with(endpoint, |m| m.state())
    }

    fn open_remaining(
        &self,
        endpoint: &str,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> Option<Duration> {
        self.with(endpoint, |m| m.open_remaining(policy, now))
    }
}
