//! A picture of a run: [`RunReport`] collects a run's observer events and renders
//! them as a waterfall — one self-contained HTML page (inline CSS, no script, no
//! external asset) or the same rows as data ([`Waterfall`]).
//!
//! Rows, in time order, each node attempt followed by what happened inside it:
//!
//! - **node** — one node attempt, from its `started` to its `completed` event
//!   (fan-out and subgraph nodes span their children);
//! - **llm** — one LLM wire attempt (`LlmAttemptEvent`), its latency ending at the
//!   event's time, with its retry reason (`transient` / `reask`), outcome and billed
//!   tokens;
//! - **wait** — the time between two wire attempts of a call (`backoff`, or
//!   `retry-after` when the failed attempt carried the provider's `Retry-After`), or
//!   between two attempts of a node (`node-retry`);
//! - **degraded** — a failure-isolation middleware caught the node's error.
//!
//! In the HTML every row is an element with `data-kind`, `data-node`,
//! `data-node-attempt`, `data-attempt`, `data-reason`, `data-status`,
//! `data-start-ms`, `data-duration-ms`, `data-tokens` and `data-call`; the totals
//! are on `#summary`'s `data-*` attributes, the per-node token table is `#tokens`.

mod build;
mod html;
mod model;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;
use openarmature_graph::{BoxError, Observer, ObserverEvent, Registration};

pub use model::{
    NodeTokens, Row, RowKind, Summary, Waterfall, WAIT_BACKOFF, WAIT_NODE_RETRY, WAIT_RETRY_AFTER,
};

use build::Seen;

/// The registration name [`RunReport::registration`] uses.
pub const REPORT_REGISTRATION_NAME: &str = "openarmature.report";

/// Collects a run's events (observe-only) and renders them as a waterfall. Cloning
/// shares the collected events: register one clone, render from another after the
/// run's observers drained (`CompiledGraph::drain`).
///
/// # Examples
/// ```no_run
/// use openarmature_observability::report::RunReport;
///
/// let report = RunReport::new();
/// // graph.invoke_with(state, InvokeOptions::default().observer(report.registration())).await?;
/// // graph.drain(None).await;
/// report.write_html("run.html", "resilient_extraction")?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct RunReport(Arc<Mutex<Vec<Seen>>>);

impl std::fmt::Debug for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunReport")
            .field("events", &self.events())
            .finish()
    }
}

impl RunReport {
    /// An empty report.
    pub fn new() -> Self {
        RunReport::default()
    }

    /// A registration for `InvokeOptions::observer`, named
    /// [`REPORT_REGISTRATION_NAME`], with the invocation lifecycle events (they
    /// bound the run's time axis).
    pub fn registration(&self) -> Registration {
        Registration::new(REPORT_REGISTRATION_NAME, self.clone()).with_invocation_events()
    }

    /// Records one event (what [`Observer::on_event`] does).
    pub fn record(&self, event: Arc<ObserverEvent>) {
        let seen = Seen {
            received: SystemTime::now(),
            event,
        };
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(seen);
    }

    /// How many events were collected.
    pub fn events(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The rows and totals of the events collected so far.
    pub fn waterfall(&self) -> Waterfall {
        let seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        build::waterfall(&seen)
    }

    /// The waterfall as one self-contained HTML page titled `title`.
    pub fn render_html(&self, title: &str) -> String {
        html::render(&self.waterfall(), title)
    }

    /// Writes [`RunReport::render_html`] to `path`.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn write_html(&self, path: impl AsRef<Path>, title: &str) -> std::io::Result<()> {
        std::fs::write(path, self.render_html(title))
    }
}

impl Waterfall {
    /// This waterfall as one self-contained HTML page titled `title`.
    pub fn to_html(&self, title: &str) -> String {
        html::render(self, title)
    }
}

impl Observer for RunReport {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.record(event);
        Box::pin(std::future::ready(Ok(())))
    }

    fn on_event_now(&self, event: &Arc<ObserverEvent>) -> Option<Result<(), BoxError>> {
        self.record(Arc::clone(event));
        Some(Ok(()))
    }
}
