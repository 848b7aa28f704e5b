//! [`ProgressObserver`]: the [`ProgressCounter`]'s counts drawn as terminal progress
//! bars (indicatif), one per fan-out node.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use openarmature_graph::{BoxError, Observer, ObserverEvent, Registration};

use super::{FanOutProgress, ProgressCounter, PROGRESS_REGISTRATION_NAME};

/// Short enough for an 80-column terminal with the usual counts (a line that wraps
/// breaks the redraw).
const TEMPLATE: &str = "{prefix} [{bar:16}] {pos}/{len} {elapsed} · {msg}";

/// Draws one progress bar per fan-out node from the run's events: items finished out
/// of announced, and how many succeeded, were degraded, failed and are in flight.
///
/// Drawn on standard output, and only when it is a terminal: with output redirected
/// (a CI log, a pipe) nothing is drawn at all. Cloning shares the bars.
///
/// # Examples
/// ```
/// use openarmature_observability::progress::ProgressObserver;
///
/// let progress = ProgressObserver::stdout().item_node("extract");
/// // InvokeOptions::default().observer(progress.registration()) ... then, after the
/// // run and `graph.drain(..)`:
/// progress.finish();
/// ```
#[derive(Clone)]
pub struct ProgressObserver {
    counter: ProgressCounter,
    inner: Arc<Bars>,
}

struct Bars {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl std::fmt::Debug for ProgressObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressObserver")
            .field("counter", &self.counter)
            .field("hidden", &self.inner.multi.is_hidden())
            .finish_non_exhaustive()
    }
}

impl ProgressObserver {
    /// Bars on standard output; hidden when standard output is not a terminal.
    pub fn stdout() -> Self {
        let target = if std::io::stdout().is_terminal() {
            ProgressDrawTarget::stdout()
        } else {
            ProgressDrawTarget::hidden()
        };
        Self::with_target(target)
    }

    /// Counts without drawing anything (the counts stay readable through
    /// [`ProgressObserver::counter`]).
    pub fn hidden() -> Self {
        Self::with_target(ProgressDrawTarget::hidden())
    }

    fn with_target(target: ProgressDrawTarget) -> Self {
        ProgressObserver {
            counter: ProgressCounter::new(),
            inner: Arc::new(Bars {
                multi: MultiProgress::with_draw_target(target),
                bars: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// See [`ProgressCounter::item_node`].
    pub fn item_node(mut self, name: impl Into<String>) -> Self {
        self.counter = self.counter.item_node(name);
        self
    }

    /// Whether the bars are drawn (standard output is a terminal).
    pub fn is_drawn(&self) -> bool {
        !self.inner.multi.is_hidden()
    }

    /// The counts the bars show.
    pub fn counter(&self) -> &ProgressCounter {
        &self.counter
    }

    /// A registration for `InvokeOptions::observer`, named
    /// [`PROGRESS_REGISTRATION_NAME`].
    pub fn registration(&self) -> Registration {
        Registration::new(PROGRESS_REGISTRATION_NAME, self.clone())
    }

    /// Stops the bars' clocks and leaves their last state on screen (call it after
    /// the run's observers drained).
    pub fn finish(&self) {
        let bars = self
            .inner
            .bars
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for bar in bars.values() {
            bar.finish();
        }
    }

    fn draw(&self, counts: &FanOutProgress) {
        let mut bars = self
            .inner
            .bars
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let bar = bars.entry(counts.fan_out.clone()).or_insert_with(|| {
            let bar = self.inner.multi.add(ProgressBar::new(counts.total as u64));
            if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(counts.fan_out.clone());
            if !self.inner.multi.is_hidden() {
                // Keeps the elapsed clock moving through long waits (a Retry-After).
                bar.enable_steady_tick(Duration::from_millis(200));
            }
            bar
        });
        bar.set_length(counts.total as u64);
        bar.set_position(counts.finished() as u64);
        bar.set_message(message(counts));
    }
}

/// `4 ok, 1 degraded, 2 in flight` (zero failed / cancelled counts are left out).
fn message(c: &FanOutProgress) -> String {
    let mut parts = vec![
        format!("{} ok", c.succeeded),
        format!("{} degraded", c.degraded),
    ];
    if c.failed > 0 {
        parts.push(format!("{} failed", c.failed));
    }
    if c.cancelled > 0 {
        parts.push(format!("{} cancelled", c.cancelled));
    }
    parts.push(format!("{} in flight", c.in_flight));
    parts.join(", ")
}

impl Observer for ProgressObserver {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        for counts in self.counter.observe(&event) {
            self.draw(&counts);
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_each_non_zero_outcome() {
        let c = FanOutProgress {
            fan_out: "f".into(),
            total: 9,
            succeeded: 4,
            degraded: 1,
            failed: 2,
            in_flight: 2,
            ..FanOutProgress::default()
        };
        assert_eq!(message(&c), "4 ok, 1 degraded, 2 failed, 2 in flight");
        assert!(!ProgressObserver::hidden().is_drawn());
    }
}
