//! Spec: graph-engine §6 *Typed LLM completion event* (`input_messages`,
//! `request_params`) and observability §5.5.5: event payload parts built when an
//! observer first reads them.
//!
//! Rendering a transcript as JSON values costs more than the rest of a typed event
//! together (a map per message, per content block, each key hashed). The emitter
//! hands over an owned copy of what it has and a function that renders it; the value
//! is built once, on the first read, which happens on the delivery worker, off the
//! calling node's path, and never when no observer reads it. Clones (every event of
//! one call) share it.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

/// A payload part given as a value or built on first read; reads as a `T` (it
/// dereferences to it). Cloning shares the value (and the build, when it has not run).
/// One allocation either way (the builder lives inside the shared cell).
pub struct Deferred<T>(Arc<dyn Cell<T>>);

/// The message list of a request summary: JSON values in the llm-provider §3 shape.
pub type EventMessages = Deferred<Vec<Value>>;

/// A JSON mapping of a request summary (its declared parameters).
pub type EventMap = Deferred<Map<String, Value>>;

/// What a [`Deferred`] shares: a given value, or a builder and the value it built.
trait Cell<T>: Send + Sync {
    fn get(&self) -> &T;
    fn is_built(&self) -> bool;
}

struct Given<T>(T);

impl<T: Send + Sync> Cell<T> for Given<T> {
    fn get(&self) -> &T {
        &self.0
    }

    fn is_built(&self) -> bool {
        true
    }
}

struct Lazy<T, F> {
    value: OnceLock<T>,
    build: F,
}

impl<T: Send + Sync, F: Fn() -> T + Send + Sync> Cell<T> for Lazy<T, F> {
    fn get(&self) -> &T {
        self.value.get_or_init(&self.build)
    }

    fn is_built(&self) -> bool {
        self.value.get().is_some()
    }
}

impl<T: Send + Sync + 'static> Deferred<T> {
    /// A part given as a value.
    pub fn new(value: T) -> Self {
        Deferred(Arc::new(Given(value)))
    }

    /// A part `build` makes on the first read (at most once; later reads and clones
    /// share the result). `build` must always return the same value.
    pub fn lazy(build: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Deferred(Arc::new(Lazy {
            value: OnceLock::new(),
            build,
        }))
    }

    /// The value (built now if this is the first read).
    pub fn get(&self) -> &T {
        self.0.get()
    }

    /// Whether the value exists already (given, or read once).
    pub fn is_built(&self) -> bool {
        self.0.is_built()
    }
}

impl<T> Clone for Deferred<T> {
    fn clone(&self) -> Self {
        Deferred(Arc::clone(&self.0))
    }
}

impl<T: Send + Sync + 'static> Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.get()
    }
}

impl<T: Send + Sync + 'static> From<T> for Deferred<T> {
    fn from(value: T) -> Self {
        Deferred::new(value)
    }
}

impl<T: Default + Send + Sync + 'static> Default for Deferred<T> {
    fn default() -> Self {
        Deferred::new(T::default())
    }
}

impl<T: PartialEq + Send + Sync + 'static> PartialEq for Deferred<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.get() == other.get()
    }
}

impl<T: fmt::Debug + Send + Sync + 'static> fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    #[test]
    fn a_deferred_part_is_built_once_on_first_read_and_clones_share_it() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let messages = EventMessages::lazy(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            vec![json!({"role": "user", "content": "hi"})]
        });
        let copy = messages.clone();
        assert!(!messages.is_built());
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(copy.len(), 1);
        assert_eq!(messages[0]["content"], "hi");
        assert!(messages.is_built());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn given_and_deferred_parts_compare_by_their_values() {
        let given = EventMessages::from(vec![json!({"role": "system", "content": "s"})]);
        let deferred = EventMessages::lazy(|| vec![json!({"role": "system", "content": "s"})]);
        let other = EventMessages::new(vec![json!({"role": "system", "content": "t"})]);
        assert!(given.is_built());
        assert_eq!(given, deferred);
        assert_ne!(given, other);
        assert_eq!(format!("{deferred:?}"), format!("{:?}", given.get()));
        assert!(EventMessages::default().is_empty());
        let params = EventMap::lazy(|| {
            json!({"temperature": 0.2})
                .as_object()
                .cloned()
                .unwrap_or_default()
        });
        assert_eq!(params.get()["temperature"], 0.2);
    }
}
