//! Extension 0004 (spec/extensions/0004-circuit-breaker.md): a circuit breaker per
//! provider endpoint.
//!
//! Closed, it counts outcomes and opens after `consecutive_failures` in a row or a
//! `failure_rate` over the last `window` outcomes. Open, every call fails at once
//! with the non-transient `provider_circuit_open` (nothing is sent, retry does not
//! sleep, failure isolation degrades). After `cooldown` it half-opens: up to
//! `half_open_probes` calls go through; a successful probe closes it, a failed one
//! reopens it. What counts as a failure is a [`Classifier`] decision (default: the
//! spec's transient categories); other answers count as successes (the endpoint
//! answered).
//!
//! State lives behind [`BreakerStore`] ([`InMemoryBreakerStore`] by default) and
//! time comes from a [`MonotonicClock`]. Every transition is reported to the
//! breaker's listeners; [`crate::resilience::ResilientProvider`] also dispatches it
//! as an `openarmature.circuit_breaker.state_change` observer event from the node
//! whose call caused it.

mod machine;
mod sleeper;
mod store;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use openarmature_pipeline::retry::{Classifier, DefaultClassifier};
use openarmature_pipeline::{MonotonicClock, TokioClock};

pub use machine::{Admission, BreakerMachine, BreakerPolicy, BreakerState, Transition};
pub use sleeper::SkipWhileOpen;
pub use store::{BreakerStore, InMemoryBreakerStore};

use crate::error::{ErrorCategory, LlmError, ProviderFailure};

/// The event name of a breaker state change.
pub const STATE_CHANGE_EVENT: &str = "openarmature.circuit_breaker.state_change";

/// Called on every state change, with the endpoint key.
pub type TransitionListener = Arc<dyn Fn(&str, &Transition) + Send + Sync>;

/// A circuit breaker for one provider endpoint. Share it (in an `Arc`, usually
/// through [`crate::resilience::Endpoint`]) across invocations.
pub struct CircuitBreaker {
    endpoint: String,
    policy: BreakerPolicy,
    store: Arc<dyn BreakerStore>,
    clock: Arc<dyn MonotonicClock>,
    failure: Arc<dyn Classifier>,
    listeners: Mutex<Vec<TransitionListener>>,
}

impl std::fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("endpoint", &self.endpoint)
            .field("policy", &self.policy)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// An admitted call. Record its outcome with [`Permit::record`]; dropping it
/// unrecorded (a cancelled call) gives the admission back.
#[must_use]
pub struct Permit<'b> {
    breaker: &'b CircuitBreaker,
    probe: bool,
    done: bool,
}

impl Permit<'_> {
    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Records the call's outcome; returns the state change it caused, if any.
    pub fn record(mut self, outcome: Result<(), &LlmError>) -> Option<Transition> {
        self.done = true;
        let b = self.breaker;
        let failed = outcome.is_err_and(|e| b.counts_as_failure(e));
        let t = b
            .store
            .record(&b.endpoint, &b.policy, self.probe, failed, b.clock.now());
        b.notify(t.as_ref());
        t
    }
}

impl Permit<'_> {
    /// [`Permit::record`] through the store's async seam (what
    /// [`crate::resilience::ResilientProvider`] calls; use it with a shared store).
    pub async fn finish(mut self, outcome: Result<(), &LlmError>) -> Option<Transition> {
        self.done = true;
        let b = self.breaker;
        let failed = outcome.is_err_and(|e| b.counts_as_failure(e));
        let t = b
            .store
            .record_async(&b.endpoint, &b.policy, self.probe, failed, b.clock.now())
            .await;
        b.notify(t.as_ref());
        t
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.breaker
                .store
                .release(&self.breaker.endpoint, self.probe);
        }
    }
}

