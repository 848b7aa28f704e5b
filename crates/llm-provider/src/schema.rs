//! Spec: llm-provider §5 `response_schema`, §6 `parsed`, §7 `structured_output_invalid`,
//! and the §8 wire-byte stability rule (canonical JSON).
//!
//! JSON Schemas (tool parameters and `response_schema`) are compiled with the
//! `jsonschema` crate, with remote and file `$ref` resolution disabled: validation
//! never does I/O. A schema that does not compile is a `provider_invalid_request`.

use std::fmt::Write as _;

use jsonschema::Validator;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::error::LlmError;

pub use crate::typed::json_schema_for;

/// Sorts every object's keys, recursively (array order is kept): the canonical form
/// wire bodies are serialized from, so structurally equal inputs give equal bytes.
pub fn canonicalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for key in keys {
                if let Some(v) = map.get(key) {
                    out.insert(key.clone(), canonicalize(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonicalize).collect()),
        other => other.clone(),
    }
}

/// The canonical compact JSON text of `value` (sorted keys, no whitespace).
pub fn canonical_string(value: &Value) -> String {
    serde_json::to_string(&Canonical(value)).unwrap_or_default()
}

/// Serializes a value in canonical form (every object's keys sorted, recursively;
/// arrays in order) without building a sorted copy: the same bytes as serializing
/// [`canonicalize`]'s result.
pub(crate) struct Canonical<'a>(pub(crate) &'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                // Keys are unique, so an unstable sort gives the order `canonicalize` does.
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Canonical(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Canonical(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// Decoded-value deep equality (§6 *Managed-field collision*): objects member-wise
/// (order irrelevant), arrays element-wise in order, numbers numerically (`1 == 1.0`).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w))
        }
        _ => a == b,
    }
}

/// Compiles a JSON Schema.
///
/// # Errors
/// `provider_invalid_request` naming `what` when the schema is not valid.
pub(crate) fn compile(schema: &Value, what: &str) -> Result<Validator, LlmError> {
    jsonschema::validator_for(schema)
        .map_err(|e| LlmError::invalid_request(format!("{what} is not a valid JSON Schema: {e}")))
}

/// Checks that `schema` is an object schema (`type: "object"` at the root) and
/// compiles it.
///
/// # Errors
/// `provider_invalid_request` otherwise.
pub(crate) fn compile_object_schema(schema: &Value, what: &str) -> Result<Validator, LlmError> {
    let root_is_object = schema
        .as_object()
        .and_then(|m| m.get("type"))
        .is_some_and(|t| t == "object");
    if !root_is_object {
        return Err(LlmError::invalid_request(format!(
            "{what} must be an object schema (`type: \"object\"` at the root)"
        )));
    }
    compile(schema, what)
}

