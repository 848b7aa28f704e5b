//! Live progress of a run's fan-outs, counted from observer events.
//!
//! [`ProgressCounter`] is an observer that keeps, per fan-out node, how many of its
//! items (instances) are announced, finished (succeeded, degraded, failed or
//! cancelled) and in flight. It draws nothing; `ProgressObserver` (feature
//! `progress`) draws the same counts as terminal progress bars.
//!
//! What counts, from the engine's events alone (the engine emits no per-instance
//! lifecycle event):
//!
//! - a fan-out node's `started` event announces its items
//!   ([`FanOutConfig::item_count`](openarmature_graph::FanOutConfig::item_count));
//!   a re-attempt of the fan-out node (a retry around it) replaces the earlier
//!   attempt's items;
//! - an item is **in flight** from the first `started` event of a node inside its
//!   instance until it finishes;
//! - it **succeeds** when a node directly inside the instance completes without an
//!   error — the named item node only, when one is set with
//!   [`ProgressCounter::item_node`] (set it when the instance graph has more than
//!   one node: otherwise the first node's success finishes the item);
//! - it is **degraded** when a failure-isolation middleware catches an error inside
//!   it (pipeline-utilities §6.3);
//! - when the fan-out node completes, every item still open finishes: **failed** if
//!   its last node attempt failed (an instance error under `error_policy: collect`),
//!   else **succeeded** when the fan-out succeeded, else **cancelled** (a fail-fast
//!   sibling stopped it).
//!
//! Nested fan-outs are counted per fan-out node path (`outer/inner`), summed over
//! the outer instances.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use openarmature_graph::{BoxError, NodeEvent, Observer, ObserverEvent, Phase, Registration};

use crate::node_path::node_path;

#[cfg(feature = "progress")]
mod bar;
#[cfg(feature = "progress")]
pub use bar::ProgressObserver;

/// One fan-out node's counts (summed over its dispatches).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FanOutProgress {
    /// The fan-out node's path: its namespace names joined with `/`.
    pub fan_out: String,
    /// Items announced by the fan-out's `started` events.
    pub total: usize,
    /// Items that succeeded.
    pub succeeded: usize,
    /// Items a failure-isolation middleware degraded.
    pub degraded: usize,
    /// Items whose last node attempt failed when the fan-out completed.
    pub failed: usize,
    /// Items still open when a failed fan-out completed.
    pub cancelled: usize,
    /// Items started and not finished.
    pub in_flight: usize,
}

impl FanOutProgress {
    /// Items finished one way or another.
    pub fn finished(&self) -> usize {
        self.succeeded + self.degraded + self.failed + self.cancelled
    }

    fn add(&mut self, other: &FanOutProgress) {
        self.total += other.total;
        self.succeeded += other.succeeded;
        self.degraded += other.degraded;
        self.failed += other.failed;
        self.cancelled += other.cancelled;
        self.in_flight += other.in_flight;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Succeeded,
    Degraded,
    Failed,
    Cancelled,
}

#[derive(Debug, Default)]
struct Instance {
    started: bool,
    finished: bool,
    last_failed: bool,
}

/// One dispatch of a fan-out node: one node attempt, in one outer instance.
#[derive(Debug, Default)]
struct Dispatch {
    fan_out: String,
    counts: FanOutProgress,
    instances: HashMap<usize, Instance>,
    closed: bool,
}

impl Dispatch {
    fn finish(&mut self, index: usize, how: Finish) {
        let instance = self.instances.entry(index).or_default();
        if instance.finished {
            return;
        }
        instance.finished = true;
        if instance.started {
            self.counts.in_flight -= 1;
        }
        let slot = match how {
            Finish::Succeeded => &mut self.counts.succeeded,
            Finish::Degraded => &mut self.counts.degraded,
            Finish::Failed => &mut self.counts.failed,
            Finish::Cancelled => &mut self.counts.cancelled,
        };
        *slot += 1;
    }
}

#[derive(Debug, Default)]
struct Counts {
    item_node: Option<String>,
    /// Keyed by invocation id and the fan-out node's labelled path.
    dispatches: HashMap<(Arc<str>, String), Dispatch>,
    /// Fan-out paths in the order they were first seen.
    order: Vec<String>,
}

/// The innermost fan-out instance an event's lineage is inside: (fan-out depth,
/// instance index). The fan-out node is `namespace[depth - 1]`.
fn innermost_instance(chain: &[Option<usize>]) -> Option<(usize, usize)> {
    chain
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, k)| k.map(|k| (i + 1, k)))
}

impl Counts {
    fn key(
        invocation: &Arc<str>,
        namespace: &[String],
        chain: &[Option<usize>],
        depth: usize,
    ) -> (Arc<str>, String) {
        (Arc::clone(invocation), node_path(namespace, chain, depth))
    }

    /// Applies one event; returns the fan-out paths whose counts changed.
    fn observe(&mut self, event: &ObserverEvent) -> Vec<String> {
        match event {
            ObserverEvent::Node(e) => {
                // A fan-out node's own event opens or closes its dispatch, and is a
                // node of the instance around it, if any.
                let own = e
                    .fan_out_config
                    .as_ref()
                    .map(|config| self.fan_out_node(e, config.item_count));
                own.into_iter().chain(self.node(e)).collect()
            }
            ObserverEvent::FailureIsolation(e) => {
                let lineage = &e.lineage;
                let Some((depth, index)) = innermost_instance(&lineage.fan_out_index_chain) else {
                    return Vec::new();
                };
                let key = Self::key(
                    &e.invocation_id,
                    &lineage.namespace,
                    &lineage.fan_out_index_chain,
                    depth,
                );
                let Some(dispatch) = self.dispatches.get_mut(&key) else {
                    return Vec::new();
                };
                dispatch.finish(index, Finish::Degraded);
                vec![dispatch.fan_out.clone()]
            }
            _ => Vec::new(),
        }
    }

