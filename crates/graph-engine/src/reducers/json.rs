//! The canonical reducers over JSON values (used by [`crate::DynState`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::ReducerFailure;
use crate::error::{BoxError, CompileError};

/// Extracts a dedup / merge key from a JSON item. The key must be hashable in the
/// spec's sense: a scalar (string, number, bool or null), not a list or mapping.
pub type KeyFn = Arc<dyn Fn(&Value) -> Result<Value, BoxError> + Send + Sync>;

/// A custom reducer over JSON values.
pub type CustomReducerFn = Arc<dyn Fn(&Value, Value) -> Result<Value, BoxError> + Send + Sync>;

/// A reducer for one [`crate::DynState`] field.
#[derive(Clone)]
#[non_exhaustive]
pub enum Reducer {
    /// The update replaces the prior value (the default).
    LastWriteWins,
    /// List concatenation.
    Append,
    /// Shallow mapping merge, later writes win.
    Merge,
    /// Prior followed by the one-level flattening of a list of lists.
    ConcatFlatten,
    /// Folds a list of mappings into prior with `merge`.
    MergeAll,
    /// `append` capped at `max_len`, dropping from the front.
    BoundedAppend {
        /// The bound (≥ 1).
        max_len: usize,
    },
    /// `append` skipping items whose key is already present.
    DedupeAppend {
        /// The key; `None` uses the item itself.
        key: Option<KeyFn>,
    },
    /// List-of-records keyed merge: replace in place, append novel keys.
    MergeByKey {
        /// The key.
        key: KeyFn,
    },
    /// A user reducer.
    Custom {
        /// Its name (reported in errors).
        name: String,
        /// Whether re-merging an already merged value is a no-op (for the
        /// round-trip warning); `None` if unknown.
        round_trip_idempotent: Option<bool>,
        /// The function.
        f: CustomReducerFn,
    },
}

impl fmt::Debug for Reducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reducer::BoundedAppend { max_len } => write!(f, "bounded_append({max_len})"),
            other => f.write_str(&other.name()),
        }
    }
}

/// A key function reading one field of a mapping item (the fixture spelling
/// `{key: id}`).
pub fn field_key(field: impl Into<String>) -> KeyFn {
    let field = field.into();
    Arc::new(move |item: &Value| -> Result<Value, BoxError> {
        match item {
            Value::Object(map) => map
                .get(&field)
                .cloned()
                .ok_or_else(|| format!("item has no key field `{field}`: {item}").into()),
            other => {
                Err(format!("key field `{field}` read from a non-mapping item: {other}").into())
            }
        }
    })
}

impl Reducer {
    /// `bounded_append(max_len)`.
    ///
    /// # Errors
    /// `reducer_configuration_invalid` when `max_len < 1`.
    pub fn bounded_append(max_len: i64) -> Result<Self, CompileError> {
        Ok(Reducer::BoundedAppend {
            max_len: super::check_bounded_max_len(max_len)?,
        })
    }

    /// `merge_by_key(key)`; the spec gives `key` no default.
    ///
    /// # Errors
    /// `reducer_configuration_invalid` when `key` is `None`.
    pub fn merge_by_key(key: Option<KeyFn>) -> Result<Self, CompileError> {
        match key {
            Some(key) => Ok(Reducer::MergeByKey { key }),
            None => Err(CompileError::ReducerConfigurationInvalid {
                field: String::new(),
                message: "merge_by_key requires a key (it has no default)".into(),
            }),
        }
    }

    /// Looks up a parameterless canonical reducer by name.
    pub fn by_name(name: &str) -> Option<Self> {
        Some(match name {
            "last_write_wins" => Reducer::LastWriteWins,
            "append" => Reducer::Append,
            "merge" => Reducer::Merge,
            "concat_flatten" => Reducer::ConcatFlatten,
            "merge_all" => Reducer::MergeAll,
            "dedupe_append" => Reducer::DedupeAppend { key: None },
            _ => return None,
        })
    }

    /// The reducer's name as the spec spells it.
    pub fn name(&self) -> String {
        match self {
            Reducer::LastWriteWins => "last_write_wins".into(),
            Reducer::Append => "append".into(),
            Reducer::Merge => "merge".into(),
            Reducer::ConcatFlatten => "concat_flatten".into(),
            Reducer::MergeAll => "merge_all".into(),
            Reducer::BoundedAppend { .. } => "bounded_append".into(),
            Reducer::DedupeAppend { .. } => "dedupe_append".into(),
            Reducer::MergeByKey { .. } => "merge_by_key".into(),
            Reducer::Custom { name, .. } => name.clone(),
        }
    }

    /// Round-trip idempotency, for the compile-time warning.
    pub fn round_trip_idempotent(&self) -> Option<bool> {
        match self {
            Reducer::Custom {
                round_trip_idempotent,
                ..
            } => *round_trip_idempotent,
            other => crate::state::is_round_trip_idempotent(&other.name()),
        }
    }

