//! Spec: pipeline-utilities §6.1 — retry.
//!
//! [`RetryConfig`] is the retry configuration record shared by both retry lanes:
//! node-level [`RetryMiddleware`] here, and the LLM call-level `complete(.., retry)`
//! in `openarmature-llm`.
//!
//! # Two lanes, and the multiplicative budget
//!
//! Node-level retry re-runs the whole node (every LLM call in it); call-level retry
//! re-sends one call. Stacking both multiplies attempts: a node retry of 3 around a
//! call retry of 5 can send 15 requests for one logical call. Retry transient
//! provider errors at the call level, and keep node-level retry for failures only
//! a whole re-run can fix.

mod backoff;
mod budget;
mod classifier;
mod decision;
mod lane;

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{Middleware, Next, NodeCtx, NodeError, NodeFuture, State, StateView};

pub use backoff::{Backoff, Constant, Exponential, FullJitter, Linear};
pub use budget::{BudgetSnapshot, RetryBudget, TokenBucket, TokenBucketConfig};
pub use classifier::{is_transient, CategoryClassifier, Classifier, DefaultClassifier};
pub use decision::{
    stop_error, BackoffDecision, LastAttempt, RETRY_AFTER_EXCEEDED, RETRY_BUDGET_EXHAUSTED,
};
pub use lane::{drive, Retry, RetryLane};

/// Called before each backoff sleep with the failed attempt's error and index.
pub trait OnRetry: Send + Sync + 'static {
    /// Handles one retry decision.
    fn on_retry(
        &self,
        error: Arc<dyn StdError + Send + Sync>,
        attempt_index: u32,
    ) -> BoxFuture<'static, ()>;
}

impl<F, Fut> OnRetry for F
where
    F: Fn(Arc<dyn StdError + Send + Sync>, u32) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    fn on_retry(
        &self,
        error: Arc<dyn StdError + Send + Sync>,
        attempt_index: u32,
    ) -> BoxFuture<'static, ()> {
        Box::pin(self(error, attempt_index))
    }
}

/// Waits between attempts. Injectable so tests can record sleeps; the default is
/// the runtime's timer ([`TokioSleeper`], virtual-time aware).
pub trait Sleeper: Send + Sync + 'static {
    /// Sleeps for `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// [`Sleeper`] on `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The retry configuration record (pipeline-utilities §6.1).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use openarmature_pipeline::retry::{Constant, RetryConfig};
/// let config = RetryConfig::default().max_attempts(5).backoff(Constant(Duration::from_millis(10)));
/// assert_eq!(config.max_attempts, 5);
/// ```
#[derive(Clone)]
pub struct RetryConfig {
    /// Total attempts including the first (default 3; `1` disables retry).
    pub max_attempts: u32,
    /// Which failures are retried (default: [`DefaultClassifier`]).
    pub classifier: Arc<dyn Classifier>,
    /// The delay before each retry (default: [`FullJitter`], base 1 s, cap 30 s).
    pub backoff: Arc<dyn Backoff>,
    /// Fired before each backoff sleep.
    pub on_retry: Option<Arc<dyn OnRetry>>,
    /// How the delay is slept (default: [`TokioSleeper`]).
    pub sleeper: Arc<dyn Sleeper>,
    /// Extension 0003: the retry budget every retry spends from (default: none, the
    /// spec's behaviour). Share one per provider endpoint across both lanes.
    pub budget: Option<Arc<dyn RetryBudget>>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            classifier: Arc::new(DefaultClassifier),
            backoff: Arc::new(FullJitter::default()),
            on_retry: None,
            sleeper: Arc::new(TokioSleeper),
            budget: None,
        }
    }
}

impl std::fmt::Debug for RetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryConfig")
            .field("max_attempts", &self.max_attempts)
            .field("on_retry", &self.on_retry.is_some())
            .field("budget", &self.budget.is_some())
            .finish_non_exhaustive()
    }
}

impl RetryConfig {
    /// Sets the total attempt count (values below 1 behave as 1).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Sets the classifier.
    pub fn classifier(mut self, classifier: impl Classifier) -> Self {
        self.classifier = Arc::new(classifier);
        self
    }

    /// Sets the backoff.
    pub fn backoff(mut self, backoff: impl Backoff) -> Self {
        self.backoff = Arc::new(backoff);
        self
    }

