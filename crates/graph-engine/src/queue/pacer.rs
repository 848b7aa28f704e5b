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
//! ends after a tick with none. On a runtime without timers (`enable_time` not
//! called) its first sleep panics (tokio prints why); from then on runs start at once
//! in the whole process, as they do on a runtime the pacer's task outlived.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::lane::Launch;

/// How long a prepared delivery run may wait before the pacer starts it.
pub(super) const TICK: Duration = Duration::from_millis(1);

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
    /// A pacer task is sleeping towards the next tick.
    ticking: bool,
}

impl Pacer {
    fn lock(&self) -> MutexGuard<'_, PacerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `launch` at the next tick (at once where the pacer cannot tick).
    pub(super) fn defer(self: &Arc<Self>, launch: Option<Launch>) {
        let Some(launch) = launch else {
            return;
        };
        if TIMERS_UNAVAILABLE.load(Ordering::Relaxed) {
            launch.start();
            return;
        }
        let runtime = {
            let mut state = self.lock();
            let first = !state.ticking;
            state.ticking = true;
            let runtime = first.then(|| launch.runtime().clone());
            state.due.push(launch);
            runtime
        };
        if let Some(runtime) = runtime {
            runtime.spawn(tick(Arc::clone(self)));
        }
    }

    /// Takes the runs due; with none, the pacer stops ticking.
    fn take_due(&self) -> Vec<Launch> {
        let mut state = self.lock();
        let due = std::mem::take(&mut state.due);
        if due.is_empty() {
            state.ticking = false;
        }
        due
    }
}

/// The pacer's task: one tick at a time while runs keep arriving.
async fn tick(pacer: Arc<Pacer>) {
    let mut ticking = Ticking {
        pacer: &pacer,
        armed: true,
    };
    loop {
        tokio::time::sleep(TICK).await;
        let due = pacer.take_due();
        if due.is_empty() {
            ticking.armed = false;
            return;
        }
        for launch in due {
            launch.start_if_scheduled();
        }
    }
}

/// The pacer's task ended before its last tick: it panicked (a runtime without
/// timers) or its runtime shut down. What was due starts now, and the next run
/// handed to the pacer spawns a new task.
struct Ticking<'a> {
    pacer: &'a Pacer,
    armed: bool,
}

impl Drop for Ticking<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if std::thread::panicking() {
            TIMERS_UNAVAILABLE.store(true, Ordering::Relaxed);
        }
        let due = {
            let mut state = self.pacer.lock();
            state.ticking = false;
            std::mem::take(&mut state.due)
        };
        for launch in due {
            launch.start_if_scheduled();
        }
    }
}
