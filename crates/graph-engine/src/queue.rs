//! Spec: graph-engine §6 *Event delivery*, *Drain*, *Per-invocation drain*.
//!
//! One delivery worker per invocation of the outermost graph delivers events to
//! observers strictly serially. The graph's execution loop only enqueues; it never
//! awaits an observer.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{mpsc, watch};

use crate::error::BoxError;
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

#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    delivered: u64,
    finished: bool,
}

struct Envelope {
    event: Arc<ObserverEvent>,
    recipients: Arc<[Registration]>,
}

/// Per-invocation delivery counters, shared by the queue, its worker and drains.
pub(crate) struct QueueStats {
    emitted: AtomicU64,
    progress: watch::Sender<Progress>,
}

impl QueueStats {
    async fn wait_delivered(&self, target: u64) {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.delivered >= target || p.finished).await;
    }

    async fn wait_finished(&self) {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.finished).await;
    }

    fn undelivered(&self, target: u64) -> u64 {
        let p = *self.progress.borrow();
        if p.finished && p.delivered < target {
            // Cancelled by a process-wide drain: what was not delivered never will be.
            return target - p.delivered;
        }
        target.saturating_sub(p.delivered)
    }

    /// Waits for every event emitted so far (snapshot semantic) or the timeout.
    pub(crate) async fn drain_snapshot(&self, timeout: Option<Duration>) -> DrainSummary {
        let target = self.emitted.load(Ordering::SeqCst);
        let wait = self.wait_delivered(target);
        let reached = match timeout {
            None => {
                wait.await;
                false
            }
            Some(limit) => tokio::time::timeout(limit, wait).await.is_err(),
        };
        DrainSummary {
            undelivered_count: if reached { self.undelivered(target) } else { 0 },
            timeout_reached: reached,
        }
    }
}

struct WorkerEntry {
    key: u64,
    invocation_id: Arc<str>,
    stats: Arc<QueueStats>,
    abort: tokio::task::AbortHandle,
}

/// The delivery workers of one compiled graph's active invocations.
#[derive(Default)]
pub(crate) struct Registry {
    next_key: AtomicU64,
    active: Mutex<Vec<Arc<WorkerEntry>>>,
}

impl Registry {
    fn snapshot(&self) -> Vec<Arc<WorkerEntry>> {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn remove(&self, key: u64) {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|e| e.key != key);
    }

    /// Process-wide drain: waits for the workers active now; on timeout cancels them.
    pub(crate) async fn drain(&self, timeout: Option<Duration>) -> DrainSummary {
        let entries = self.snapshot();
        let wait_all = async {
            for entry in &entries {
                entry.stats.wait_finished().await;
            }
        };
        let reached = match timeout {
            None => {
                wait_all.await;
                false
            }
            Some(limit) => tokio::time::timeout(limit, wait_all).await.is_err(),
        };
        if !reached {
            return DrainSummary::default();
        }
        let mut undelivered = 0;
        for entry in &entries {
            let target = entry.stats.emitted.load(Ordering::SeqCst);
            if entry.stats.progress.borrow().finished {
                continue;
            }
            entry.abort.abort();
            undelivered += entry.stats.undelivered(target);
            entry.stats.progress.send_modify(|p| p.finished = true);
            self.remove(entry.key);
        }
        DrainSummary {
            undelivered_count: undelivered,
            timeout_reached: true,
        }
    }

    /// Per-invocation drain: waits for events of `invocation_id` emitted so far.
    /// Never cancels workers.
    pub(crate) async fn drain_events_for(
        &self,
        invocation_id: &str,
        timeout: Option<Duration>,
    ) -> DrainSummary {
        let entries: Vec<_> = self
            .snapshot()
            .into_iter()
            .filter(|e| &*e.invocation_id == invocation_id)
            .collect();
        let targets: Vec<u64> = entries
            .iter()
            .map(|e| e.stats.emitted.load(Ordering::SeqCst))
            .collect();
        let wait = async {
            for (entry, target) in entries.iter().zip(&targets) {
                entry.stats.wait_delivered(*target).await;
            }
        };
        let reached = match timeout {
            None => {
                wait.await;
                false
            }
            Some(limit) => tokio::time::timeout(limit, wait).await.is_err(),
        };
        let undelivered = if reached {
            entries
                .iter()
                .zip(&targets)
                .map(|(e, t)| e.stats.undelivered(*t))
                .sum()
        } else {
            0
        };
        DrainSummary {
            undelivered_count: undelivered,
            timeout_reached: reached,
        }
    }
}

/// The sending side of one invocation's delivery queue. Nothing is allocated for
/// delivery until the first event that has recipients: an invocation nobody
/// observes creates no channel and spawns no worker.
pub(crate) struct EventQueue {
    channel: Mutex<Channel>,
    /// Set with the channel; drains read it.
    stats: OnceLock<Arc<QueueStats>>,
    registry: Arc<Registry>,
    invocation_id: Arc<str>,
    sink: ObserverErrorSink,
}

