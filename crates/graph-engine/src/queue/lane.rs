//! Spec: graph-engine §6 *Event delivery*, *Drain*, *Per-invocation drain*.
//!
//! One invocation's delivery lane: the queued events, who is delivering them, and
//! the counters drains read. Delivery is strictly serial: at most one deliverer holds
//! the lane at a time — a *delivery run* (a task prepared when an event arrives and
//! nobody is delivering, started by the graph's pacer at its next tick
//! ([`super::pacer`]); it ends when the queue is empty, so an idle lane parks no
//! task and ending the invocation wakes nobody), or a drain that found the lane idle
//! or its run not started yet and delivers on its own task (it waits anyway; taking
//! the events itself saves two thread wake-ups: the run's and its own).
//!
//! A run is started after the lane's lock is released (a worker woken by the spawn
//! would otherwise find the lock held and block on it), and events dispatched while
//! the invocation itself is being polled are held back until that poll ends
//! ([`Lane::push`]'s `hold_back`, [`Lane::flush`]): one run then delivers the batch
//! instead of one run per event. A run that continues a delivery (past a drain's
//! target, or after a drain gave up mid-event) starts at once.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::Registry;
use crate::error::BoxError;
use crate::observer::{ObserverErrorSink, ObserverEvent, Registration};

/// What drains wait for.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    delivered: u64,
    finished: bool,
}

pub(super) struct Envelope {
    pub(super) event: Arc<ObserverEvent>,
    pub(super) recipients: Arc<[Registration]>,
    /// The first recipient not served yet (an interrupted inline delivery resumes
    /// there).
    pub(super) next: usize,
}

/// Who holds the lane.
enum Runner {
    /// Nobody: the next event prepares a run.
    Idle,
    /// A run was prepared (waiting for the pacer, or spawned) and has not started;
    /// a drain may take its place (the pacer then skips it, or the run finds its
    /// ticket stale and ends).
    Scheduled(u64),
    /// A run or a drain is delivering.
    Delivering,
    /// Every event is delivered and the invocation ended, or a process-wide drain
    /// cancelled the lane: later events are dropped.
    Finished,
}

struct LaneState {
    pending: VecDeque<Envelope>,
    runner: Runner,
    /// The invocation ended: no event follows.
    closed: bool,
    next_ticket: u64,
    /// The latest spawned run and its ticket (a process-wide drain's timeout aborts
    /// it).
    abort: Option<(u64, AbortHandle)>,
}

/// One invocation's delivery lane, registered for drains while it has work.
pub(super) struct Lane {
    pub(super) key: u64,
    pub(super) invocation_id: Arc<str>,
    registry: Arc<Registry>,
    sink: ObserverErrorSink,
    pub(super) emitted: AtomicU64,
    progress: watch::Sender<Progress>,
    state: Mutex<LaneState>,
}

