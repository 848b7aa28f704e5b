//! Spec: pipeline-utilities §6.2 — timing.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{category_of, Middleware, Next, NodeCtx, NodeError, NodeFuture, State};

/// A monotonic clock: time since an arbitrary fixed origin. Injectable so tests
/// can count reads.
pub trait MonotonicClock: Send + Sync + 'static {
    /// The current reading.
    fn now(&self) -> Duration;
}

/// The runtime's monotonic clock (`tokio::time::Instant`; virtual under a paused
/// test clock).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl MonotonicClock for TokioClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// How the timed chain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It returned an update.
    Success,
    /// It raised.
    Exception,
}

impl Outcome {
    /// `"success"` / `"exception"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Exception => "exception",
        }
    }
}

/// One timed dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingRecord {
    /// The node the middleware is attached to.
    pub node_name: String,
    /// Milliseconds from middleware entry to chain return-or-raise (monotonic).
    pub duration_ms: f64,
    /// Success or exception.
    pub outcome: Outcome,
    /// The raised error's category, when it carries one.
    pub exception_category: Option<String>,
}

/// Receives each [`TimingRecord`], inline: a slow callback adds to the node's
/// apparent duration, and its error fails the node (`node_exception`).
pub trait OnComplete: Send + Sync + 'static {
    /// Handles one record.
    fn on_complete(&self, record: TimingRecord) -> BoxFuture<'static, Result<(), NodeError>>;
}

impl<F, Fut> OnComplete for F
where
    F: Fn(TimingRecord) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), NodeError>> + Send + 'static,
{
    fn on_complete(&self, record: TimingRecord) -> BoxFuture<'static, Result<(), NodeError>> {
        Box::pin(self(record))
    }
}

/// Times the wrapped chain (pipeline-utilities §6.2). Outside a retry it measures
/// every attempt and backoff; inside, it reports once per attempt.
///
/// # Examples
/// ```
/// use openarmature_pipeline::{TimingMiddleware, TimingRecord};
/// let per_node = TimingMiddleware::new("extract", |r: TimingRecord| async move {
///     println!("{} took {:.1} ms", r.node_name, r.duration_ms);
///     Ok(())
/// });
/// // Registered per graph, it names each node it wraps.
/// let per_graph = TimingMiddleware::for_graph(|_r: TimingRecord| async { Ok(()) });
/// # let _ = (per_node, per_graph);
/// ```
#[derive(Clone)]
pub struct TimingMiddleware {
    node_name: Option<String>,
    on_complete: Arc<dyn OnComplete>,
    clock: Arc<dyn MonotonicClock>,
}

impl TimingMiddleware {
    /// Per-node use: `node_name` is captured at registration.
    pub fn new(node_name: impl Into<String>, on_complete: impl OnComplete) -> Self {
        TimingMiddleware {
            node_name: Some(node_name.into()),
            on_complete: Arc::new(on_complete),
            clock: Arc::new(TokioClock::default()),
        }
    }

    /// Per-graph use (the factory form): the node name is bound per node as the
    /// middleware wraps it.
    pub fn for_graph(on_complete: impl OnComplete) -> Self {
        TimingMiddleware {
            node_name: None,
            on_complete: Arc::new(on_complete),
            clock: Arc::new(TokioClock::default()),
        }
    }

    /// Replaces the clock.
    pub fn with_clock(mut self, clock: impl MonotonicClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }
}

impl<S: State> Middleware<S> for TimingMiddleware {
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        Box::pin(async move {
            let node_name = self
                .node_name
                .clone()
                .unwrap_or_else(|| ctx.node_name().to_owned());
            let started = self.clock.now();
            let result = next.run(state, ctx).await;
            let elapsed = self.clock.now().saturating_sub(started);
            let (outcome, exception_category) = match &result {
                Ok(_) => (Outcome::Success, None),
                Err(e) => (
                    Outcome::Exception,
                    category_of(e).map(|c| c.as_str().to_owned()),
                ),
            };
            let record = TimingRecord {
                node_name,
                duration_ms: elapsed.as_secs_f64() * 1000.0,
                outcome,
                exception_category,
            };
            self.on_complete.on_complete(record).await?;
            result
        })
    }
}