/// Every violation of `instance` against `validator`, as `"<pointer>: <message>"`
/// (the pointer omitted at the root), joined with `; `.
pub(crate) fn describe_violations(validator: &Validator, instance: &Value) -> Option<String> {
    let mut out = String::new();
    for (i, error) in validator.iter_errors(instance).enumerate() {
        if i == 8 {
            out.push_str("; ...");
            break;
        }
        if i > 0 {
            out.push_str("; ");
        }
        let path = error.instance_path().as_str().to_owned();
        if path.is_empty() {
            let _ = write!(out, "{error}");
        } else {
            let _ = write!(out, "{path}: {error}");
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

/// Where the canonical schema goes in a prompt-fallback directive template.
pub(crate) const SCHEMA_PLACEHOLDER: &str = "{schema}";

/// The prompt-fallback directive (§8.1.5.1, §8.2.5, §8.3.5.1): `template` with
/// [`SCHEMA_PLACEHOLDER`] replaced by `schema`'s canonical JSON.
pub(crate) fn directive(template: &str, schema: &Value) -> String {
    template.replace(SCHEMA_PLACEHOLDER, &canonical_string(schema))
}

/// Parses `content` as JSON and validates it against `validator`: the parsed value,
/// or the failure description `structured_output_invalid` carries.
pub(crate) fn parse_structured(validator: &Validator, content: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(content).map_err(|e| format!("content is not valid JSON: {e}"))?;
    match describe_violations(validator, &value) {
        None => Ok(value),
        Some(violations) => Err(format!(
            "content does not match response_schema: {violations}"
        )),
    }
}

/// The `response_format.json_schema.name` the OpenAI mapping sends: the schema's
/// `title` when it is a valid name (`[A-Za-z0-9_-]{1,64}`), else `response_` and a
/// stable 64-bit FNV-1a hash of the canonical schema.
pub fn schema_name(schema: &Value) -> String {
    if let Some(title) = schema.get("title").and_then(Value::as_str) {
        let valid = !title.is_empty()
            && title.len() <= 64
            && title
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            return title.to_owned();
        }
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical_string(schema).bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("response_{hash:016x}")
}

/// Whether `schema` meets OpenAI's strict-mode constraints: every object schema with
/// `properties` sets `additionalProperties: false` and lists every property in
/// `required` (checked recursively through properties, items and combinators).
pub fn is_strict_compatible(schema: &Value) -> bool {
    fn walk(v: &Value, depth: usize) -> bool {
        if depth > 64 {
            return false;
        }
        let Some(map) = v.as_object() else {
            return true;
        };
        if let Some(Value::Object(props)) = map.get("properties") {
            if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                return false;
            }
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !props.keys().all(|k| required.contains(&k.as_str())) {
                return false;
            }
            if !props.values().all(|p| walk(p, depth + 1)) {
                return false;
            }
        }
        for key in ["items", "additionalItems", "not"] {
            if let Some(sub) = map.get(key) {
                if !walk(sub, depth + 1) {
                    return false;
                }
            }
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                if !subs.iter().all(|s| walk(s, depth + 1)) {
                    return false;
                }
            }
        }
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = map.get(key) {
                if !defs.values().all(|s| walk(s, depth + 1)) {
                    return false;
                }
            }
        }
        true
    }
    walk(schema, 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn person() -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
               "required": ["name", "age"], "additionalProperties": false})
    }

    #[test]
    fn canonical_is_order_independent() {
        let a = json!({"b": 1, "a": {"y": [2, 1], "x": null}});
        let b = json!({"a": {"x": null, "y": [2, 1]}, "b": 1});
        assert_eq!(canonical_string(&a), canonical_string(&b));
        assert_eq!(canonical_string(&a), r#"{"a":{"x":null,"y":[2,1]},"b":1}"#);
    }

    #[test]
    fn streaming_canonical_form_matches_the_sorted_copy() {
        let v = json!({"z": [{"b": 1.0, "a": -0.0, "B": 18_446_744_073_709_551_615_u64}, "é\n\"q\u{1}"],
                       "é": {"y": {}, "x": []}, "": true, "a": 1e300, "A": [[{"d": null, "c": 2.5}]]});
        assert_eq!(
            serde_json::to_string(&Canonical(&v)).unwrap(),
            serde_json::to_string(&canonicalize(&v)).unwrap()
        );
    }

    #[test]
    fn structured_parse_and_validate() {
        let v = compile_object_schema(&person(), "response_schema").unwrap();
        assert_eq!(
            parse_structured(&v, r#"{"name":"A","age":3}"#).unwrap()["age"],
            3
        );
        let missing = parse_structured(&v, r#"{"name":"A"}"#).unwrap_err();
        assert!(missing.contains("age"), "{missing}");
        let typed = parse_structured(&v, r#"{"name":"A","age":"x"}"#).unwrap_err();
        assert!(typed.contains("/age"), "{typed}");
        assert!(parse_structured(&v, r#"{"name": "A" "age": 1}"#)
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(compile_object_schema(&json!({"type": "string"}), "s").is_err());
        assert!(
            compile_object_schema(&json!({"type": "object", "minProperties": "x"}), "s").is_err()
        );
    }

    #[test]
    fn names_and_strictness() {
        assert!(is_strict_compatible(&person()));
        assert!(!is_strict_compatible(
            &json!({"type": "object", "properties": {"a": {}}})
        ));
        assert_eq!(schema_name(&json!({"title": "Person"})), "Person");
        assert_eq!(
            schema_name(&person()),
            schema_name(&canonicalize(&person()))
        );
        assert!(schema_name(&person()).starts_with("response_"));
        assert!(json_equal(&json!({"a": 1.0}), &json!({"a": 1})));
        assert!(!json_equal(&json!([1, 2]), &json!([2, 1])));
    }
}
