//! An observer that records every event it is delivered, for tests that assert on
//! the event sequence.

use std::sync::{Arc, Mutex};

use openarmature_graph::{observer_fn, ObserverEvent, Registration};

/// Every event an observer saw, in delivery order.
pub type Events = Arc<Mutex<Vec<Arc<ObserverEvent>>>>;

/// An observer named `name` appending every event it is delivered to `sink`.
pub fn recording(name: &'static str, sink: &Events) -> Registration {
    let sink = Arc::clone(sink);
    Registration::new(
        name,
        observer_fn(move |e: Arc<ObserverEvent>| {
            if let Ok(mut seen) = sink.lock() {
                seen.push(e);
            }
            std::future::ready(Ok::<(), openarmature_graph::BoxError>(()))
        }),
    )
}
