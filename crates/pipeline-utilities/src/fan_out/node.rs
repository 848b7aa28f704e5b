//! Spec: pipeline-utilities §9 / §9.2 / §9.8 — the fan-out's `Node` impl: entry
//! resolution, bounded-concurrency scheduling, the event config and the compile
//! check (including the degrade slot coverage).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::{FuturesUnordered, StreamExt};
use openarmature_graph::checkpoint::FanOutTracker;
use openarmature_graph::{
    CompileError, CompileWarning, FanOutConfig, Node, NodeConfig, NodeCtx, NodeError, NodeFuture,
    State, StateRef,
};
use serde_json::Value;

use super::fan_in::Done;
use super::{fail, FanOutNode, OnEmpty};
use crate::dispatch::DispatchSite;
use crate::isolation::FailureIsolationMiddleware;

/// The instances not yet taken by a worker, in index order.
type Queue = Mutex<std::iter::Enumerate<std::vec::IntoIter<Option<Value>>>>;

/// Each instance's outcome, by index (`None` until it finished).
type Slots = Mutex<Vec<Option<Done>>>;

fn fill(slots: &Slots, index: usize, done: Done) {
    let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(slot) = slots.get_mut(index) {
        *slot = Some(done);
    }
}

impl<P: State, C: State> FanOutNode<P, C> {
    /// The next instance to run: the queue's next one the resumed record does not mark
    /// completed (those are rolled forward into `slots` on the way).
    fn next_pending(
        &self,
        queue: &Queue,
        tracker: Option<&FanOutTracker>,
        slots: &Slots,
    ) -> Option<(usize, Option<Value>)> {
        let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let next = queue.next()?;
            match tracker.and_then(|t| t.completed(next.0)) {
                Some(saved) => fill(slots, next.0, self.rolled_forward(saved)),
                None => return Some(next),
            }
        }
    }

    /// Resolves the instance inputs: the items (or `count` nulls) at entry.
    fn resolve_items(&self, state: &P) -> Result<Vec<Option<Value>>, NodeError> {
        if let Some((items_field, _)) = &self.items {
            return match state.field_json(items_field) {
                Some(Value::Array(items)) => Ok(items.into_iter().map(Some).collect()),
                other => Err(fail(
                    "fan_out_field_not_list",
                    format!("items_field `{items_field}` is not a list: {other:?}"),
                )),
            };
        }
        let count = match &self.count {
            Some(count) => count.resolve(state)?,
            None => 0,
        };
        Ok(vec![None; count])
    }

    fn resolve_concurrency(&self, state: &P) -> Result<Option<usize>, NodeError> {
        Ok(self.concurrency.resolve(state)?.map(NonZeroUsize::get))
    }
}

impl<P: State, C: State> Node<P> for FanOutNode<P, C> {
    fn run(&self, state: Arc<P>, ctx: NodeCtx) -> NodeFuture<'_, P> {
        Box::pin(async move {
            // Reuse what the engine resolved at entry (callables run once, §9.2).
            let resolved = match ctx.node_config() {
                Some(NodeConfig::FanOut(c)) => Some((c.item_count, c.concurrency)),
                _ => None,
            };
            let items = match (&self.items, resolved) {
                (None, Some((count, _))) => vec![None; count],
                _ => self.resolve_items(&state)?,
            };
            let bound = match resolved {
                Some((_, bound)) => bound,
                None => self.resolve_concurrency(&state)?,
            };
            let count = items.len();
            if count == 0 {
                if self.on_empty == OnEmpty::Raise {
                    return Err(fail(
                        "fan_out_empty",
                        format!("fan-out `{}` resolved zero instances", ctx.node_name()),
                    ));
                }
                return self.fan_in(&state, 0, Vec::new());
            }
            // Per-instance checkpoint progress (§10.11): `None` without a Checkpointer.
            let tracker = FanOutTracker::for_node(&ctx, &*state, count)?;
            let tracker = tracker.as_ref();
            // At most `limit` instances in flight: `limit` workers, each taking the
            // next instance in index order when its previous one finished (no task
            // or future allocated per instance).
            let limit = bound.unwrap_or(count).clamp(1, count);
            // Built only for a dispatcher: the default path allocates no key.
            let site = self
                .dispatcher
                .as_ref()
                .map(|_| DispatchSite::new(&ctx, count, limit));
            // What every instance context shares, built once.
            let entry = ctx.instance_entry(Arc::clone(&state) as StateRef);
            let (parent, entry, site) = (&*state, &entry, site.as_ref());
            let queue = Mutex::new(items.into_iter().enumerate());
            let mut slots = Vec::with_capacity(count);
            slots.resize_with(count, || None);
            let slots = Mutex::new(slots);
            let (queue, shared) = (&queue, &slots);
            let worker = move || async move {
                // A resumed run skips the instances the record marks completed: their
                // contributions roll forward unchanged.
                while let Some(next) = self.next_pending(queue, tracker, shared) {
                    let index = next.0;
                    let done = self.run_tracked(parent, entry, tracker, site, next).await?;
                    fill(shared, index, done);
                }
                Ok::<_, NodeError>(())
            };
            let mut workers: FuturesUnordered<_> = (0..limit).map(|_| worker()).collect();
            while let Some(finished) = workers.next().await {
                // Dropping the workers cancels every sibling still running.
                if let Err(error) = finished {
                    drop(workers);
                    return Err(error);
                }
            }
            drop(workers);
            let slots = slots.into_inner().unwrap_or_else(PoisonError::into_inner);
            self.fan_in(&state, count, slots.into_iter().flatten())
        })
    }

    fn event_config(&self, name: &str, state: &P) -> Option<NodeConfig> {
        let item_count = match &self.items {
            Some((items_field, _)) => match state.field_json(items_field) {
                Some(Value::Array(items)) => items.len(),
                _ => return None,
            },
            None => self.resolve_items(state).ok()?.len(),
        };
        let concurrency = self.resolve_concurrency(state).ok()?;
        Some(NodeConfig::FanOut(FanOutConfig {
            item_count,
            concurrency,
            error_policy: self.error_policy.as_str().to_owned(),
            parent_node_name: name.to_owned(),
        }))
    }

    fn check(&self, name: &str, parent: &P) -> Result<Vec<CompileWarning>, CompileError> {
        let ambiguous = |message: &str| CompileError::Node {
            node: name.to_owned(),
            category: "fan_out_count_mode_ambiguous",
            message: message.to_owned(),
        };
        match (&self.items, &self.count) {
            (Some(_), Some(_)) => return Err(ambiguous("both items_field and count are set")),
            (None, None) => return Err(ambiguous("neither items_field nor count is set")),
            (None, Some(_)) if self.item_field.is_some() => {
                return Err(ambiguous("item_field must be absent in count mode"))
            }
            _ => {}
        }
        self.check_fields(name, parent)?;
        for middleware in &self.instance_middleware {
            let isolation = middleware
                .as_any()
                .and_then(|m| m.downcast_ref::<FailureIsolationMiddleware<C>>());
            if let Some(fields) =
                isolation.and_then(FailureIsolationMiddleware::static_update_fields)
            {
                if !fields.contains(&self.collect_field) {
                    return Err(CompileError::Node {
                        node: name.to_owned(),
                        category: "fan_out_degraded_update_missing_collect_field",
                        message: format!(
                            "the static degraded_update of instance failure isolation does not set collect_field `{}`",
                            self.collect_field
                        ),
                    });
                }
            }
        }
        Ok(self.round_trip_warnings(name, parent))
    }
}
