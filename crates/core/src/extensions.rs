//! A type-keyed map that lets a crate attach its own state to a context it does not
//! own (in the manner of `http::Extensions`): the engine hands every node attempt
//! one, and `openarmature-llm` keeps its per-node call ordinals there instead of the
//! engine growing a method for them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

type Entries = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// A map holding at most one value per type, shared by its clones.
///
/// Cloning is cheap (one shared pointer) and every clone sees the same entries: an
/// entry inserted through one clone is visible through the others. Values are kept
/// behind `Arc`s; a value that must change after insertion carries its own interior
/// mutability (an atomic, a `Mutex`). Use [`Extensions::fork`] for an independent
/// copy. Key the map by a type private to your crate so no other crate can read or
/// replace your entry.
///
/// # Examples
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use openarmature_core::Extensions;
///
/// #[derive(Default)]
/// struct Calls(AtomicU32);
///
/// let ext = Extensions::new();
/// let shared = ext.clone();
/// ext.get_or_insert_with(Calls::default).0.fetch_add(1, Ordering::SeqCst);
/// assert_eq!(shared.get::<Calls>().map(|c| c.0.load(Ordering::SeqCst)), Some(1));
///
/// let copy = ext.fork();
/// copy.insert(Calls(AtomicU32::new(7)));
/// assert_eq!(ext.get::<Calls>().map(|c| c.0.load(Ordering::SeqCst)), Some(1));
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    entries: Arc<Mutex<Entries>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Extensions::default()
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry of type `T`, if one was inserted.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let entry = self.lock().get(&TypeId::of::<T>()).cloned()?;
        entry.downcast::<T>().ok()
    }

    /// Inserts `value` as the entry of type `T`, returning the entry it replaces.
    pub fn insert<T: Send + Sync + 'static>(&self, value: T) -> Option<Arc<T>> {
        let previous = self.lock().insert(TypeId::of::<T>(), Arc::new(value))?;
        previous.downcast::<T>().ok()
    }

    /// The entry of type `T`, inserting `make()` first when there is none (one
    /// atomic step: concurrent callers get the same entry).
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let mut entries = self.lock();
        let key = TypeId::of::<T>();
        if let Some(found) = entries
            .get(&key)
            .and_then(|e| Arc::clone(e).downcast::<T>().ok())
        {
            return found;
        }
        let value = Arc::new(make());
        entries.insert(key, Arc::clone(&value) as Arc<dyn Any + Send + Sync>);
        value
    }

    /// Whether the map holds an entry of type `T`.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.lock().contains_key(&TypeId::of::<T>())
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the map holds no entry.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// An independent map with the same entries (the values themselves are shared):
    /// later inserts into either map do not show in the other.
    pub fn fork(&self) -> Extensions {
        Extensions {
            entries: Arc::new(Mutex::new(self.lock().clone())),
        }
    }

    /// Whether both handles share one map.
    pub fn ptr_eq(&self, other: &Extensions) -> bool {
        Arc::ptr_eq(&self.entries, &other.entries)
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Note(&'static str);

    #[test]
    fn one_entry_per_type_shared_by_clones() {
        let ext = Extensions::new();
        assert!(ext.is_empty() && ext.get::<Note>().is_none());
        assert!(ext.insert(Note("a")).is_none());
        let clone = ext.clone();
        assert!(clone.ptr_eq(&ext));
        assert_eq!(clone.insert(Note("b")).as_deref(), Some(&Note("a")));
        assert_eq!(ext.get::<Note>().as_deref(), Some(&Note("b")));
        assert_eq!(ext.get_or_insert_with(|| Note("c")).as_ref(), &Note("b"));
        assert_eq!(*ext.get_or_insert_with(|| 5_u8), 5);
        assert_eq!(ext.len(), 2);
        assert!(ext.contains::<u8>() && !ext.contains::<u16>());
    }

    #[test]
    fn forks_are_independent() {
        let ext = Extensions::new();
        ext.insert(Note("a"));
        let fork = ext.fork();
        assert!(!fork.ptr_eq(&ext));
        fork.insert(Note("b"));
        fork.insert(1_u8);
        assert_eq!(ext.get::<Note>().as_deref(), Some(&Note("a")));
        assert!(!ext.contains::<u8>());
        assert_eq!(format!("{ext:?}"), "Extensions { len: 1, .. }");
    }
}
