//! Spec: graph-engine §6 *Event delivery*, *Drain*, *Per-invocation drain*.
//!
//! Each invocation of the outermost graph has one delivery lane ([`lane`]) that
//! delivers its events to observers strictly serially, concurrently with the run.
//! The graph's execution loop only enqueues; it never awaits an observer. A drain
//! waits for the lanes it covers, and delivers their queued events itself when
//! nobody else is delivering them yet.
//!
//! The events an invocation dispatches while its own future is being polled
//! ([`batch_events`]) are delivered by one run prepared when that poll ends, not by
//! a run per event, and the graph's [`pacer`] starts the runs prepared during a
//! tick together: idle workers are woken about once per tick, not twice per
//! invocation, and a drain that follows an invocation finds its batch not started
//! yet and delivers it itself.

mod lane;
mod pacer;

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lane::{Envelope, Lane};

use crate::observer::{ObserverErrorSink, ObserverEvent, Registration};

/// What a drain returns (graph-engine §6): the same shape with or without a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DrainSummary {
    /// Events still queued or in flight when the drain returned.
    pub undelivered_count: u64,
    /// Whether the timeout elapsed before delivery finished.
    pub timeout_reached: bool,
}

/// A drain timeout given as seconds was negative or NaN (rejected before any work).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("drain timeout must be a non-negative number of seconds, got {0}")]
pub struct InvalidTimeout(pub f64);

/// Converts a seconds value to a drain timeout, rejecting negative and NaN input.
///
/// # Errors
/// [`InvalidTimeout`] for negative, NaN or infinite-and-unrepresentable input.
pub fn timeout_from_secs(seconds: f64) -> Result<Duration, InvalidTimeout> {
    if seconds.is_nan() || seconds < 0.0 {
        return Err(InvalidTimeout(seconds));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| InvalidTimeout(seconds))
}

/// Runs `wait` to completion or until `timeout`; true when the timeout elapsed.
async fn within(timeout: Option<Duration>, wait: impl std::future::Future<Output = ()>) -> bool {
    match timeout {
        None => {
            wait.await;
            false
        }
        Some(limit) => tokio::time::timeout(limit, wait).await.is_err(),
    }
}

/// Waits for `lanes` to deliver up to their `targets`, or the timeout. Without a
/// timeout a drain delivers what is queued itself when nobody is delivering it; with
/// one it only waits, so that giving up never interrupts an observer (§6: a
/// per-invocation drain's timeout does not cancel delivery).
async fn drain_to(lanes: &[Arc<Lane>], targets: &[u64], timeout: Option<Duration>) -> DrainSummary {
    let wait = async {
        for (lane, target) in lanes.iter().zip(targets) {
            if timeout.is_none() {
                lane.deliver_inline(Some(*target)).await;
            }
            lane.wait_delivered(*target).await;
        }
    };
    let reached = within(timeout, wait).await;
    let undelivered = if reached {
        lanes
            .iter()
            .zip(targets)
            .map(|(lane, target)| lane.undelivered(*target))
            .sum()
    } else {
        0
    };
    DrainSummary {
        undelivered_count: undelivered,
        timeout_reached: reached,
    }
}

/// The delivery lanes of one compiled graph's active invocations.
#[derive(Default)]
pub(crate) struct Registry {
    next_key: AtomicU64,
    active: Mutex<Vec<Arc<Lane>>>,
    /// Starts the lanes' delivery runs once per tick.
    pacer: Arc<pacer::Pacer>,
}

impl Registry {
    fn snapshot(&self) -> Vec<Arc<Lane>> {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn remove(&self, key: u64) {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|lane| lane.key != key);
    }

    /// Process-wide drain: waits for the lanes active now to finish, delivering their
    /// queued events itself where nobody is (cancelling is allowed here, so it does
    /// so with a timeout too); on timeout cancels them.
    pub(crate) async fn drain(&self, timeout: Option<Duration>) -> DrainSummary {
        let lanes = self.snapshot();
        let wait_all = async {
            for lane in &lanes {
                lane.deliver_inline(None).await;
                lane.wait_finished().await;
            }
        };
        if !within(timeout, wait_all).await {
            return DrainSummary::default();
        }
        let undelivered = lanes.iter().map(|lane| lane.cancel()).sum();
        DrainSummary {
            undelivered_count: undelivered,
            timeout_reached: true,
        }
    }

    /// Per-invocation drain: waits for events of `invocation_id` emitted so far.
    /// Never cancels delivery.
    pub(crate) async fn drain_events_for(
        &self,
        invocation_id: &str,
        timeout: Option<Duration>,
    ) -> DrainSummary {
        let lanes: Vec<_> = self
            .snapshot()
            .into_iter()
            .filter(|lane| &*lane.invocation_id == invocation_id)
            .collect();
        let targets: Vec<u64> = lanes
            .iter()
            .map(|lane| lane.emitted.load(Ordering::SeqCst))
            .collect();
        drain_to(&lanes, &targets, timeout).await
    }
}

