//! Spec: retrieval-provider §10 (the inherited llm-provider §6 *Extras pass-through*
//! and *Managed-field collision* rules) as every §8.x mapping applies them.
//!
//! An undeclared extras key rides the wire body untouched unless the mapping
//! already produced that key (the mapping's value stands) or *manages* it: a
//! managed key whose extras value equals the mapping's is a redundant no-op; any
//! other value is rejected before sending (`provider_invalid_request`), never
//! silently dropped or honoured.

use serde_json::{Map, Value};

use crate::error::RetrievalError;

/// Rejects an extras `key` whose value differs from the mapping's managed `value`.
///
/// # Errors
/// `provider_invalid_request` on a conflict.
pub(crate) fn check_managed(
    extras: &Map<String, Value>,
    key: &str,
    value: &Value,
) -> Result<(), RetrievalError> {
    match extras.get(key) {
        Some(extra) if extra != value => Err(RetrievalError::invalid_request(format!(
            "extras `{key}` ({extra}) conflicts with the value the mapping manages ({value})"
        ))),
        _ => Ok(()),
    }
}

/// Appends the extras `body` does not already hold, in the caller's order, except
/// the `absorbed` keys (managed keys the mapping deliberately leaves off the wire).
pub(crate) fn append(
    body: &mut Map<String, Value>,
    extras: &Map<String, Value>,
    absorbed: &[&str],
) {
    for (k, v) in extras {
        if !body.contains_key(k) && !absorbed.contains(&k.as_str()) {
            body.insert(k.clone(), v.clone());
        }
    }
}

/// Inserts a declared field's wire realization `key` = `value`, rejecting a
/// conflicting extras value for it first (a managed non-additive scalar, §10).
///
/// # Errors
/// `provider_invalid_request` on a conflict.
pub(crate) fn insert_managed(
    body: &mut Map<String, Value>,
    extras: &Map<String, Value>,
    key: &str,
    value: Value,
) -> Result<(), RetrievalError> {
    check_managed(extras, key, &value)?;
    body.insert(key.to_owned(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn bag(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn managed_keys_absorb_equal_values_and_reject_others() {
        let equal = bag(json!({"truncate": false}));
        assert!(check_managed(&equal, "truncate", &json!(false)).is_ok());
        let conflict = bag(json!({"truncate": true}));
        assert!(check_managed(&conflict, "truncate", &json!(false)).is_err());
        assert!(check_managed(&Map::new(), "truncate", &json!(false)).is_ok());
    }

    #[test]
    fn extras_ride_except_produced_or_absorbed_keys() {
        let mut body = bag(json!({"model": "m"}));
        let extras = bag(json!({"model": "x", "truncate": false, "user": "u"}));
        append(&mut body, &extras, &["truncate"]);
        assert_eq!(Value::Object(body), json!({"model": "m", "user": "u"}));
    }
}
