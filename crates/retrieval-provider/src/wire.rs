//! Spec: retrieval-provider §7 *Malformed ancillary figures* and §4 / §6
//! `response_id` — reading the figures a provider reports *about* a call.
//!
//! A figure that is present but malformed (not a non-negative integer; a boolean; a
//! string) is *not reported*: `None`, never coerced or clamped. An identifier that is
//! not a string, or is empty, is absent. Also the two shapes every mapping reads
//! the same way: a list position (`index`) and the `raw` of a chunked call (§8
//! *Batch chunking*: the list of the per-request responses, a single request's
//! `raw` being that response itself).

use serde_json::Value;

/// A non-negative integer count, or `None` (absent or malformed).
pub(crate) fn count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// A non-empty string identifier, or `None` (absent, malformed or empty).
pub(crate) fn identifier(v: Option<&Value>) -> Option<String> {
    v?.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// A non-empty string model name, or `None`.
pub(crate) fn model(v: Option<&Value>) -> Option<String> {
    identifier(v)
}

/// A non-negative integer list position, or `None`.
pub(crate) fn index(v: Option<&Value>) -> Option<usize> {
    v?.as_u64().and_then(|i| usize::try_from(i).ok())
}

/// `items` as a wire string list, each behind `prefix` when one applies.
pub(crate) fn strings(items: &[String], prefix: Option<&str>) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| match prefix {
                Some(prefix) => Value::String(format!("{prefix}{s}")),
                None => Value::String(s.clone()),
            })
            .collect(),
    )
}

/// The `raw` of a call made of `raws.len()` requests, in request order.
pub(crate) fn stitch_raw(mut raws: Vec<Value>) -> Value {
    if raws.len() == 1 {
        raws.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(raws)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_counts_are_not_reported() {
        assert_eq!(count(Some(&json!(4))), Some(4));
        for bad in [json!(-1), json!(1.5), json!("12"), json!(true), json!(null)] {
            assert_eq!(count(Some(&bad)), None, "{bad}");
        }
        assert_eq!(count(None), None);
    }

    #[test]
    fn empty_or_non_string_ids_are_absent() {
        assert_eq!(identifier(Some(&json!("id-1"))).as_deref(), Some("id-1"));
        assert_eq!(identifier(Some(&json!(""))), None);
        assert_eq!(identifier(Some(&json!(7))), None);
    }

    #[test]
    fn one_response_is_its_own_raw_and_several_are_a_list() {
        assert_eq!(stitch_raw(vec![json!([1])]), json!([1]));
        assert_eq!(stitch_raw(vec![json!([1]), json!([2])]), json!([[1], [2]]));
        assert_eq!(index(Some(&json!(3))), Some(3));
        assert_eq!(index(Some(&json!(-1))), None);
    }
}
