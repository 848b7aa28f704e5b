//! Spec: observability §9 (queryable observer pattern: read-method contract,
//! async-safety, lifecycle) — the harness-defined queryable observer kinds of
//! fixtures 047–049 (`queryable_observers: [{name, kind}]`).
//!
//! One observer type serves the three kinds; every read takes one lock over the
//! whole accumulated state, so a read is never torn (§9.2). Only node events are
//! counted. Nothing is dropped on the invocation's completion: buckets go only
//! through [`Queryable::drop_bucket`] (§9.4).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::{BoxError, Observer, ObserverEvent, Registration};
use serde_json::{json, Value};

use crate::shared::lock;
use crate::yaml::Y;
use crate::AdapterError;

/// The harness-defined observer kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `event_counter`: `get_count()`.
    EventCounter,
    /// `typed_event_counter`: `get_snapshot()` → `{total, by_type}`.
    TypedEventCounter,
    /// `per_invocation_accumulator`: `get_bucket_for_current_invocation()`,
    /// `drop(invocation_id)`.
    PerInvocationAccumulator,
}

#[derive(Default)]
struct Accumulated {
    total: u64,
    /// Node events by phase (`started` / `completed`).
    by_type: BTreeMap<String, u64>,
    /// Per invocation id: `<invocation>#<step>:<node>:<phase>` per node event.
    buckets: BTreeMap<String, Vec<String>>,
}

/// A queryable observer: consumes node events, answers read methods.
pub(crate) struct Queryable {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    state: Mutex<Accumulated>,
}

impl Queryable {
    /// `{name, kind, persists_across_invocations?}`.
    pub(crate) fn parse(y: &Y<'_>) -> Result<Queryable, AdapterError> {
        y.check_keys(&["name", "kind", "persists_across_invocations"])?;
        let kind_y = y.req("kind")?;
        let kind = match kind_y.str()? {
            "event_counter" => Kind::EventCounter,
            "typed_event_counter" => Kind::TypedEventCounter,
            "per_invocation_accumulator" => Kind::PerInvocationAccumulator,
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: kind_y.file.to_path_buf(),
                    directive: format!("queryable observer kind `{other}`"),
                    location: kind_y.location().to_owned(),
                })
            }
        };
        Ok(Queryable {
            name: y.req("name")?.str()?.to_owned(),
            kind,
            state: Mutex::new(Accumulated::default()),
        })
    }

    /// A registration for one invocation (the same instance every time).
    pub(crate) fn registration(self: &Arc<Self>) -> Registration {
        Registration::shared(self.name.clone(), Arc::clone(self) as Arc<dyn Observer>)
    }

    /// Calls the read method `method` for `invocation_id` (§9.1: query-only).
    ///
    /// # Errors
    /// A method this kind does not expose (a node error's message: a node body
    /// reads).
    pub(crate) fn read(&self, method: &str, invocation_id: &str) -> Result<Value, String> {
        let state = lock(&self.state);
        match (self.kind, method) {
            (Kind::EventCounter, "get_count") => Ok(Value::from(state.total)),
            (Kind::TypedEventCounter, "get_snapshot") => {
                Ok(json!({"total": state.total, "by_type": state.by_type}))
            }
            (Kind::PerInvocationAccumulator, "get_bucket_for_current_invocation") => {
                Ok(match state.buckets.get(invocation_id) {
                    Some(events) => json!({"invocation_id": invocation_id, "events": events}),
                    None => Value::Null,
                })
            }
            (kind, other) => Err(format!(
                "harness_primitive_missing: a {kind:?} observer has no read method `{other}`"
            )),
        }
    }

    /// §9.4 explicit drop: releases `invocation_id`'s bucket; true if there was one.
    pub(crate) fn drop_bucket(&self, invocation_id: &str) -> bool {
        lock(&self.state).buckets.remove(invocation_id).is_some()
    }

    /// Whether `invocation_id` has a bucket.
    pub(crate) fn has_bucket(&self, invocation_id: &str) -> bool {
        lock(&self.state).buckets.contains_key(invocation_id)
    }

    /// Every node event counted so far.
    pub(crate) fn total(&self) -> u64 {
        lock(&self.state).total
    }
}

impl Observer for Queryable {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        if let Some(node) = event.as_node() {
            let mut state = lock(&self.state);
            state.total += 1;
            *state
                .by_type
                .entry(node.phase.as_str().to_owned())
                .or_default() += 1;
            let inv = node.invocation_id.to_string();
            let entry = format!(
                "{inv}#{}:{}:{}",
                node.step,
                node.node_name,
                node.phase.as_str()
            );
            state.buckets.entry(inv).or_default().push(entry);
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