/// The queue's channel: not opened yet, open (the worker runs), or closed at the
/// end of the invocation.
enum Channel {
    Idle,
    Open(mpsc::UnboundedSender<Envelope>),
    Closed,
}

impl EventQueue {
    /// Creates the invocation's queue; its channel opens and its delivery worker
    /// starts (and registers for drains) with the first event.
    pub(crate) fn start(
        registry: &Arc<Registry>,
        invocation_id: Arc<str>,
        sink: ObserverErrorSink,
    ) -> Self {
        EventQueue {
            channel: Mutex::new(Channel::Idle),
            stats: OnceLock::new(),
            registry: Arc::clone(registry),
            invocation_id,
            sink,
        }
    }

    /// Opens the channel and spawns the worker (the first event).
    fn open(&self) -> mpsc::UnboundedSender<Envelope> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (progress, _) = watch::channel(Progress::default());
        let stats = Arc::clone(self.stats.get_or_init(|| {
            Arc::new(QueueStats {
                emitted: AtomicU64::new(0),
                progress,
            })
        }));
        let registry = &self.registry;
        let key = registry.next_key.fetch_add(1, Ordering::Relaxed);
        let mut active = registry
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let handle = tokio::spawn(deliver(
            rx,
            Arc::clone(&stats),
            Arc::clone(registry),
            key,
            Arc::clone(&self.sink),
        ));
        active.push(Arc::new(WorkerEntry {
            key,
            invocation_id: Arc::clone(&self.invocation_id),
            stats,
            abort: handle.abort_handle(),
        }));
        tx
    }

    /// Enqueues one event for `recipients`. Never waits. An event nobody receives is
    /// dropped here (it neither starts the worker nor counts for drains).
    pub(crate) fn dispatch(&self, event: ObserverEvent, recipients: Arc<[Registration]>) {
        if recipients.is_empty() {
            return;
        }
        let mut channel = self.channel.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*channel, Channel::Idle) {
            *channel = Channel::Open(self.open());
        }
        if let (Channel::Open(tx), Some(stats)) = (&*channel, self.stats.get()) {
            stats.emitted.fetch_add(1, Ordering::SeqCst);
            // A send fails only after a process-wide drain cancelled the worker; the
            // event is then counted as undelivered, which is what the drain reported.
            let _ = tx.send(Envelope {
                event: Arc::new(event),
                recipients,
            });
        }
    }

    /// Waits for every event this invocation emitted so far, or the timeout
    /// (graph-engine §6 *Per-invocation drain*, from inside the invocation).
    pub(crate) async fn drain_snapshot(&self, timeout: Option<Duration>) -> DrainSummary {
        match self.stats.get() {
            Some(stats) => stats.drain_snapshot(timeout).await,
            None => DrainSummary::default(),
        }
    }

    /// Closes the queue at the end of the invocation: the worker delivers what is
    /// queued and stops. Later dispatches (from a task that outlived the
    /// invocation) are dropped.
    pub(crate) fn close(&self) {
        *self.channel.lock().unwrap_or_else(PoisonError::into_inner) = Channel::Closed;
    }
}

async fn deliver(
    mut rx: mpsc::UnboundedReceiver<Envelope>,
    stats: Arc<QueueStats>,
    registry: Arc<Registry>,
    key: u64,
    sink: ObserverErrorSink,
) {
    // Events queued while the worker was busy are taken together; delivery stays
    // strictly serial and in order. Progress is counted per event (a timed-out drain
    // reports exact counts), but waiters are only woken while a drain is waiting:
    // without one, counting costs no notification.
    let mut batch = Vec::with_capacity(DELIVERY_BATCH);
    while rx.recv_many(&mut batch, DELIVERY_BATCH).await > 0 {
        for envelope in batch.drain(..) {
            deliver_one(&envelope, &sink).await;
            stats.progress.send_if_modified(|p| {
                p.delivered += 1;
                stats.progress.receiver_count() > 0
            });
        }
    }
    stats.progress.send_modify(|p| p.finished = true);
    registry.remove(key);
}

/// How many queued events the worker takes per wake-up.
const DELIVERY_BATCH: usize = 64;

/// Delivers one event to each of its recipients in registration order.
async fn deliver_one(envelope: &Envelope, sink: &ObserverErrorSink) {
    {
        for registration in envelope.recipients.iter() {
            if !registration.wants(&envelope.event) {
                continue;
            }
            // A panic while creating the future or while polling it is contained.
            let event = Arc::clone(&envelope.event);
            let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                registration.observer.on_event(event)
            })) {
                Ok(call) => AssertUnwindSafe(call).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(err)) => sink(&registration.name, &err),
                Err(_) => {
                    let err: BoxError = "observer panicked".into();
                    sink(&registration.name, &err);
                }
            }
        }
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