impl CircuitBreaker {
    /// A breaker for `endpoint` with `policy`, in memory, on the runtime clock.
    pub fn new(endpoint: impl Into<String>, policy: BreakerPolicy) -> Self {
        CircuitBreaker {
            endpoint: endpoint.into(),
            policy,
            store: Arc::new(InMemoryBreakerStore::new()),
            clock: Arc::new(TokioClock::default()),
            failure: Arc::new(DefaultClassifier),
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// Keeps state in `store` (e.g. one shared by many breakers or processes).
    pub fn store(mut self, store: Arc<dyn BreakerStore>) -> Self {
        self.store = store;
        self
    }

    /// Reads time from `clock` (cooldowns).
    pub fn clock(mut self, clock: Arc<dyn MonotonicClock>) -> Self {
        self.clock = clock;
        self
    }

    /// Decides which errors count as failures (default: the spec's transient
    /// categories; e.g. [`crate::resilience::ProviderClassifier`] for per-provider
    /// rules).
    pub fn failure_classifier(mut self, classifier: impl Classifier) -> Self {
        self.failure = Arc::new(classifier);
        self
    }

    /// Adds a state-change listener.
    pub fn on_transition(&self, listener: impl Fn(&str, &Transition) + Send + Sync + 'static) {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(listener));
    }

    /// The endpoint key.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The policy.
    pub fn policy(&self) -> &BreakerPolicy {
        &self.policy
    }

    /// The current state.
    pub fn state(&self) -> BreakerState {
        self.store.state(&self.endpoint)
    }

    /// While open: the cooldown left (`None` when closed, half-open, or due to
    /// half-open at the next call).
    pub fn open_for(&self) -> Option<Duration> {
        self.store
            .open_remaining(&self.endpoint, &self.policy, self.clock.now())
    }

    fn counts_as_failure(&self, error: &LlmError) -> bool {
        let view = error.clone().into_categorized();
        self.failure.is_retryable(&view, None)
    }

    fn notify(&self, transition: Option<&Transition>) {
        let Some(t) = transition else { return };
        let listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for listener in listeners {
            listener(&self.endpoint, t);
        }
    }

    /// Asks to make a call: a [`Permit`], or the `provider_circuit_open` error to
    /// fail with. Also returns the state change the request caused (open →
    /// half-open), if any.
    ///
    /// # Errors
    /// `provider_circuit_open` while open (or while half-open with every probe slot
    /// taken).
    pub fn try_acquire(&self) -> (Result<Permit<'_>, LlmError>, Option<Transition>) {
        let (admission, t) = self
            .store
            .acquire(&self.endpoint, &self.policy, self.clock.now());
        self.notify(t.as_ref());
        (self.admit(admission), t)
    }

    /// [`CircuitBreaker::try_acquire`] through the store's async seam (what
    /// [`crate::resilience::ResilientProvider`] calls; use it with a shared store).
    ///
    /// # Errors
    /// As [`CircuitBreaker::try_acquire`].
    pub async fn acquire(&self) -> (Result<Permit<'_>, LlmError>, Option<Transition>) {
        let (admission, t) = self
            .store
            .acquire_async(&self.endpoint, &self.policy, self.clock.now())
            .await;
        self.notify(t.as_ref());
        (self.admit(admission), t)
    }

    fn admit(&self, admission: Admission) -> Result<Permit<'_>, LlmError> {
        match admission {
            Admission::Admitted { probe } => Ok(Permit {
                breaker: self,
                probe,
                done: false,
            }),
            Admission::Rejected { retry_in } => Err(self.open_error(retry_in)),
        }
    }

    fn open_error(&self, retry_in: Duration) -> LlmError {
        let message = if retry_in.is_zero() {
            format!(
                "circuit breaker for `{}` is half-open and its probes are in flight",
                self.endpoint
            )
        } else {
            format!(
                "circuit breaker for `{}` is open (probing again in {:.3} s)",
                self.endpoint,
                retry_in.as_secs_f64()
            )
        };
        let mut failure = ProviderFailure::new(message);
        failure.retry_after = Some(retry_in);
        LlmError::from_failure(ErrorCategory::ProviderCircuitOpen, failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openarmature_testkit::ManualClock;

    #[test]
    fn open_breaker_fails_fast_with_a_typed_non_transient_error() {
        let clock = ManualClock::new();
        let b = CircuitBreaker::new(
            "e",
            BreakerPolicy {
                consecutive_failures: 2,
                cooldown: Duration::from_secs(5),
                ..BreakerPolicy::default()
            },
        )
        .clock(Arc::new(clock.clone()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        b.on_transition(move |_, t| {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(t.to)
        });
        let down = LlmError::unavailable("down");
        for _ in 0..2 {
            let (p, _) = b.try_acquire();
            if let Ok(p) = p {
                let _ = p.record(Err(&down));
            }
        }
        let (rejected, _) = b.try_acquire();
        let e = rejected.err().map(|e| (e.category(), e.is_transient()));
        assert_eq!(e, Some((ErrorCategory::ProviderCircuitOpen, false)));
        clock.advance(Duration::from_secs(5));
        let (probe, t) = b.try_acquire();
        assert_eq!(t.map(|t| t.to), Some(BreakerState::HalfOpen));
        let closed = probe.ok().and_then(|p| p.record(Ok(())));
        assert_eq!(closed.map(|t| t.to), Some(BreakerState::Closed));
        let states = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(
            states,
            [
                BreakerState::Open,
                BreakerState::HalfOpen,
                BreakerState::Closed
            ]
        );
    }

    #[test]
    fn non_transient_errors_count_as_answers() {
        let b = CircuitBreaker::new(
            "e",
            BreakerPolicy {
                consecutive_failures: 1,
                ..BreakerPolicy::default()
            },
        );
        let bad = LlmError::invalid_request("bad");
        let (p, _) = b.try_acquire();
        assert_eq!(p.ok().and_then(|p| p.record(Err(&bad))), None);
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