impl Lane {
    pub(super) fn new(
        key: u64,
        invocation_id: Arc<str>,
        registry: Arc<Registry>,
        sink: ObserverErrorSink,
    ) -> Lane {
        Lane {
            key,
            invocation_id,
            registry,
            sink,
            emitted: AtomicU64::new(0),
            progress: watch::channel(Progress::default()).0,
            state: Mutex::new(LaneState {
                pending: VecDeque::new(),
                runner: Runner::Idle,
                closed: false,
                next_ticket: 0,
                abort: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one event; prepares a run when nobody is delivering, unless `hold_back`
    /// (the event was dispatched by the invocation's own poll, whose end calls
    /// [`Lane::flush`]). Never waits.
    pub(super) fn push(self: &Arc<Self>, envelope: Envelope, hold_back: bool) {
        let launch = {
            let mut state = self.lock();
            if state.closed || matches!(state.runner, Runner::Finished) {
                return;
            }
            self.emitted.fetch_add(1, Ordering::SeqCst);
            state.pending.push_back(envelope);
            if hold_back || !matches!(state.runner, Runner::Idle) {
                return;
            }
            self.schedule(&mut state)
        };
        self.registry.pacer.defer(launch);
    }

    /// Prepares a run for held-back events when nobody is delivering them.
    pub(super) fn flush(self: &Arc<Self>) {
        let launch = {
            let mut state = self.lock();
            if !matches!(state.runner, Runner::Idle) || state.pending.is_empty() {
                return;
            }
            self.schedule(&mut state)
        };
        self.registry.pacer.defer(launch);
    }

    /// Prepares a run for the queued events (the caller holds the lock and starts
    /// the returned run once it has released it). Outside a runtime (a future
    /// dropped at shutdown) the lane stays idle with its events queued: the next
    /// event or a drain delivers them.
    fn schedule(self: &Arc<Self>, state: &mut LaneState) -> Option<Launch> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            state.runner = Runner::Idle;
            return None;
        };
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.runner = Runner::Scheduled(ticket);
        Some(Launch {
            runtime,
            lane: Arc::clone(self),
            ticket,
        })
    }

    /// The invocation ended: a lane with nothing left finishes now; queued events
    /// nobody delivers (held back) get a run; otherwise the deliverer finishes it
    /// after the last event.
    pub(super) fn close(self: &Arc<Self>) {
        let launch = {
            let mut state = self.lock();
            state.closed = true;
            if !matches!(state.runner, Runner::Idle) {
                return;
            }
            if state.pending.is_empty() {
                self.finish(&mut state);
                return;
            }
            self.schedule(&mut state)
        };
        self.registry.pacer.defer(launch);
    }

    fn finish(&self, state: &mut LaneState) {
        state.runner = Runner::Finished;
        state.pending.clear();
        self.record(|p| p.finished = true);
        self.registry.remove(self.key);
    }

    /// Cancels delivery (a process-wide drain's timeout): the run is aborted and
    /// what was not delivered never will be. Returns the undelivered count.
    pub(super) fn cancel(&self) -> u64 {
        let mut state = self.lock();
        if matches!(state.runner, Runner::Finished) {
            return 0;
        }
        if let Some((_, abort)) = state.abort.take() {
            abort.abort();
        }
        let undelivered = self.undelivered(self.emitted.load(Ordering::SeqCst));
        self.finish(&mut state);
        undelivered
    }

    /// Updates the progress; waiters are notified only while a drain waits (counting
    /// and finishing cost no wake-up otherwise; a drain subscribing later reads the
    /// value before it waits).
    fn record(&self, update: impl FnOnce(&mut Progress)) {
        self.progress.send_if_modified(|p| {
            update(p);
            self.progress.receiver_count() > 0
        });
    }

    /// Events up to `target` not delivered yet.
    pub(super) fn undelivered(&self, target: u64) -> u64 {
        target.saturating_sub(self.progress.borrow().delivered)
    }

    /// Delivers the queued events on the caller's task, up to the `target`-th event
    /// (all with `None`), when nobody is delivering or the spawned run has not
    /// started. Otherwise returns at once (the run delivers them).
    pub(super) async fn deliver_inline(self: &Arc<Self>, target: Option<u64>) {
        {
            let mut state = self.lock();
            match state.runner {
                Runner::Idle if !state.pending.is_empty() => {}
                Runner::Scheduled(_) => {}
                _ => return,
            }
            state.runner = Runner::Delivering;
        }
        self.deliver(target).await;
    }

    /// The delivery loop of whoever holds the lane: one event at a time, in order;
    /// then it lets the lane go (to a new run when events remain past `target`).
    async fn deliver(self: &Arc<Self>, target: Option<u64>) {
        let mut hold = Hold {
            lane: self,
            current: None,
        };
        loop {
            let envelope = {
                let mut state = self.lock();
                let reached = target.is_some_and(|t| self.progress.borrow().delivered >= t);
                match state.pending.pop_front() {
                    Some(envelope) if !reached => envelope,
                    Some(envelope) => {
                        state.pending.push_front(envelope);
                        let launch = self.schedule(&mut state);
                        drop(state);
                        Launch::start_now(launch);
                        return;
                    }
                    None if state.closed => {
                        self.finish(&mut state);
                        return;
                    }
                    None => {
                        state.runner = Runner::Idle;
                        return;
                    }
                }
            };
            deliver_one(hold.current.insert(envelope), &self.sink).await;
            hold.current = None;
            self.record(|p| p.delivered += 1);
        }
    }

    /// Waits until `target` events are delivered or the lane finished.
    pub(super) async fn wait_delivered(&self, target: u64) {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.delivered >= target || p.finished).await;
    }

    /// Waits until the lane finished.
    pub(super) async fn wait_finished(&self) {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.finished).await;
    }
}

