//! Spec: llm-provider §6 (`Response.raw`: the provider's response body, verbatim).
//!
//! A mapping that read what it needs straight from the body's text keeps the text and
//! builds the JSON value only when something reads it (most callers never do: the
//! value of a chat answer is a tree of maps, strings and keys that costs more to build
//! and free than the rest of the call's mapping).

use std::ops::Deref;
use std::sync::OnceLock;

use serde_json::Value;

/// The provider's response body, verbatim (extensions included): a JSON value, built
/// from the body's text when first read. Dereferences to the [`Value`].
pub struct RawBody(Repr);

enum Repr {
    /// Built eagerly (a test double's body, a stream's assembled completion, a
    /// mapping that reads the value itself).
    Value(Value),
    /// The body's text, parsed on first read.
    Text {
        /// The body as received.
        text: String,
        /// The response id and model the mapping read from the text.
        ids: Ids,
        /// The parsed value, once read.
        value: OnceLock<Value>,
    },
}

/// A response's id and model, as [`RawBody::ids`] reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Ids {
    /// The first string among `raw.id`, `raw.responseId`.
    pub(crate) id: Option<Box<str>>,
    /// The first string among `raw.model`, `raw.modelVersion`.
    pub(crate) model: Option<Box<str>>,
}

/// The keys a response's id stands under (OpenAI and Anthropic; Gemini).
pub(crate) const ID_KEYS: [&str; 2] = ["id", "responseId"];
/// The keys a response's model stands under (OpenAI and Anthropic; Gemini).
pub(crate) const MODEL_KEYS: [&str; 2] = ["model", "modelVersion"];

impl RawBody {
    /// A body kept as `text`, parsed when first read. `text` must be JSON that
    /// `serde_json` parses into a [`Value`]; the mapping checks that before it keeps
    /// a body this way (see `openai::fast`). Should the parse fail after all, the
    /// value reads as `null`; [`RawBody::text`] still has the text.
    /// `ids` are the body's id and model as [`RawBody::ids`] would read them from
    /// the value.
    pub(crate) fn lazy(text: String, ids: Ids) -> Self {
        RawBody(Repr::Text {
            text,
            ids,
            value: OnceLock::new(),
        })
    }

    /// The response id (the first string among `id`, `responseId`) and model (among
    /// `model`, `modelVersion`), without parsing a body kept as text.
    pub(crate) fn ids(&self) -> (Option<&str>, Option<&str>) {
        match &self.0 {
            Repr::Value(value) => {
                let first = |keys: [&str; 2]| {
                    keys.iter()
                        .find_map(|k| value.get(k).and_then(Value::as_str))
                };
                (first(ID_KEYS), first(MODEL_KEYS))
            }
            Repr::Text { ids, .. } => (ids.id.as_deref(), ids.model.as_deref()),
        }
    }

    /// The body as a JSON value (parsed now if it was kept as text).
    pub fn value(&self) -> &Value {
        match &self.0 {
            Repr::Value(value) => value,
            Repr::Text { text, value, .. } => {
                value.get_or_init(|| serde_json::from_str(text).unwrap_or(Value::Null))
            }
        }
    }

    /// The body's text as received, when the mapping kept it (`None` for a body
    /// that was built as a value).
    pub fn text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Value(_) => None,
            Repr::Text { text, .. } => Some(text),
        }
    }

    /// The body as an owned JSON value.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Value(value) => value,
            Repr::Text {
                text, mut value, ..
            } => value
                .take()
                .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or(Value::Null)),
        }
    }
}

impl From<Value> for RawBody {
    fn from(value: Value) -> Self {
        RawBody(Repr::Value(value))
    }
}

impl Deref for RawBody {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl Clone for RawBody {
    fn clone(&self) -> Self {
        match &self.0 {
            Repr::Value(value) => RawBody(Repr::Value(value.clone())),
            Repr::Text { text, ids, value } => RawBody(Repr::Text {
                text: text.clone(),
                ids: ids.clone(),
                value: value.clone(),
            }),
        }
    }
}

impl std::fmt::Debug for RawBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.value(), f)
    }
}

impl PartialEq for RawBody {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for RawBody {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl serde::Serialize for RawBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_lazy_body_reads_as_the_value_of_its_text() {
        let text = r#"{"id":"x","n":[1,2.5,null],"s":"caf\u00e9"}"#;
        let ids = Ids {
            id: Some("x".into()),
            model: None,
        };
        let lazy = RawBody::lazy(text.into(), ids);
        assert_eq!(lazy.text(), Some(text));
        let eager = RawBody::from(serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(eager.text(), None);
        assert_eq!(lazy, eager);
        assert_eq!(lazy.ids(), eager.ids());
        assert_eq!(lazy["s"], "café");
        assert_eq!(lazy.clone().into_value(), eager.clone().into_value());
        assert_eq!(format!("{lazy:?}"), format!("{eager:?}"));
        assert_eq!(
            serde_json::to_value(&lazy).unwrap(),
            json!({"id": "x", "n": [1, 2.5, null], "s": "café"})
        );
    }

    #[test]
    fn a_lazy_body_that_does_not_parse_reads_as_null_and_keeps_its_text() {
        let lazy = RawBody::lazy("{\"n\": 1e400}".into(), Ids::default());
        assert_eq!(*lazy, Value::Null);
        assert_eq!(lazy.text(), Some("{\"n\": 1e400}"));
    }
}