    /// Applies the reducer.
    ///
    /// # Errors
    /// The spec's shape violations (non-list update to a list reducer, non-list
    /// element in `concat_flatten`, unhashable key, …).
    pub fn apply(&self, prior: &Value, update: Value) -> Result<Value, BoxError> {
        match self {
            Reducer::LastWriteWins => Ok(update),
            Reducer::Append => {
                let mut out = list(prior, "prior")?.clone();
                out.extend(into_list(update)?);
                Ok(Value::Array(out))
            }
            Reducer::Merge => {
                let mut out = map(prior, "prior")?.clone();
                match update {
                    Value::Object(u) => out.extend(u),
                    other => {
                        return Err(fail(format!(
                            "merge update must be a mapping, got {}",
                            kind(&other)
                        )))
                    }
                }
                Ok(Value::Object(out))
            }
            Reducer::ConcatFlatten => {
                let mut out = list(prior, "prior")?.clone();
                for (i, element) in into_list(update)?.into_iter().enumerate() {
                    match element {
                        Value::Array(items) => out.extend(items),
                        other => {
                            return Err(fail(format!(
                                "concat_flatten update element {i} must be a list, got {}: {other}",
                                kind(&other)
                            )))
                        }
                    }
                }
                Ok(Value::Array(out))
            }
            Reducer::MergeAll => {
                let mut out: Map<String, Value> = map(prior, "prior")?.clone();
                for (i, element) in into_list(update)?.into_iter().enumerate() {
                    match element {
                        Value::Object(m) => out.extend(m),
                        other => {
                            return Err(fail(format!(
                                "merge_all update element {i} must be a mapping, got {}: {other}",
                                kind(&other)
                            )))
                        }
                    }
                }
                Ok(Value::Object(out))
            }
            Reducer::BoundedAppend { max_len } => {
                let prior_items = list(prior, "prior")?;
                let update = into_list(update)?;
                if update.is_empty() {
                    return Ok(prior.clone());
                }
                let mut out = prior_items.clone();
                out.extend(update);
                if out.len() > *max_len {
                    out.drain(..out.len() - max_len);
                }
                Ok(Value::Array(out))
            }
            Reducer::DedupeAppend { key } => {
                let mut out = list(prior, "prior")?.clone();
                let mut seen = HashSet::new();
                for item in &out {
                    seen.insert(hash_key(key.as_ref(), item)?);
                }
                for item in into_list(update)? {
                    if seen.insert(hash_key(key.as_ref(), &item)?) {
                        out.push(item);
                    }
                }
                Ok(Value::Array(out))
            }
            Reducer::MergeByKey { key } => {
                let mut out = list(prior, "prior")?.clone();
                let mut index = HashMap::with_capacity(out.len());
                for (i, item) in out.iter().enumerate() {
                    index.insert(hash_key(Some(key), item)?, i);
                }
                for item in into_list(update)? {
                    let k = hash_key(Some(key), &item)?;
                    match index.get(&k) {
                        Some(&i) => out[i] = item,
                        None => {
                            index.insert(k, out.len());
                            out.push(item);
                        }
                    }
                }
                Ok(Value::Array(out))
            }
            Reducer::Custom { f, .. } => f(prior, update),
        }
    }
}

fn fail(message: String) -> BoxError {
    Box::new(ReducerFailure(message))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
    }
}

fn list<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>, BoxError> {
    match v {
        Value::Array(items) => Ok(items),
        other => Err(fail(format!(
            "{what} value must be a list, got {}",
            kind(other)
        ))),
    }
}

fn map<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, BoxError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(fail(format!(
            "{what} value must be a mapping, got {}",
            kind(other)
        ))),
    }
}

fn into_list(update: Value) -> Result<Vec<Value>, BoxError> {
    match update {
        Value::Array(items) => Ok(items),
        other => Err(fail(format!(
            "update must be a list, got {}: {other}",
            kind(&other)
        ))),
    }
}

/// A hashable rendering of a key; lists and mappings are unhashable (spec §2).
fn hash_key(key: Option<&KeyFn>, item: &Value) -> Result<String, BoxError> {
    let k = match key {
        Some(f) => f(item)?,
        None => item.clone(),
    };
    match k {
        Value::Array(_) | Value::Object(_) => Err(fail(format!("unhashable key: {k}"))),
        other => Ok(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn append_rejects_non_list_update() {
        let err = Reducer::Append.apply(&json!([]), json!("x")).unwrap_err();
        assert!(err.to_string().contains("must be a list"));
    }

    #[test]
    fn bounded_append_config_and_semantics() {
        assert_eq!(
            Reducer::bounded_append(0).unwrap_err().category(),
            "reducer_configuration_invalid"
        );
        let r = Reducer::bounded_append(3).unwrap();
        assert_eq!(
            r.apply(&json!([1]), json!([2, 3, 4, 5])).unwrap(),
            json!([3, 4, 5])
        );
    }

    #[test]
    fn dedupe_append_with_unhashable_item_fails() {
        let r = Reducer::DedupeAppend { key: None };
        assert!(r.apply(&json!([]), json!([[1]])).is_err());
        let r = Reducer::DedupeAppend {
            key: Some(field_key("id")),
        };
        let out = r
            .apply(&json!([{"id": 1}]), json!([{"id": 1, "v": 2}, {"id": 2}]))
            .unwrap();
        assert_eq!(out, json!([{"id": 1}, {"id": 2}]));
    }

    #[test]
    fn merge_all_and_concat_flatten_shapes() {
        let out = Reducer::MergeAll
            .apply(&json!({"a": 1}), json!([{"b": 2}, {"a": 3}]))
            .unwrap();
        assert_eq!(out, json!({"a": 3, "b": 2}));
        assert!(Reducer::MergeAll
            .apply(&json!({}), json!({"a": 1}))
            .is_err());
        assert!(Reducer::ConcatFlatten
            .apply(&json!([]), json!([["a"], "b"]))
            .is_err());
    }
}
