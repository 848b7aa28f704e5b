//! Spec: conformance-adapter §8.2 — lossless, order-preserving parsing with typed
//! errors that name the file and the directive.

use std::path::Path;
use std::rc::Rc;

use serde_json::{Map, Number, Value as Json};
use serde_norway::Value;

use crate::failure::Check;
use crate::AdapterError;

/// A YAML node with its location, for directive-aware errors.
#[derive(Clone)]
pub(crate) struct Y<'a> {
    pub(crate) value: &'a Value,
    pub(crate) file: &'a Path,
    path: Rc<str>,
}

impl<'a> Y<'a> {
    /// The document root.
    pub(crate) fn root(value: &'a Value, file: &'a Path) -> Self {
        Y {
            value,
            file,
            path: Rc::from(""),
        }
    }

    /// The dotted location, `document` at the root.
    pub(crate) fn location(&self) -> &str {
        if self.path.is_empty() {
            "document"
        } else {
            &self.path
        }
    }

    pub(crate) fn invalid(&self, message: impl Into<String>) -> AdapterError {
        AdapterError::SchemaInvalid {
            file: self.file.to_path_buf(),
            location: self.location().to_owned(),
            message: message.into(),
        }
    }

    fn child(&self, key: &str) -> Rc<str> {
        if self.path.is_empty() {
            Rc::from(key)
        } else {
            Rc::from(format!("{}.{key}", self.path))
        }
    }

    /// True for YAML `null` (or a missing value read as null).
    pub(crate) fn is_null(&self) -> bool {
        self.value.is_null()
    }

    /// The mapping's entries in document order; keys rendered as strings.
    pub(crate) fn entries(&self) -> Result<Vec<(String, Y<'a>)>, AdapterError> {
        let map = self
            .value
            .as_mapping()
            .ok_or_else(|| self.invalid(format!("expected a mapping, got {}", kind(self.value))))?;
        map.iter()
            .map(|(k, v)| {
                let key =
                    scalar_key(k).ok_or_else(|| self.invalid("mapping keys must be scalars"))?;
                let path = self.child(&key);
                Ok((
                    key,
                    Y {
                        value: v,
                        file: self.file,
                        path,
                    },
                ))
            })
            .collect()
    }

    /// A key of a mapping (`None` when absent or when this is not a mapping).
    pub(crate) fn get(&self, key: &str) -> Option<Y<'a>> {
        let v = self.value.as_mapping()?.get(key)?;
        Some(Y {
            value: v,
            file: self.file,
            path: self.child(key),
        })
    }

    /// A required key.
    pub(crate) fn req(&self, key: &str) -> Result<Y<'a>, AdapterError> {
        self.get(key)
            .ok_or_else(|| self.invalid(format!("missing required directive `{key}`")))
    }

    /// Fails with `fixture_directive_unknown` on the first key not in `known`.
    pub(crate) fn check_keys(&self, known: &[&str]) -> Result<(), AdapterError> {
        self.check_keys_of(&[known])
    }

    /// As [`Y::check_keys`], with the known keys in several groups.
    pub(crate) fn check_keys_of(&self, groups: &[&[&str]]) -> Result<(), AdapterError> {
        for (key, y) in self.entries()? {
            if !groups.iter().any(|known| known.contains(&key.as_str())) {
                return Err(AdapterError::DirectiveUnknown {
                    file: self.file.to_path_buf(),
                    directive: key,
                    location: y.location().to_owned(),
                });
            }
        }
        Ok(())
    }

    pub(crate) fn str(&self) -> Result<&'a str, AdapterError> {
        self.value
            .as_str()
            .ok_or_else(|| self.invalid(format!("expected a string, got {}", kind(self.value))))
    }

    /// The string under `key`, `None` when the key is absent.
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, AdapterError> {
        self.get(key).map(|v| v.str()).transpose()
    }

    /// The number under `key`, if present.
    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>, AdapterError> {
        self.get(key).map(|v| v.f64()).transpose()
    }

    pub(crate) fn i64(&self) -> Result<i64, AdapterError> {
        self.value
            .as_i64()
            .ok_or_else(|| self.invalid(format!("expected an integer, got {}", kind(self.value))))
    }

    pub(crate) fn f64(&self) -> Result<f64, AdapterError> {
        self.value
            .as_f64()
            .ok_or_else(|| self.invalid(format!("expected a number, got {}", kind(self.value))))
    }

    pub(crate) fn bool(&self) -> Result<bool, AdapterError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.invalid(format!("expected a boolean, got {}", kind(self.value))))
    }

    pub(crate) fn seq(&self) -> Result<Vec<Y<'a>>, AdapterError> {
        let items = self
            .value
            .as_sequence()
            .ok_or_else(|| self.invalid(format!("expected a list, got {}", kind(self.value))))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| Y {
                value: v,
                file: self.file,
                path: self.child(&i.to_string()),
            })
            .collect())
    }

    /// The list under `key`, each item (checked against `known` keys when the
    /// iteration reaches it) paired with its label: its `name`, or `#<index>`.
    pub(crate) fn named_items(
        &self,
        key: &str,
        known: &'a [&'a str],
    ) -> Result<impl Iterator<Item = Result<(String, Y<'a>), AdapterError>> + 'a, AdapterError>
    {
        Ok(self
            .req(key)?
            .seq()?
            .into_iter()
            .enumerate()
            .map(move |(i, item)| {
                item.check_keys(known)?;
                let label = match item.get("name") {
                    Some(n) => n.str()?.to_owned(),
                    None => format!("#{i}"),
                };
                Ok((label, item))
            }))
    }

    pub(crate) fn strings(&self) -> Result<Vec<String>, AdapterError> {
        self.seq()?
            .iter()
            .map(|y| y.str().map(str::to_owned))
            .collect()
    }

    /// The value as JSON (mapping order kept).
    pub(crate) fn json(&self) -> Result<Json, AdapterError> {
        to_json(self.value).map_err(|m| self.invalid(m.message()))
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn scalar_key(k: &Value) -> Option<String> {
    match k {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

/// Converts YAML to JSON, keeping mapping order.
pub(crate) fn to_json(v: &Value) -> Check<Json> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Json::Number(u.into())
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                Json::Number(Number::from_f64(f).ok_or_else(|| format!("non-finite number {f}"))?)
            }
        }
        Value::String(s) => Json::String(s.clone()),
        Value::Sequence(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = scalar_key(k).ok_or("mapping keys must be scalars")?;
                out.insert(key, to_json(v)?);
            }
            Json::Object(out)
        }
        Value::Tagged(t) => {
            return Err(format!("tagged YAML values are not supported (tag {})", t.tag).into())
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_key_in_any_group_is_known_and_one_in_none_is_named() {
        let value: Value = serde_norway::from_str("name: a\nnodes: {}\nextra: 1\n").unwrap();
        let y = Y::root(&value, Path::new("case.yaml"));
        assert!(y.check_keys_of(&[&["name"], &["nodes", "extra"]]).is_ok());
        match y.check_keys_of(&[&["name"], &["nodes"]]) {
            Err(AdapterError::DirectiveUnknown { directive, .. }) => assert_eq!(directive, "extra"),
            other => panic!("expected the unknown `extra`, got {other:?}"),
        }
    }
}
