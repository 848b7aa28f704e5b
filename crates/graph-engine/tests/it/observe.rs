//! The node-event observer several test modules register, and the JSON view of a
//! node event they compare.

use std::sync::{Arc, Mutex};

use openarmature_graph::{observer_fn, NodeEvent, ObserverEvent, Registration};
use serde_json::{json, Value};

/// The node events a [`collector`] gathers, in delivery order.
pub(crate) type Events = Arc<Mutex<Vec<NodeEvent>>>;

/// An observer named `name` collecting every node event into `events`.
pub(crate) fn collector(name: &'static str, events: &Events) -> Registration {
    let events = Arc::clone(events);
    Registration::new(
        name,
        observer_fn(move |e: Arc<ObserverEvent>| {
            let events = Arc::clone(&events);
            async move {
                if let Some(n) = e.as_node() {
                    events.lock().unwrap().push(n.clone());
                }
                Ok(())
            }
        }),
    )
}

/// A node event as JSON, for comparing event sequences across invocations: every
/// field but the correlation id, which each invocation mints afresh.
pub(crate) fn event_json(e: &NodeEvent) -> Value {
    json!({
        "phase": e.phase.as_str(),
        "node": &*e.node_name,
        "namespace": e.namespace.to_vec(),
        "step": e.step,
        "attempt": e.attempt_index,
        "pre": e.pre_state.to_json(),
        "post": e.post_state.as_ref().map(|s| s.to_json()),
        "error": e.error.as_ref().map(|x| json!({"category": x.category, "message": x.message})),
        "parents": e.parent_states.iter().map(|s| s.to_json()).collect::<Vec<_>>(),
        "invocation_id": &*e.invocation_id,
    })
}
