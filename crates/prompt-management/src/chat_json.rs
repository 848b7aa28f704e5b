//! Spec: prompt-management §3.1 — the JSON shape of a `chat_template`.
//!
//! Segments are `{"role": "system" | "user" | "assistant", "content": <string | blocks>}`
//! or `{"placeholder": "<name>"}`; blocks are `{"type": "text", "text"}` and
//! `{"type": "image", "source": {"type": "url", "url"} | {"type": "inline",
//! "base64_data"}, "media_type"?, "detail"?}`. The same shape, with sorted keys, is the
//! canonical serialization hashed into a chat prompt's `template_hash`.
//!
//! Reading checks shape only (unknown keys and wrong types are rejected); the render
//! rules of §11 (empty lists, placeholder names, role/block compatibility) are left to
//! render so the error surfaces where the spec puts it.

use openarmature_llm::ImageDetail;
use serde_json::{json, Map, Value};

use crate::chat::{AuthorRole, ChatSegment, ContentBlockTemplate, SegmentContent};
use crate::error::PromptError;

impl ChatSegment {
    /// Reads one segment in the spec's JSON shape.
    ///
    /// # Errors
    /// `invalid_argument` when the value is not a segment (unknown role or key, a
    /// non-string template field, a malformed block).
    pub fn from_json(value: &Value) -> Result<ChatSegment, PromptError> {
        let map = object(value, "chat segment")?;
        if let Some(name) = map.get("placeholder") {
            only_keys(map, &["placeholder"], "placeholder segment")?;
            let name = string(name, "placeholder")?;
            return Ok(ChatSegment::Placeholder(name));
        }
        only_keys(map, &["role", "content"], "content segment")?;
        let role = map
            .get("role")
            .and_then(Value::as_str)
            .and_then(AuthorRole::parse)
            .ok_or_else(|| bad("content segment needs a role of system, user or assistant"))?;
        let content = match map.get("content") {
            Some(Value::String(text)) => SegmentContent::Text(text.clone()),
            Some(Value::Array(items)) => SegmentContent::Blocks(
                items
                    .iter()
                    .map(ContentBlockTemplate::from_json)
                    .collect::<Result<_, _>>()?,
            ),
            _ => return Err(bad("content segment needs a string or a list of blocks")),
        };
        Ok(ChatSegment::Content { role, content })
    }

    /// Reads a whole `chat_template` (a JSON array of segments).
    ///
    /// # Errors
    /// As for [`ChatSegment::from_json`], naming the offending index.
    pub fn list_from_json(value: &Value) -> Result<Vec<ChatSegment>, PromptError> {
        let items = value
            .as_array()
            .ok_or_else(|| bad("a chat template must be a list of segments"))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                ChatSegment::from_json(item)
                    .map_err(|e| bad(format!("chat template segment {i}: {e}")))
            })
            .collect()
    }

    /// The segment in the spec's JSON shape.
    pub fn to_json(&self) -> Value {
        match self {
            ChatSegment::Placeholder(name) => json!({ "placeholder": name }),
            ChatSegment::Content { role, content } => {
                let content = match content {
                    SegmentContent::Text(text) => Value::String(text.clone()),
                    SegmentContent::Blocks(blocks) => {
                        Value::Array(blocks.iter().map(ContentBlockTemplate::to_json).collect())
                    }
                };
                json!({ "role": role.as_str(), "content": content })
            }
        }
    }
}

