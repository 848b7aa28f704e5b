//! Spec: graph-engine §6 *Event delivery*.
//!
//! When delivery runs start. A lane that needs a run does not spawn it at once: it
//! hands the prepared run to its graph's pacer, which starts every run handed to it
//! once per [`TICK`]. Spawning a task from a thread that is not idle wakes a parked
//! worker thread (tokio wakes a sibling for new work); a run per batch of events
//! cost two thread wake-ups per invocation, and at a few thousand invocations per
//! second those wake-ups cost more than the delivery itself. The pacer turns that
//! into one timer wake-up per tick for all of a graph's invocations.
//!
//! Delivery stays concurrent with the graph (§6): nothing waits for the pacer but the
//! runs it starts, and a drain delivers a lane whose run has not started on its own
//! task at once (see [`super::lane`]). A run a drain took over is not spawned at the
//! tick. An event waits at most one tick (plus the timer's 1 ms granularity) before
//! its run starts.
//!
//! The pacer is a task that sleeps one tick at a time while runs keep arriving and
//! ends after a tick with none. It paces multi-thread runtimes only: on a
//! current-thread runtime a spawn wakes no other thread, so a run starts at once
//! there (and a pacer task never waits on a runtime nobody drives any more, say one
//! whose `block_on` returned). When the pacer's task has not ticked for [`STALLED`]
//! (its runtime's workers are all blocked, say), the next run hands the pacer a new
//! task on its own runtime and the old one ends when it wakes; a task dropped with
//! its runtime, polled or not, starts what was due. On a runtime without timers
//! (`enable_time` not called) the pacer's first sleep fails (tokio's panic, caught;
//! its message is printed once) and runs start at once from then on, process-wide;
//! so they do in a build with `panic = "abort"`, where that panic could not be
//! caught.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::runtime::RuntimeFlavor;

use super::lane::Launch;

/// How long a prepared delivery run may wait before the pacer starts it.
pub(super) const TICK: Duration = Duration::from_millis(1);

/// How long the pacer's task may go without a tick before a new run hands the pacer
/// a task of its own on the run's runtime: the old task's runtime may not be driven
/// any more (a current-thread runtime whose `block_on` returned), while the graph's
/// invocations go on elsewhere.
const STALLED: Duration = Duration::from_millis(20);

/// Set when a pacer found the runtime without timers: runs start at once.
static TIMERS_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// One graph's pacer: the runs waiting for the next tick.
#[derive(Default)]
pub(super) struct Pacer {
    state: Mutex<PacerState>,
}

#[derive(Default)]
struct PacerState {
    due: Vec<Launch>,
    /// The pacer task that ticks now (`None`: none is); a task that finds another's
    /// number here was superseded and ends.
    ticker: Option<u64>,
    /// The number the next pacer task gets.
    next_ticker: u64,
    /// When the ticking task last ticked (or was spawned).
    ticked_at: Option<Instant>,
}

impl PacerState {
    /// Whether a run handed over now needs a new pacer task: none ticks, or the one
    /// that does has not ticked for [`STALLED`].
    fn needs_ticker(&self) -> bool {
        self.ticker.is_none() || self.ticked_at.is_some_and(|at| at.elapsed() > STALLED)
    }
}

impl Pacer {
    fn lock(&self) -> MutexGuard<'_, PacerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `launch` at the next tick (at once where the pacer does not tick).
    pub(super) fn defer(self: &Arc<Self>, launch: Option<Launch>) {
        let Some(launch) = launch else {
            return;
        };
        if cfg!(panic = "abort")
            || TIMERS_UNAVAILABLE.load(Ordering::Relaxed)
            || launch.runtime().runtime_flavor() == RuntimeFlavor::CurrentThread
        {
            launch.start();
            return;
        }
        let spawn = {
            let mut state = self.lock();
            let spawn = state.needs_ticker().then(|| {
                let number = state.next_ticker;
                state.next_ticker += 1;
                state.ticker = Some(number);
                state.ticked_at = Some(Instant::now());
                (number, launch.runtime().clone())
            });
            state.due.push(launch);
            spawn
        };
        if let Some((number, runtime)) = spawn {
            // The guard exists before the task is first polled: a task dropped
            // unpolled (its runtime shut down) still hands on what is due.
            runtime.spawn(tick(Ticking {
                pacer: Arc::clone(self),
                number,
                armed: true,
            }));
        }
    }

    /// Takes the runs due for pacer task `number`: `None` when another task took its
    /// place; with none due, the pacer stops ticking.
    fn take_due(&self, number: u64) -> Option<Vec<Launch>> {
        let mut state = self.lock();
        if state.ticker != Some(number) {
            return None;
        }
        state.ticked_at = Some(Instant::now());
        let due = std::mem::take(&mut state.due);
        if due.is_empty() {
            state.ticker = None;
        }
        Some(due)
    }
}

/// A pacer task: one tick at a time while runs keep arriving.
async fn tick(mut ticking: Ticking) {
    loop {
        // Creating the sleep panics on a runtime without timers.
        let Ok(sleep) = std::panic::catch_unwind(|| tokio::time::sleep(TICK)) else {
            TIMERS_UNAVAILABLE.store(true, Ordering::Relaxed);
            return;
        };
        sleep.await;
        match ticking.pacer.take_due(ticking.number) {
            Some(due) if !due.is_empty() => {
                for launch in due {
                    launch.start_if_scheduled();
                }
            }
            _ => {
                ticking.armed = false;
                return;
            }
        }
    }
}

/// A pacer task, armed until it ends after a tick with nothing due (or superseded).
/// Dropped armed (its runtime shut down, or it could not sleep), it starts what is
/// due now, and the next run handed to the pacer spawns a new task.
struct Ticking {
    pacer: Arc<Pacer>,
    number: u64,
    armed: bool,
}

impl Drop for Ticking {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let due = {
            let mut state = self.pacer.lock();
            if state.ticker == Some(self.number) {
                state.ticker = None;
            }
            std::mem::take(&mut state.due)
        };
        for launch in due {
            launch.start_if_scheduled();
        }
    }
}
