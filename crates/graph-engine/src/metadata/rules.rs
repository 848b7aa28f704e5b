//! Spec: observability §3.4 *Key/value constraints* — the rules every metadata entry
//! obeys, enforced identically at the `invoke()` boundary and at the mid-invocation
//! helper.

use serde_json::{Map, Value};

/// Key names a §8 backend mapping writes at the top level of its metadata object; a
/// caller key may not equal one of them (exact, whole-key match).
pub const RESERVED_KEYS: &[&str] = &[
    "correlation_id",
    "entry_node",
    "spec_version",
    "detached_child_trace_ids",
    "namespace",
    "step",
    "attempt_index",
    "fan_out_index",
    "subgraph_name",
    "fan_out_item_count",
    "fan_out_concurrency",
    "fan_out_error_policy",
    "fan_out_parent_node_name",
    "prompt_group_name",
    "request_extras",
    "finish_reason",
    "system",
    "response_model",
    "response_id",
    "prompt",
    "invocation_id",
    "branch_name",
    "detached",
    "detached_from_invocation_id",
    "implementation_name",
    "implementation_version",
    "parallel_branches_branch_count",
    "parallel_branches_error_policy",
    "parallel_branches_parent_node_name",
];

/// Key prefixes reserved for OpenArmature and the GenAI semantic conventions.
pub const RESERVED_PREFIXES: &[&str] = &["openarmature.", "gen_ai."];

/// The category every [`MetadataError`] carries.
pub const INVOCATION_METADATA_INVALID: &str = "invocation_metadata_invalid";

/// Invocation metadata that breaks a §3.4 rule: raised at the `invoke()` boundary
/// before any work begins, or at the `set_invocation_metadata` call site before
/// anything is merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The key is under `openarmature.*` or `gen_ai.*`.
    #[error("invocation metadata key `{key}` is in the reserved `{prefix}*` namespace")]
    ReservedNamespace {
        /// The offending key.
        key: String,
        /// The reserved prefix it starts with.
        prefix: &'static str,
    },
    /// The key equals an OpenArmature-emitted backend metadata name.
    #[error("invocation metadata key `{key}` is a reserved OpenArmature metadata name")]
    ReservedName {
        /// The offending key.
        key: String,
    },
    /// The value is not an OpenTelemetry attribute value (null, an object, an empty,
    /// mixed or nested array).
    #[error("invocation metadata `{key}`: {reason}")]
    InvalidValue {
        /// The key whose value is invalid.
        key: String,
        /// Why.
        reason: String,
    },
}

impl MetadataError {
    /// The error's category: [`INVOCATION_METADATA_INVALID`] for every variant (it is
    /// also what [`crate::category_of`] reports for it in a cause chain).
    pub fn category(&self) -> &'static str {
        INVOCATION_METADATA_INVALID
    }

    /// The key the error is about.
    pub fn key(&self) -> &str {
        match self {
            MetadataError::ReservedNamespace { key, .. }
            | MetadataError::ReservedName { key }
            | MetadataError::InvalidValue { key, .. } => key,
        }
    }
}

/// Checks one key against the reserved namespaces and names.
///
/// # Errors
/// [`MetadataError::ReservedNamespace`] or [`MetadataError::ReservedName`].
pub fn check_key(key: &str) -> Result<(), MetadataError> {
    if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| key.starts_with(*p)) {
        return Err(MetadataError::ReservedNamespace {
            key: key.to_owned(),
            prefix,
        });
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(MetadataError::ReservedName {
            key: key.to_owned(),
        });
    }
    Ok(())
}

/// The scalar kind of an attribute value, for the homogeneity check.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    String,
    Bool,
    Int,
    Float,
}

fn scalar_kind(value: &Value) -> Option<Kind> {
    match value {
        Value::String(_) => Some(Kind::String),
        Value::Bool(_) => Some(Kind::Bool),
        Value::Number(n) if n.is_i64() => Some(Kind::Int),
        Value::Number(n) if n.as_f64().is_some() => Some(Kind::Float),
        _ => None,
    }
}

/// Checks one value: a string, int, float or bool, or a non-empty homogeneous array
/// of one of those (OpenTelemetry's `AttributeValue`; an array starting with an int
/// is an int array and may not hold floats).
///
/// # Errors
/// [`MetadataError::InvalidValue`] naming `key`.
pub fn check_value(key: &str, value: &Value) -> Result<(), MetadataError> {
    let invalid = |reason: &str| MetadataError::InvalidValue {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    match value {
        Value::Null => Err(invalid("null is not an attribute value")),
        Value::Object(_) => Err(invalid("nested objects are not attribute values")),
        Value::Array(items) => {
            // A float array may hold integral numbers (`[1.5, 2]`); an int array may not
            // hold floats.
            let same = |first: Kind, v: &Value| match (first, scalar_kind(v)) {
                (Kind::Float, Some(Kind::Int | Kind::Float)) => true,
                (k, got) => got == Some(k),
            };
            let first = items.first().and_then(scalar_kind);
            let homogeneous = first.is_some_and(|k| items.iter().all(|v| same(k, v)));
            if homogeneous {
                Ok(())
            } else {
                Err(invalid(
                    "an array value must be non-empty and homogeneous \
                     (strings, ints, floats or bools)",
                ))
            }
        }
        scalar => scalar_kind(scalar)
            .map(|_| ())
            .ok_or_else(|| invalid("a number outside the 64-bit range")),
    }
}

/// Validates a whole mapping: every key, then every value (§3.4). Nothing is
/// partially accepted: the first violation is returned.
///
/// # Errors
/// The first [`MetadataError`] found, in the mapping's order.
///
/// # Examples
/// ```
/// use openarmature_graph::metadata::validate;
/// let ok = serde_json::json!({"tenantId": "acme", "seats": [1, 2]});
/// assert!(validate(ok.as_object().unwrap()).is_ok());
/// let bad = serde_json::json!({"tenantId": "acme", "step": "checkout"});
/// let err = validate(bad.as_object().unwrap()).unwrap_err();
/// assert_eq!(err.category(), "invocation_metadata_invalid");
/// ```
pub fn validate(metadata: &Map<String, Value>) -> Result<(), MetadataError> {
    metadata
        .iter()
        .try_for_each(|(key, value)| check_key(key).and_then(|()| check_value(key, value)))
}

impl crate::Categorized for MetadataError {
    fn category(&self) -> Option<crate::Category> {
        Some(crate::Category::from_name(MetadataError::category(self)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_scalars_and_homogeneous_arrays() {
        for ok in [
            json!("x"),
            json!(1),
            json!(1.5),
            json!(true),
            json!(["p", "q"]),
            json!([1, 2]),
            json!([1.5, 2.5]),
            json!([1.5, 2]),
            json!([true]),
        ] {
            assert_eq!(check_value("k", &ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_reserved_keys_and_bad_values() {
        for key in [
            "openarmature.user.x",
            "gen_ai.system",
            "step",
            "correlation_id",
        ] {
            assert!(check_key(key).is_err(), "{key}");
        }
        assert_eq!(
            check_key("stepCount"),
            Ok(()),
            "reserved names match whole keys only"
        );
        for bad in [
            json!(null),
            json!({"nested": 1}),
            json!([1, "mixed"]),
            json!([1, 1.5]),
            json!([]),
            json!([[1]]),
        ] {
            assert!(check_value("k", &bad).is_err(), "{bad}");
        }
    }
}