impl ContentBlockTemplate {
    /// Reads one block template in the spec's JSON shape.
    ///
    /// # Errors
    /// `invalid_argument` when the value is not a text or image block template.
    pub fn from_json(value: &Value) -> Result<ContentBlockTemplate, PromptError> {
        let map = object(value, "content block")?;
        match map.get("type").and_then(Value::as_str) {
            Some("text") => {
                only_keys(map, &["type", "text"], "text block")?;
                let text = map
                    .get("text")
                    .ok_or_else(|| bad("text block needs text"))?;
                Ok(ContentBlockTemplate::Text {
                    text: string(text, "text")?,
                })
            }
            Some("image") => {
                only_keys(
                    map,
                    &["type", "source", "media_type", "detail"],
                    "image block",
                )?;
                let source = object(
                    map.get("source").unwrap_or(&Value::Null),
                    "image block source",
                )?;
                let detail = match map.get("detail") {
                    None | Some(Value::Null) => None,
                    Some(d) => Some(
                        serde_json::from_value::<ImageDetail>(d.clone())
                            .map_err(|_| bad(format!("unknown image detail {d}")))?,
                    ),
                };
                let media_type = match map.get("media_type") {
                    None | Some(Value::Null) => None,
                    Some(m) => Some(string(m, "media_type")?),
                };
                match source.get("type").and_then(Value::as_str) {
                    Some("url") => {
                        only_keys(source, &["type", "url"], "url image source")?;
                        let url = source
                            .get("url")
                            .ok_or_else(|| bad("url source needs url"))?;
                        Ok(ContentBlockTemplate::ImageUrl {
                            url: string(url, "url")?,
                            media_type,
                            detail,
                        })
                    }
                    Some("inline") => {
                        only_keys(source, &["type", "base64_data"], "inline image source")?;
                        let data = source
                            .get("base64_data")
                            .ok_or_else(|| bad("inline source needs base64_data"))?;
                        Ok(ContentBlockTemplate::ImageInline {
                            base64_data: string(data, "base64_data")?,
                            media_type: media_type
                                .ok_or_else(|| bad("inline image block needs media_type"))?,
                            detail,
                        })
                    }
                    _ => Err(bad("image source type must be url or inline")),
                }
            }
            _ => Err(bad("block type must be text or image")),
        }
    }

    /// The block template in the spec's JSON shape (unset literal fields omitted).
    pub fn to_json(&self) -> Value {
        let (source, media_type, detail) = match self {
            ContentBlockTemplate::Text { text } => return json!({ "type": "text", "text": text }),
            ContentBlockTemplate::ImageUrl {
                url,
                media_type,
                detail,
            } => (
                json!({ "type": "url", "url": url }),
                media_type.clone(),
                *detail,
            ),
            ContentBlockTemplate::ImageInline {
                base64_data,
                media_type,
                detail,
            } => (
                json!({ "type": "inline", "base64_data": base64_data }),
                Some(media_type.clone()),
                *detail,
            ),
        };
        let mut block = Map::new();
        block.insert("type".into(), "image".into());
        block.insert("source".into(), source);
        if let Some(m) = media_type {
            block.insert("media_type".into(), m.into());
        }
        if let Some(d) = detail {
            block.insert("detail".into(), d.as_str().into());
        }
        Value::Object(block)
    }
}

fn bad(message: impl Into<String>) -> PromptError {
    PromptError::invalid_argument(message)
}

fn object<'v>(value: &'v Value, what: &str) -> Result<&'v Map<String, Value>, PromptError> {
    value
        .as_object()
        .ok_or_else(|| bad(format!("{what} must be a mapping, got {value}")))
}

fn string(value: &Value, field: &str) -> Result<String, PromptError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| bad(format!("{field} must be a string, got {value}")))
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), PromptError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(extra) => Err(bad(format!("unexpected key {extra:?} in {what}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_the_spec_shapes() {
        let template = json!([
            {"role": "system", "content": "You describe {{ thing }}."},
            {"placeholder": "history"},
            {"role": "user", "content": [
                {"type": "text", "text": "Describe {{ product }}:"},
                {"type": "image", "source": {"type": "url", "url": "{{ u }}"}, "detail": "high"},
                {"type": "image", "source": {"type": "inline", "base64_data": "{{ b }}"},
                 "media_type": "{{ m }}"}
            ]}
        ]);
        let segments = ChatSegment::list_from_json(&template).unwrap();
        assert_eq!(segments.len(), 3);
        assert_eq!(segments[1], ChatSegment::placeholder("history"));
        let back: Vec<Value> = segments.iter().map(ChatSegment::to_json).collect();
        assert_eq!(Value::Array(back), template);
    }

    #[test]
    fn rejects_malformed_segments() {
        for bad in [
            json!({"role": "tool", "content": "x"}),
            json!({"role": "user"}),
            json!({"role": "user", "content": 3}),
            json!({"role": "user", "content": "x", "extra": 1}),
            json!({"placeholder": 1}),
            json!({"role": "user", "content": [{"type": "thinking", "text": "x"}]}),
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "inline", "base64_data": "x"}}]}),
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}, "detail": "ultra"}]}),
        ] {
            let err = ChatSegment::from_json(&bad).unwrap_err();
            assert_eq!(err.category(), "invalid_argument", "{bad}");
        }
        // Render-time rules are not shape errors: empty block lists and odd names read.
        assert!(ChatSegment::from_json(&json!({"role": "system", "content": []})).is_ok());
        assert!(ChatSegment::from_json(&json!({"placeholder": "1bad"})).is_ok());
    }
}
