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
/// One allocation either way (the builder lives inside the shared cell); two parts
/// made by [`Deferred::lazy_pair`] share one allocation between them.
pub struct Deferred<T>(Repr<T>);

/// Where a [`Deferred`]'s value lives: its own cell, or the second half of a pair.
enum Repr<T> {
    Own(Arc<dyn Cell<T>>),
    Second(Arc<dyn SecondCell<T>>),
}

/// The message list of a request summary: JSON values in the llm-provider §3 shape.
pub type EventMessages = Deferred<Vec<Value>>;

/// A JSON mapping of a request summary (its declared parameters).
pub type EventMap = Deferred<Map<String, Value>>;

/// What a [`Deferred`] shares: a given value, or a builder and the value it built.
trait Cell<T>: Send + Sync {
    fn get(&self) -> &T;
    fn is_built(&self) -> bool;
}

/// The second part of a [`Pair`] (a separate trait, so a pair of one type twice does
/// not implement [`Cell`] twice).
trait SecondCell<T>: Send + Sync {
    fn get_second(&self) -> &T;
    fn is_second_built(&self) -> bool;
}

/// Two parts built from one source, each on its first read: one allocation.
struct Pair<S, T, U> {
    source: S,
    first: OnceLock<T>,
    second: OnceLock<U>,
    build_first: fn(&S) -> T,
    build_second: fn(&S) -> U,
}

impl<S: Send + Sync, T: Send + Sync, U: Send + Sync> Cell<T> for Pair<S, T, U> {
    fn get(&self) -> &T {
        self.first.get_or_init(|| (self.build_first)(&self.source))
    }

    fn is_built(&self) -> bool {
        self.first.get().is_some()
    }
}

impl<S: Send + Sync, T: Send + Sync, U: Send + Sync> SecondCell<U> for Pair<S, T, U> {
    fn get_second(&self) -> &U {
        self.second
            .get_or_init(|| (self.build_second)(&self.source))
    }

    fn is_second_built(&self) -> bool {
        self.second.get().is_some()
    }
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
        Deferred(Repr::Own(Arc::new(Given(value))))
    }

    /// A part `build` makes on the first read (at most once; later reads and clones
    /// share the result). `build` must always return the same value.
    pub fn lazy(build: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Deferred(Repr::Own(Arc::new(Lazy {
            value: OnceLock::new(),
            build,
        })))
    }

    /// Two parts built from one `source` (moved in), each by its function on its first
    /// read, in one allocation for the source and both values (an emitter's request
    /// summary: the transcript and the parameters). Each function must always return
    /// the same value for the source.
    pub fn lazy_pair<S, U>(
        source: S,
        build_first: fn(&S) -> T,
        build_second: fn(&S) -> U,
    ) -> (Deferred<T>, Deferred<U>)
    where
        S: Send + Sync + 'static,
        U: Send + Sync + 'static,
    {
        let pair = Arc::new(Pair {
            source,
            first: OnceLock::new(),
            second: OnceLock::new(),
            build_first,
            build_second,
        });
        let second: Arc<dyn SecondCell<U>> = pair.clone();
        (Deferred(Repr::Own(pair)), Deferred(Repr::Second(second)))
    }

    /// The value (built now if this is the first read).
    pub fn get(&self) -> &T {
        match &self.0 {
            Repr::Own(cell) => cell.get(),
            Repr::Second(cell) => cell.get_second(),
        }
    }

    /// Whether the value exists already (given, or read once).
    pub fn is_built(&self) -> bool {
        match &self.0 {
            Repr::Own(cell) => cell.is_built(),
            Repr::Second(cell) => cell.is_second_built(),
        }
    }

    /// Whether both are the same shared part (clones of one another).
    fn same_cell(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Own(a), Repr::Own(b)) => Arc::ptr_eq(a, b),
            (Repr::Second(a), Repr::Second(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl<T> Clone for Deferred<T> {
    fn clone(&self) -> Self {
        Deferred(match &self.0 {
            Repr::Own(cell) => Repr::Own(Arc::clone(cell)),
            Repr::Second(cell) => Repr::Second(Arc::clone(cell)),
        })
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
        self.same_cell(other) || self.get() == other.get()
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

    #[test]
    fn a_lazy_pair_builds_each_part_once_from_one_source() {
        static FIRST: AtomicUsize = AtomicUsize::new(0);
        static SECOND: AtomicUsize = AtomicUsize::new(0);
        let (words, count): (Deferred<Vec<Value>>, Deferred<usize>) = Deferred::lazy_pair(
            vec!["a".to_owned(), "b".to_owned()],
            |source| {
                FIRST.fetch_add(1, Ordering::SeqCst);
                source.iter().map(|w| json!(w)).collect()
            },
            |source| {
                SECOND.fetch_add(1, Ordering::SeqCst);
                source.len()
            },
        );
        let copy = count.clone();
        assert!(!words.is_built() && !count.is_built());
        assert_eq!(*copy, 2);
        assert!(count.is_built() && !words.is_built());
        assert_eq!(FIRST.load(Ordering::SeqCst), 0);
        assert_eq!(words[1], "b");
        assert_eq!(*count, 2);
        assert_eq!(
            (FIRST.load(Ordering::SeqCst), SECOND.load(Ordering::SeqCst)),
            (1, 1)
        );
        assert_eq!(copy, Deferred::new(2));
        assert_ne!(copy, Deferred::new(3));
    }
}