    /// A node event inside a fan-out instance.
    fn node(&mut self, e: &NodeEvent) -> Option<String> {
        let chain = &e.fan_out_index_chain;
        let (depth, index) = innermost_instance(chain)?;
        let key = Self::key(&e.invocation_id, &e.namespace, chain, depth);
        let item_node = self.item_node.clone();
        let dispatch = self.dispatches.get_mut(&key)?;
        if dispatch.instances.get(&index).is_some_and(|i| i.finished) {
            return None;
        }
        let direct = e.namespace.len() == depth + 1;
        let instance = dispatch.instances.entry(index).or_default();
        match e.phase {
            Phase::Started => {
                if !instance.started {
                    instance.started = true;
                    dispatch.counts.in_flight += 1;
                }
            }
            _ => {
                instance.last_failed = e.error.is_some();
                let item = item_node.as_deref().is_none_or(|n| *e.node_name == *n);
                if direct && item && e.error.is_none() && e.phase == Phase::Completed {
                    dispatch.finish(index, Finish::Succeeded);
                }
            }
        }
        Some(dispatch.fan_out.clone())
    }

    fn fan_out_node(&mut self, e: &NodeEvent, item_count: usize) -> String {
        let depth = e.namespace.len();
        let key = Self::key(
            &e.invocation_id,
            &e.namespace,
            &e.fan_out_index_chain,
            depth,
        );
        let fan_out = e.namespace.join("/");
        if !self.order.contains(&fan_out) {
            self.order.push(fan_out.clone());
        }
        match e.phase {
            Phase::Started => {
                // A new dispatch (or a re-attempt, which replaces the earlier one).
                let dispatch = Dispatch {
                    fan_out: fan_out.clone(),
                    counts: FanOutProgress {
                        fan_out: fan_out.clone(),
                        total: item_count,
                        ..FanOutProgress::default()
                    },
                    ..Dispatch::default()
                };
                self.dispatches.insert(key, dispatch);
            }
            _ => {
                let ok = e.error.is_none();
                if let Some(dispatch) = self.dispatches.get_mut(&key) {
                    if !dispatch.closed {
                        dispatch.closed = true;
                        let open: Vec<(usize, bool)> = dispatch
                            .instances
                            .iter()
                            .filter(|(_, i)| !i.finished)
                            .map(|(k, i)| (*k, i.last_failed))
                            .collect();
                        for (index, last_failed) in open {
                            let how = match (last_failed, ok) {
                                (true, _) => Finish::Failed,
                                (false, true) => Finish::Succeeded,
                                (false, false) => Finish::Cancelled,
                            };
                            dispatch.finish(index, how);
                        }
                    }
                }
            }
        }
        fan_out
    }

    fn snapshot(&self, fan_out: &str) -> FanOutProgress {
        let mut sum = FanOutProgress {
            fan_out: fan_out.to_owned(),
            ..FanOutProgress::default()
        };
        for dispatch in self.dispatches.values().filter(|d| d.fan_out == fan_out) {
            sum.add(&dispatch.counts);
        }
        sum
    }
}

/// Counts fan-out items from observer events (see the [module docs](self) for the
/// rules). Cloning shares the counts; register a clone and read the other.
///
/// # Examples
/// ```
/// use openarmature_observability::progress::ProgressCounter;
///
/// let counter = ProgressCounter::new().item_node("extract");
/// // InvokeOptions::default().observer(counter.registration()) ... then:
/// for fan_out in counter.snapshot() {
///     println!("{}: {}/{} ({} in flight)", fan_out.fan_out, fan_out.finished(), fan_out.total, fan_out.in_flight);
/// }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProgressCounter(Arc<Mutex<Counts>>);

/// The registration name [`ProgressCounter::registration`] uses.
pub const PROGRESS_REGISTRATION_NAME: &str = "openarmature.progress";

impl ProgressCounter {
    /// An empty counter.
    pub fn new() -> Self {
        ProgressCounter::default()
    }

    /// Finishes an item only when the node named `name` (directly inside the
    /// instance) completes, not on the first node that does.
    pub fn item_node(self, name: impl Into<String>) -> Self {
        self.lock().item_node = Some(name.into());
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies one event (what [`Observer::on_event`] does); returns the counts of
    /// the fan-outs it changed (none, one, or a nested fan-out and the one around it).
    pub fn observe(&self, event: &ObserverEvent) -> Vec<FanOutProgress> {
        let mut counts = self.lock();
        let changed = counts.observe(event);
        changed.iter().map(|f| counts.snapshot(f)).collect()
    }

    /// Every fan-out seen so far, in the order first seen.
    pub fn snapshot(&self) -> Vec<FanOutProgress> {
        let counts = self.lock();
        counts.order.iter().map(|f| counts.snapshot(f)).collect()
    }

    /// A registration for `InvokeOptions::observer`, named
    /// [`PROGRESS_REGISTRATION_NAME`].
    pub fn registration(&self) -> Registration {
        Registration::new(PROGRESS_REGISTRATION_NAME, self.clone())
    }
}

impl Observer for ProgressCounter {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.observe(&event);
        Box::pin(std::future::ready(Ok(())))
    }
}
