//! Spec: observability §5.5.1 (payload serialization), §5.5.5 (truncation contract)
//! and §5.5.6 (cross-implementation consistency).
//!
//! Payload attributes are JSON rendered canonically — object keys sorted
//! lexicographically at every depth, no insignificant whitespace, UTF-8 — so equal
//! inputs always produce equal bytes. A value longer than the observer's per-attribute
//! cap is cut at a UTF-8 code-point boundary and suffixed with the marker
//! `…[truncated, M bytes total]` (M = the untruncated byte length); the result is at
//! most `cap` bytes and deliberately no longer parses as JSON.
//!
//! # Examples
//! ```
//! use openarmature_observability::payload::{canonical_json, truncate};
//! use serde_json::json;
//!
//! assert_eq!(canonical_json(&json!({"b": 1, "a": [true, null]})), r#"{"a":[true,null],"b":1}"#);
//!
//! let long = "é".repeat(200); // 400 bytes
//! let cut = truncate(long, 256);
//! assert!(cut.len() <= 256);
//! assert!(cut.ends_with("…[truncated, 400 bytes total]"));
//! ```

use serde_json::{Map, Value};

/// `value` as canonical JSON: keys sorted at every depth, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    sorted(value).to_string()
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                if let Some(v) = map.get(k) {
                    out.insert(k.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Applies the §5.5.5 truncation algorithm: `text` unchanged when it fits in `cap`
/// bytes, else its longest prefix ending on a code-point boundary that leaves room
/// for the marker, followed by the marker.
pub fn truncate(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let marker = format!("…[truncated, {} bytes total]", text.len());
    let mut cut = cap.saturating_sub(marker.len()).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + marker.len());
    out.push_str(&text[..cut]);
    out.push_str(&marker);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sort_at_every_depth() {
        let v = json!([{"z": {"y": 1, "x": 2}, "a": "é"}]);
        assert_eq!(canonical_json(&v), r#"[{"a":"é","z":{"x":2,"y":1}}]"#);
    }

    #[test]
    fn truncation_respects_the_cap_and_code_points() {
        let fits = "x".repeat(300);
        assert_eq!(truncate(fits.clone(), 300), fits);
        for len in [257, 1_000, 100_000] {
            for unit in ["x", "é", "日", "🎉"] {
                let text = unit.repeat(len / unit.len() + 1);
                let total = text.len();
                let cut = truncate(text.clone(), 256);
                assert!(cut.len() <= 256, "{unit}: {}", cut.len());
                let marker = format!("…[truncated, {total} bytes total]");
                let prefix = cut.strip_suffix(&marker).expect("marker");
                assert!(text.starts_with(prefix));
                assert!(
                    256 - cut.len() < unit.len(),
                    "backtracks at most one code point"
                );
            }
        }
    }
}