/// The lane held by a deliverer. Dropped in the middle of an event (a drain's
/// caller gave up on it), it puts the event back first in line, from the recipient
/// that was interrupted, and hands the lane to a new run: nothing is lost and the
/// order holds.
struct Hold<'a> {
    lane: &'a Arc<Lane>,
    current: Option<Envelope>,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let Some(envelope) = self.current.take() else {
            return;
        };
        let launch = {
            let mut state = self.lane.lock();
            if matches!(state.runner, Runner::Finished) {
                return;
            }
            state.pending.push_front(envelope);
            self.lane.schedule(&mut state)
        };
        Launch::start_now(launch);
    }
}

/// A delivery run prepared under the lane's lock, spawned after it is released (by
/// the pacer at its next tick, or at once where a delivery continues).
pub(super) struct Launch {
    runtime: tokio::runtime::Handle,
    lane: Arc<Lane>,
    ticket: u64,
}

impl Launch {
    /// The runtime the run is spawned on.
    pub(super) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    fn start_now(launch: Option<Launch>) {
        if let Some(launch) = launch {
            launch.start();
        }
    }

    /// Spawns the run unless a drain took the lane over meanwhile (or it finished).
    pub(super) fn start_if_scheduled(self) {
        let scheduled = matches!(
            self.lane.lock().runner,
            Runner::Scheduled(ticket) if ticket == self.ticket
        );
        if scheduled {
            self.start();
        }
    }

    /// Spawns the run.
    pub(super) fn start(self) {
        let Launch {
            runtime,
            lane,
            ticket,
        } = self;
        let abort = runtime.spawn(run(Arc::clone(&lane), ticket)).abort_handle();
        // Kept for a process-wide drain's timeout, unless a later run's is kept
        // already; a cancel that came first (the lane finished) aborts the run now.
        let mut state = lane.lock();
        if matches!(state.runner, Runner::Finished) {
            abort.abort();
        } else if state.abort.as_ref().is_none_or(|(kept, _)| *kept < ticket) {
            state.abort = Some((ticket, abort));
        }
    }
}

/// A spawned delivery run: takes the lane unless a drain took it first.
async fn run(lane: Arc<Lane>, ticket: u64) {
    {
        let mut state = lane.lock();
        if !matches!(state.runner, Runner::Scheduled(t) if t == ticket) {
            return;
        }
        state.runner = Runner::Delivering;
    }
    lane.deliver(None).await;
}

/// Delivers one event to each of its recipients in registration order.
/// Advances `envelope.next` past each recipient served.
async fn deliver_one(envelope: &mut Envelope, sink: &ObserverErrorSink) {
    let Envelope {
        event,
        recipients,
        next,
    } = envelope;
    for (index, registration) in recipients.iter().enumerate().skip(*next) {
        if !registration.wants(event) {
            *next = index + 1;
            continue;
        }
        // A panic while handling the event at once, creating the future or polling it
        // is contained. An observer that handles the event at once makes no future.
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| {
            let observer = &registration.observer;
            observer
                .on_event_now(event)
                .ok_or_else(|| observer.on_event(Arc::clone(event)))
        })) {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(call)) => AssertUnwindSafe(call).catch_unwind().await,
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
        *next = index + 1;
    }
}