/// The sending side of one invocation's delivery lane. Nothing is allocated for
/// delivery until the first event that has recipients: an invocation nobody
/// observes creates no lane and spawns nothing.
pub(crate) struct EventQueue {
    lane: Mutex<Opening>,
    registry: Arc<Registry>,
    invocation_id: Arc<str>,
    sink: ObserverErrorSink,
    /// Events were held back during the current poll of the invocation (set and
    /// cleared by the polling thread only).
    held_back: AtomicBool,
}

thread_local! {
    /// The queue whose invocation this thread is polling (its address; 0: none).
    static POLLING: Cell<usize> = const { Cell::new(0) };
}

/// Polls `invocation` with its events held back in `queue` until the end of each
/// poll, when one delivery run is prepared for them (if nobody is delivering). Events
/// dispatched elsewhere (another task or thread) prepare their run at once.
pub(crate) async fn batch_events<F: Future>(queue: &EventQueue, invocation: F) -> F::Output {
    let mut invocation = std::pin::pin!(invocation);
    std::future::poll_fn(|cx| {
        let _poll = Polling::enter(queue);
        invocation.as_mut().poll(cx)
    })
    .await
}

/// One poll of an invocation: marks its queue as the thread's, and on the way out
/// (a panic included) restores the previous mark and prepares the held-back events'
/// run.
struct Polling<'q> {
    queue: &'q EventQueue,
    previous: usize,
}

impl<'q> Polling<'q> {
    fn enter(queue: &'q EventQueue) -> Self {
        let previous = POLLING.with(|p| p.replace(queue.address()));
        Polling { queue, previous }
    }
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        POLLING.with(|p| p.set(self.previous));
        if self.queue.held_back.swap(false, Ordering::Relaxed) {
            if let Some(lane) = self.queue.current() {
                lane.flush();
            }
        }
    }
}

/// The lane: not opened yet, open, or closed at the end of the invocation.
enum Opening {
    Idle,
    Open(Arc<Lane>),
    Closed,
}

impl EventQueue {
    /// Creates the invocation's queue; its lane opens (and registers for drains)
    /// with the first event.
    pub(crate) fn start(
        registry: &Arc<Registry>,
        invocation_id: Arc<str>,
        sink: ObserverErrorSink,
    ) -> Self {
        EventQueue {
            lane: Mutex::new(Opening::Idle),
            registry: Arc::clone(registry),
            invocation_id,
            sink,
            held_back: AtomicBool::new(false),
        }
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Opens and registers the lane (the first event).
    fn open(&self) -> Arc<Lane> {
        let registry = &self.registry;
        let key = registry.next_key.fetch_add(1, Ordering::Relaxed);
        let lane = Arc::new(Lane::new(
            key,
            Arc::clone(&self.invocation_id),
            Arc::clone(registry),
            Arc::clone(&self.sink),
        ));
        registry
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&lane));
        lane
    }

    fn current(&self) -> Option<Arc<Lane>> {
        match &*self.lane.lock().unwrap_or_else(PoisonError::into_inner) {
            Opening::Open(lane) => Some(Arc::clone(lane)),
            _ => None,
        }
    }

    /// Enqueues one event for `recipients`. Never waits. An event nobody receives is
    /// dropped here (it neither opens the lane nor counts for drains).
    pub(crate) fn dispatch(&self, event: ObserverEvent, recipients: Arc<[Registration]>) {
        if recipients.is_empty() {
            return;
        }
        let mut opening = self.lane.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*opening, Opening::Idle) {
            *opening = Opening::Open(self.open());
        }
        // After a process-wide drain cancelled the lane the event is dropped (and
        // not counted): what that drain reported undelivered never will be.
        if let Opening::Open(lane) = &*opening {
            // Dispatched by the invocation's own poll: its end spawns the run.
            let hold_back = POLLING.with(Cell::get) == self.address();
            if hold_back {
                self.held_back.store(true, Ordering::Relaxed);
            }
            lane.push(
                Envelope {
                    event: Arc::new(event),
                    recipients,
                    next: 0,
                },
                hold_back,
            );
        }
    }

    /// Waits for every event this invocation emitted so far, or the timeout
    /// (graph-engine §6 *Per-invocation drain*, from inside the invocation).
    pub(crate) async fn drain_snapshot(&self, timeout: Option<Duration>) -> DrainSummary {
        match self.current() {
            Some(lane) => {
                let target = lane.emitted.load(Ordering::SeqCst);
                drain_to(&[lane], &[target], timeout).await
            }
            None => DrainSummary::default(),
        }
    }

    /// Closes the queue at the end of the invocation: what is queued is still
    /// delivered; later dispatches (from a task that outlived the invocation) are
    /// dropped.
    pub(crate) fn close(&self) {
        let mut opening = self.lane.lock().unwrap_or_else(PoisonError::into_inner);
        if let Opening::Open(lane) = &*opening {
            lane.close();
        }
        *opening = Opening::Closed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_negative_and_nan_timeouts() {
        assert!(timeout_from_secs(-0.1).is_err());
        assert!(timeout_from_secs(f64::NAN).is_err());
        assert_eq!(timeout_from_secs(0.05), Ok(Duration::from_millis(50)));
    }
}
