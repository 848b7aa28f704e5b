//! Spec: observability §8.4 — reading the §5 OA span attributes the Langfuse fields are
//! sourced from.

use opentelemetry::{Array, Value as OtelValue};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

/// An attribute value as JSON (ints stay ints, arrays stay arrays).
pub(crate) fn json_of(v: &OtelValue) -> Value {
    fn num(f: f64) -> Value {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
    match v {
        OtelValue::Bool(b) => Value::Bool(*b),
        OtelValue::I64(i) => Value::from(*i),
        OtelValue::F64(f) => num(*f),
        OtelValue::String(s) => Value::String(s.as_str().to_owned()),
        OtelValue::Array(a) => Value::Array(match a {
            Array::Bool(v) => v.iter().map(|x| Value::Bool(*x)).collect(),
            Array::I64(v) => v.iter().map(|x| Value::from(*x)).collect(),
            Array::F64(v) => v.iter().map(|x| num(*x)).collect(),
            Array::String(v) => v
                .iter()
                .map(|x| Value::String(x.as_str().to_owned()))
                .collect(),
            _ => Vec::new(),
        }),
        _ => Value::String(v.as_str().into_owned()),
    }
}

/// The attribute `key` of `span` as JSON.
pub(crate) fn get(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| json_of(&kv.value))
}

/// The string attribute `key`.
pub(crate) fn string(span: &SpanData, key: &str) -> Option<String> {
    match get(span, key)? {
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// The non-negative integer attribute `key`.
pub(crate) fn count(span: &SpanData, key: &str) -> Option<u64> {
    get(span, key)?.as_u64()
}
