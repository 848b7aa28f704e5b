//! Spec: conformance-adapter §5.10 — value matchers and exact comparison.

use std::collections::HashMap;

use serde_json::Value;

use crate::failure::Check;

/// First-occurrence bindings of `<name_X>` tokens within one case.
#[derive(Debug, Default, Clone)]
pub(crate) struct Bindings(HashMap<String, Value>);

fn is_uuid_v4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    parts.len() == 5
        && parts
            .iter()
            .zip(lens)
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
        && parts[2].starts_with('4')
}

fn is_uuid_hex(s: &str) -> bool {
    s.len() == 32
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// Runs `item` over the pairs of two lists of the same length (with the index);
/// lists of different lengths fail with `differ()`.
///
/// # Errors
/// The length mismatch, or the first pair `item` rejects.
pub(crate) fn each_pair<'e, 'g, E, G>(
    expected: &'e [E],
    got: &'g [G],
    differ: impl FnOnce() -> String,
    mut item: impl FnMut(usize, &'e E, &'g G) -> Check,
) -> Check {
    if expected.len() != got.len() {
        return Err(differ().into());
    }
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        item(i, e, g)?;
    }
    Ok(())
}

/// Compares two lists item by item with `item` (the item's path is `path[i]`);
/// lists of different lengths differ at `path`.
///
/// # Errors
/// The length mismatch, or the first item `item` rejects.
pub(crate) fn pairwise(
    expected: &[Value],
    got: &[Value],
    actual: &Value,
    path: &str,
    mut item: impl FnMut(&Value, &Value, &str) -> Check,
) -> Check {
    let differ = || {
        format!(
            "{path}: expected {} items, got {}: {actual}",
            expected.len(),
            got.len()
        )
    };
    each_pair(expected, got, differ, |i, e, g| {
        item(e, g, &format!("{path}[{i}]"))
    })
}

/// Compares `actual` against `expected` exactly, honouring the §5.10 tokens.
/// Mappings must have the same keys; lists the same length.
///
/// # Errors
/// A message naming the first differing path.
pub(crate) fn check(
    expected: &Value,
    actual: &Value,
    bindings: &mut Bindings,
    path: &str,
) -> Check {
    if let Value::String(token) = expected {
        if let Some(result) = match_token(token, actual, bindings) {
            return result.map_err(|m| m.context(format!("{path}: ")));
        }
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for key in a.keys() {
                if !e.contains_key(key) {
                    return Err(format!("{path}: unexpected key `{key}` (actual {actual})").into());
                }
            }
            for (key, ev) in e {
                let av = a
                    .get(key)
                    .ok_or_else(|| format!("{path}: missing key `{key}` (actual {actual})"))?;
                check(ev, av, bindings, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            pairwise(e, a, actual, path, |ev, av, at| check(ev, av, bindings, at))?;
            Ok(())
        }
        (Value::Number(e), Value::Number(a)) => {
            let equal = match (e.as_i64(), a.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => e.as_f64() == a.as_f64(),
            };
            if equal {
                Ok(())
            } else {
                Err(format!("{path}: expected {expected}, got {actual}").into())
            }
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}").into()),
    }
}

fn match_token(token: &str, actual: &Value, bindings: &mut Bindings) -> Option<Check> {
    let inner = token.strip_prefix('<')?.strip_suffix('>')?;
    let as_str = actual.as_str();
    let verdict = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("{actual} does not match {what}").into())
        }
    };
    Some(match inner {
        "uuid" => verdict(as_str.is_some_and(is_uuid_v4), token),
        "any-string" => verdict(as_str.is_some_and(|s| !s.is_empty()), token),
        _ if inner.starts_with("uuid-hex") => verdict(as_str.is_some_and(is_uuid_hex), token),
        _ if inner.contains('_')
            && inner
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            match bindings.0.get(token) {
                Some(bound) => verdict(bound == actual, &format!("{token} (bound to {bound})")),
                None => {
                    bindings.0.insert(token.to_owned(), actual.clone());
                    Ok(())
                }
            }
        }
        _ => return None,
    })
}

/// JSON equality that treats `1` and `1.0` as equal.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    check(b, a, &mut Bindings::default(), "$").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_maps_and_tokens() {
        let mut b = Bindings::default();
        assert!(check(&json!({"a": 1}), &json!({"a": 1, "b": 2}), &mut b, "$").is_err());
        assert!(check(&json!({"a": 1.0}), &json!({"a": 1}), &mut b, "$").is_ok());
        assert!(check(
            &json!("<uuid>"),
            &json!("6f1c2f8e-3b7a-4c1d-9e2f-0a1b2c3d4e5f"),
            &mut b,
            "$"
        )
        .is_ok());
        assert!(check(&json!("<any-string>"), &json!(""), &mut b, "$").is_err());
        assert!(check(&json!("<trace_id_a>"), &json!("x"), &mut b, "$").is_ok());
        assert!(check(&json!("<trace_id_a>"), &json!("y"), &mut b, "$").is_err());
    }
}
