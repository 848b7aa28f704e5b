//! Spec: observability §3.4 — caller-supplied invocation metadata: the key and value
//! rules (owned by the engine, which enforces them at the mid-invocation helper too,
//! and re-exported here) and the `openarmature.user.<key>` attributes (§5.6) the
//! values become.

use opentelemetry::{Array, KeyValue, StringValue, Value as OtelValue};
use serde_json::{Map, Value};

pub use openarmature_graph::metadata::{
    check_key, check_value, get_invocation_metadata, set_invocation_metadata, validate,
    InvocationMetadata, MetadataError, INVOCATION_METADATA_INVALID, RESERVED_KEYS,
    RESERVED_PREFIXES,
};

use crate::attributes::USER_PREFIX;

/// Converts one metadata value to an OpenTelemetry attribute value: a string, int,
/// float or bool, or a homogeneous array of one of those.
///
/// # Errors
/// [`MetadataError::InvalidValue`] for null, objects, empty, nested or mixed arrays.
pub fn attribute_value(key: &str, value: &Value) -> Result<OtelValue, MetadataError> {
    let invalid = |reason: &str| MetadataError::InvalidValue {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    match value {
        Value::String(s) => Ok(OtelValue::from(s.clone())),
        Value::Bool(b) => Ok(OtelValue::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Ok(OtelValue::I64(i)),
            None => n
                .as_f64()
                .map(OtelValue::F64)
                .ok_or_else(|| invalid("a number outside the 64-bit range")),
        },
        Value::Null => Err(invalid("null is not an attribute value")),
        Value::Object(_) => Err(invalid("nested objects are not attribute values")),
        Value::Array(items) => array_value(items).ok_or_else(|| {
            invalid(
                "an array value must be non-empty and homogeneous (strings, ints, floats or bools)",
            )
        }),
    }
}

fn array_value(items: &[Value]) -> Option<OtelValue> {
    let first = items.first()?;
    let array = match first {
        Value::String(_) => Array::String(
            items
                .iter()
                .map(|v| v.as_str().map(|s| StringValue::from(s.to_owned())))
                .collect::<Option<_>>()?,
        ),
        Value::Bool(_) => Array::Bool(items.iter().map(Value::as_bool).collect::<Option<_>>()?),
        Value::Number(n) if n.is_i64() => {
            Array::I64(items.iter().map(Value::as_i64).collect::<Option<_>>()?)
        }
        Value::Number(_) => Array::F64(
            items
                .iter()
                .map(|v| v.is_number().then(|| v.as_f64()).flatten())
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    };
    Some(OtelValue::Array(array))
}

/// Validates a whole metadata mapping (§3.4) and returns its `openarmature.user.<key>`
/// attributes (§5.6), in the mapping's order.
///
/// # Errors
/// The first [`MetadataError`] found.
///
/// # Examples
/// ```
/// use openarmature_observability::metadata::user_attributes;
/// let meta = serde_json::json!({"tenantId": "acme", "seats": 3});
/// let attrs = user_attributes(meta.as_object().unwrap()).unwrap();
/// assert_eq!(attrs[0].key.as_str(), "openarmature.user.tenantId");
///
/// let bad = serde_json::json!({"gen_ai.system": "openai"});
/// assert!(user_attributes(bad.as_object().unwrap()).is_err());
/// ```
pub fn user_attributes(metadata: &Map<String, Value>) -> Result<Vec<KeyValue>, MetadataError> {
    metadata
        .iter()
        .map(|(key, value)| {
            check_key(key)?;
            Ok(KeyValue::new(
                format!("{USER_PREFIX}{key}"),
                attribute_value(key, value)?,
            ))
        })
        .collect()
}

/// The `openarmature.user.*` attributes of the entries of `metadata` that satisfy
/// §3.4, skipping the others (what already-accepted metadata renders as).
pub(crate) fn lenient_user_attributes(metadata: &Map<String, Value>) -> Vec<KeyValue> {
    metadata
        .iter()
        .filter(|(key, _)| check_key(key).is_ok())
        .filter_map(|(key, value)| {
            let value = attribute_value(key, value).ok()?;
            Some(KeyValue::new(format!("{USER_PREFIX}{key}"), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn accepts_scalars_and_homogeneous_arrays() {
        let attrs = user_attributes(&map(json!({
            "a": "x", "b": 1, "c": 1.5, "d": true, "e": ["p", "q"], "f": [1, 2]
        })))
        .unwrap_or_default();
        assert_eq!(attrs.len(), 6);
        assert_eq!(attrs[1].value, OtelValue::I64(1));
        assert_eq!(
            attrs[5].value,
            OtelValue::Array(Array::I64(vec![1, 2])),
            "int arrays stay int arrays"
        );
    }

    #[test]
    fn rejects_reserved_keys_and_bad_values() {
        for bad in [
            json!({"openarmature.user.x": "v"}),
            json!({"gen_ai.system": "v"}),
            json!({"step": "v"}),
            json!({"correlation_id": "v"}),
            json!({"k": null}),
            json!({"k": {"nested": 1}}),
            json!({"k": [1, "mixed"]}),
            json!({"k": []}),
            json!({"k": [[1]]}),
        ] {
            assert!(user_attributes(&map(bad.clone())).is_err(), "{bad}");
        }
        assert_eq!(
            check_key("stepCount"),
            Ok(()),
            "reserved names match whole keys only"
        );
    }
}