    /// Sets the retry callback.
    pub fn on_retry(mut self, on_retry: impl OnRetry) -> Self {
        self.on_retry = Some(Arc::new(on_retry));
        self
    }

    /// Sets the sleeper.
    pub fn sleeper(mut self, sleeper: impl Sleeper) -> Self {
        self.sleeper = Arc::new(sleeper);
        self
    }

    /// Spends every retry from `budget` (extension 0003; shared, so pass the `Arc`).
    pub fn budget(mut self, budget: Arc<dyn RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Runs `attempt` until it succeeds, the classifier declines, or attempts run
    /// out; returns the last error then. `attempt` receives the 0-based index.
    ///
    /// With the extensions: a backoff that gives up ([`BackoffDecision::GiveUp`]) or
    /// an empty [`RetryBudget`] stops the loop with [`stop_error`]
    /// ([`RETRY_AFTER_EXCEEDED`] / [`RETRY_BUDGET_EXHAUSTED`]). This lane only spends
    /// from the budget; the call-level lane deposits.
    ///
    /// # Errors
    /// The last attempt's error (or the stop error wrapping it).
    ///
    /// # Cancel safety
    /// Dropping the returned future stops retrying at once (during an attempt or
    /// during a backoff sleep).
    pub async fn run<T, F, Fut>(
        &self,
        state: Option<&dyn StateView>,
        attempt: F,
    ) -> Result<T, NodeError>
    where
        F: FnMut(u32) -> Fut + Send,
        Fut: std::future::Future<Output = Result<T, NodeError>> + Send,
    {
        let mut lane = ClassifiedLane {
            classifier: &*self.classifier,
            state,
            attempt,
        };
        drive(Some(self), &mut lane).await
    }

    /// Runs `lane` with this configuration (see [`drive`]).
    ///
    /// # Errors
    /// The lane's last error (or the stop error wrapping it).
    pub async fn drive<L: RetryLane>(&self, lane: &mut L) -> Result<L::Output, L::Error> {
        drive(Some(self), lane).await
    }
}

/// The node-level lane: attempts from a closure, failures classified by the record's
/// classifier against the state the chain received, every retry budgeted.
struct ClassifiedLane<'c, F> {
    classifier: &'c dyn Classifier,
    state: Option<&'c dyn StateView>,
    attempt: F,
}

impl<T, F, Fut> RetryLane for ClassifiedLane<'_, F>
where
    F: FnMut(u32) -> Fut + Send,
    Fut: std::future::Future<Output = Result<T, NodeError>> + Send,
{
    type Output = T;
    type Error = NodeError;

    fn attempt(
        &mut self,
        index: u32,
    ) -> impl std::future::Future<Output = Result<T, NodeError>> + Send {
        (self.attempt)(index)
    }

    fn retry(&mut self, error: &NodeError, _index: u32) -> Option<Retry> {
        self.classifier
            .is_retryable(&**error, self.state)
            .then_some(Retry { budgeted: true })
    }

    fn view<'s>(&'s self, error: &'s NodeError) -> &'s (dyn StdError + 'static) {
        &**error
    }

    fn shared(&mut self, error: NodeError) -> Arc<dyn StdError + Send + Sync> {
        Arc::new(error)
    }

    fn stop(
        &mut self,
        category: openarmature_graph::Category,
        reason: &str,
        last: NodeError,
    ) -> NodeError {
        stop_error(category.as_str(), reason, last)
    }
}

/// Node-level retry (pipeline-utilities §6.1): re-runs the rest of the chain on
/// retryable failures. Each attempt is a fresh `started` / `completed` event pair
/// with `attempt_index` 0..N-1, dispatched by the engine.
///
/// Place it *inside* [`crate::FailureIsolationMiddleware`] (the three-piece
/// pattern): retry sees raw transients first; isolation only sees what escapes.
#[derive(Debug, Clone, Default)]
pub struct RetryMiddleware {
    config: RetryConfig,
}

impl RetryMiddleware {
    /// Retry with `config`.
    pub fn new(config: RetryConfig) -> Self {
        RetryMiddleware { config }
    }

    /// The configuration.
    pub fn config(&self) -> &RetryConfig {
        &self.config
    }
}

impl<S: State> Middleware<S> for RetryMiddleware {
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        Box::pin(async move {
            let view: &dyn StateView = &*state;
            self.config
                .run(Some(view), |index| {
                    next.run(Arc::clone(&state), ctx.with_attempt_index(index))
                })
                .await
        })
    }
}
