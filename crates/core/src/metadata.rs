//! Spec: observability §3.4 — the invocation-metadata snapshot every event carries.
//! The rules, the scoping and the read / write helpers live in `openarmature-graph`
//! (`openarmature_graph::metadata`).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

/// An immutable snapshot of invocation metadata: string keys to attribute values.
///
/// Cheap to clone (a shared pointer) and read-only: it dereferences to the
/// underlying [`Map`] for lookups and iteration, and nothing can change it after
/// the fact — later writes produce a new snapshot.
///
/// # Examples
/// ```
/// use openarmature_core::InvocationMetadata;
/// let meta = InvocationMetadata::from_map(
///     serde_json::json!({"tenantId": "acme"}).as_object().cloned().unwrap_or_default(),
/// );
/// assert_eq!(meta.get("tenantId"), Some(&serde_json::json!("acme")));
/// assert!(InvocationMetadata::default().is_empty());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct InvocationMetadata(Arc<Map<String, Value>>);

impl InvocationMetadata {
    /// Wraps `map` as given. It is not checked against the §3.4 key / value rules:
    /// `openarmature_graph::metadata::validate` checks it, and the engine's
    /// `invoke()` boundary does.
    pub fn from_map(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            return InvocationMetadata::default();
        }
        InvocationMetadata(Arc::new(map))
    }

    /// The shared map (no copy).
    pub fn as_arc(&self) -> &Arc<Map<String, Value>> {
        &self.0
    }

    /// An owned copy of the entries.
    pub fn to_map(&self) -> Map<String, Value> {
        (*self.0).clone()
    }

    /// Whether both snapshots share one map (so they are equal without a comparison).
    pub fn ptr_eq(&self, other: &InvocationMetadata) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// This snapshot with `delta` merged in (existing keys overwritten, the others
    /// kept, new keys appended in `delta`'s order).
    pub fn merged(&self, delta: &Map<String, Value>) -> InvocationMetadata {
        let mut map = self.to_map();
        for (k, v) in delta {
            map.insert(k.clone(), v.clone());
        }
        InvocationMetadata(Arc::new(map))
    }
}

impl Default for InvocationMetadata {
    /// The empty snapshot (shared; no allocation).
    fn default() -> Self {
        static EMPTY: OnceLock<Arc<Map<String, Value>>> = OnceLock::new();
        InvocationMetadata(Arc::clone(EMPTY.get_or_init(Arc::default)))
    }
}

impl Deref for InvocationMetadata {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl fmt::Debug for InvocationMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<InvocationMetadata> for Value {
    fn from(meta: InvocationMetadata) -> Value {
        Value::Object(meta.to_map())
    }
}
