//! Spec: llm-provider §3 — messages, tool calls and content blocks (§3.1).
//!
//! The types mirror the spec's records; the shape constraints that span a message
//! or the list (non-empty content, role order, `tool_call_id` matching, ...) are
//! checked at the `complete()` boundary, never by the
//! constructors. [`Message::from_json`] reads the spec's JSON shape; a value that
//! does not fit it is a `provider_invalid_request`.
//!
//! # Examples
//! ```
//! use openarmature_llm::{ContentBlock, Message};
//! let messages = vec![
//!     Message::system("Be brief."),
//!     Message::user_blocks(vec![
//!         ContentBlock::image_url("https://example.com/a.png"),
//!         ContentBlock::text("What is this?"),
//!     ]),
//! ];
//! assert_eq!(messages[0].role(), "system");
//! ```

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::LlmError;

/// One conversation entry, discriminated by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// `system`: instructions (text only).
    System(SystemMessage),
    /// `user`: text, or text and image blocks.
    User(UserMessage),
    /// `assistant`: text / thinking blocks and tool calls.
    Assistant(AssistantMessage),
    /// `tool`: the textual result of one tool call.
    Tool(ToolMessage),
}

/// A `system` message. Its content must be a non-empty string (blocks are rejected
/// at `complete()`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemMessage {
    /// The instructions.
    pub content: Content,
}

/// A `user` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserMessage {
    /// Text, or a non-empty sequence of text and image blocks.
    pub content: Content,
}

/// An `assistant` message (also [`crate::Response::message`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantMessage {
    /// Text or text / thinking blocks; `None` for a tool-call-only message.
    #[serde(default)]
    pub content: Option<Content>,
    /// Requested tool calls, in order (empty when none).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub tool_calls: Vec<ToolCall>,
}

/// A `tool` message: the result of the tool call `tool_call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMessage {
    /// The tool's result, serialized to a string by the caller.
    pub content: String,
    /// The `id` of the matching assistant [`ToolCall`].
    pub tool_call_id: String,
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolCall>, D::Error> {
    Ok(Option::<Vec<ToolCall>>::deserialize(d)?.unwrap_or_default())
}

/// A message's content: a string, or an ordered sequence of content blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// The text-string form.
    Text(String),
    /// The content-block form (§3.1); must not be empty.
    Blocks(Vec<ContentBlock>),
}

impl Content {
    /// The text, when this is the string form.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(t),
            Content::Blocks(_) => None,
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

impl From<Vec<ContentBlock>> for Content {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        Content::Blocks(blocks)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element::<ContentBlock>()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// A content block (§3.1), discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `text` (§3.1.1).
    Text(TextBlock),
    /// `image` (§3.1.2); user messages only.
    Image(ImageBlock),
    /// `thinking` (§3.1.4); assistant messages only.
    Thinking(ThinkingBlock),
    /// `redacted_thinking` (§3.1.5); assistant messages only.
    RedactedThinking(RedactedThinkingBlock),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextBlock {
            text: text.into(),
            signature: None,
        })
    }

    /// An image block referencing `url`.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Url { url: url.into() },
            media_type: None,
            detail: None,
        })
    }

    /// An inline (base64) image block.
    pub fn image_inline(media_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Inline {
                base64_data: base64_data.into(),
            },
            media_type: Some(media_type.into()),
            detail: None,
        })
    }

    /// The block's `type` discriminator.
    pub fn kind(&self) -> &'static str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Thinking(_) => "thinking",
            ContentBlock::RedactedThinking(_) => "redacted_thinking",
        }
    }
}

/// A text block (§3.1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextBlock {
    /// Non-empty text.
    pub text: String,
    /// A provider-bound reasoning-continuity token (§3.1.7), passed back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// An image block (§3.1.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageBlock {
    /// Where the image comes from.
    pub source: ImageSource,
    /// Required for inline sources (`image/png`, `image/jpeg`, `image/webp`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// A fidelity hint; omitted from the wire when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ImageDetail>,
}

/// An image source (§3.1.3): exactly one of a URL or inline base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ImageSource {
    /// Passed to the provider unchanged (`http(s)://`, `data:`, ...).
    Url {
        /// The URL.
        url: String,
    },
    /// Base64 bytes, never inspected or re-encoded.
    Inline {
        /// The base64 data.
        base64_data: String,
    },
}

/// The image-processing fidelity hint (§3.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageDetail {
    /// `auto`.
    Auto,
    /// `low`.
    Low,
    /// `high`.
    High,
}

impl ImageDetail {
    /// `auto` / `low` / `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageDetail::Auto => "auto",
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
        }
    }
}

/// Provider-emitted reasoning (§3.1.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingBlock {
    /// The reasoning text.
    pub text: String,
    /// The provider's verification token, passed back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Reasoning the provider redacted (§3.1.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactedThinkingBlock {
    /// The opaque blob, passed back verbatim.
    pub data: String,
}

/// A tool call requested by an assistant message (§3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The provider's id, preserved verbatim.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The parsed arguments; `None` only on a `finish_reason: "error"` response whose
    /// arguments did not parse (the bytes stay in `Response::raw`).
    pub arguments: Option<Map<String, Value>>,
    /// A provider-bound reasoning-continuity token (§3.1.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    /// A tool call with parsed `arguments`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Map<String, Value>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Some(arguments),
            signature: None,
        }
    }
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System(SystemMessage {
            content: Content::Text(content.into()),
        })
    }

    /// A text user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: Content::Text(content.into()),
        })
    }

    /// A user message of content blocks.
    pub fn user_blocks(blocks: Vec<ContentBlock>) -> Self {
        Message::User(UserMessage {
            content: Content::Blocks(blocks),
        })
    }

    /// A text assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage {
            content: Some(Content::Text(content.into())),
            tool_calls: Vec::new(),
        })
    }

    /// An assistant message that only calls tools.
    pub fn assistant_tool_calls(tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant(AssistantMessage {
            content: None,
            tool_calls,
        })
    }

    /// A tool-result message.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool(ToolMessage {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
        })
    }

    /// `system` / `user` / `assistant` / `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::System(_) => "system",
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::Tool(_) => "tool",
        }
    }

    /// Reads one message in the spec's JSON shape.
    ///
    /// # Errors
    /// `provider_invalid_request` when the value is not a §3 message (unknown role,
    /// missing or extra fields, an image block without `source`, an unknown `detail`).
    pub fn from_json(value: &Value) -> Result<Message, LlmError> {
        Message::deserialize(value)
            .map_err(|e| LlmError::invalid_request(format!("malformed message: {e}")))
    }

    /// Reads a message list (a JSON array) in the spec's shape.
    ///
    /// # Errors
    /// As for [`Message::from_json`], naming the offending index.
    pub fn list_from_json(value: &Value) -> Result<Vec<Message>, LlmError> {
        let items = value
            .as_array()
            .ok_or_else(|| LlmError::invalid_request("messages must be a list"))?;
        items
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Message::deserialize(m).map_err(|e| {
                    LlmError::invalid_request(format!("malformed message at index {i}: {e}"))
                })
            })
            .collect()
    }

    /// Reads one message in the spec's JSON shape and checks its §3 per-role shape
    /// (non-empty content, the block kinds its role allows, complete tool calls, a
    /// tool result naming its call) — what a boundary accepting a single message from
    /// outside (a chat harness's `send`) checks before anything else. The checks that
    /// need the whole conversation (order, tool-call references) are `complete()`'s.
    ///
    /// # Errors
    /// `provider_invalid_request` describing the first violation.
    pub fn from_json_checked(value: &Value) -> Result<Message, LlmError> {
        let message = Message::from_json(value)?;
        message.check_shape()?;
        Ok(message)
    }

    /// Checks this message's §3 per-role shape (see [`Message::from_json_checked`]).
    ///
    /// # Errors
    /// `provider_invalid_request` describing the first violation.
    pub fn check_shape(&self) -> Result<(), LlmError> {
        let at = |what: &str| LlmError::invalid_request(format!("{} message: {what}", self.role()));
        crate::validate::shape(self, &crate::ModelCapabilities::default(), &at)
    }

    /// The message in the spec's JSON shape.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Self {
        Message::Assistant(message)
    }
}

/// The system messages' text joined with a blank line, `extra` (a fallback
/// directive) last; `None` when there is none (Anthropic's `system`, Gemini's
/// `systemInstruction`).
pub(crate) fn system_prompt(messages: &[Message], extra: Option<&str>) -> Option<String> {
    let system: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::System(s) => s.content.as_text(),
            _ => None,
        })
        .chain(extra)
        .collect();
    (!system.is_empty()).then(|| system.join("\n\n"))
}

/// The text of `blocks`' text blocks, in order (thinking blocks and the rest skipped).
pub(crate) fn text_parts(blocks: &[ContentBlock]) -> Vec<&str> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

impl AssistantMessage {
    /// A text answer without tool calls.
    pub fn from_text(text: impl Into<String>) -> Self {
        AssistantMessage {
            content: Some(Content::Text(text.into())),
            tool_calls: Vec::new(),
        }
    }

    /// The content as text: the string form, or the concatenated text blocks.
    pub fn text(&self) -> Option<String> {
        match &self.content {
            None => None,
            Some(Content::Text(t)) => Some(t.clone()),
            Some(Content::Blocks(blocks)) => {
                let texts = text_parts(blocks);
                if texts.is_empty() {
                    None
                } else {
                    Some(texts.concat())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_spec_shapes() {
        let m = Message::from_json(&json!({"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "u"}, "detail": "high"},
            {"type": "text", "text": "t"}
        ]}))
        .unwrap();
        let Message::User(u) = &m else { panic!() };
        assert!(matches!(&u.content, Content::Blocks(b) if b.len() == 2));
        assert_eq!(m.to_json()["content"][0]["detail"], "high");

        let a = Message::from_json(&json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "c", "name": "n", "arguments": {"x": 1}}]}))
        .unwrap();
        assert_eq!(a.role(), "assistant");
    }

    #[test]
    fn rejects_what_does_not_fit() {
        for bad in [
            json!({"role": "user"}),
            json!({"role": "wizard", "content": "x"}),
            json!({"role": "user", "content": [{"type": "image"}]}),
            json!({"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}, "detail": "ultra"}]}),
            json!({"role": "user", "content": "x", "tool_calls": []}),
            json!({"role": "tool", "content": "x"}),
        ] {
            let err = Message::from_json(&bad).unwrap_err();
            assert_eq!(err.category().as_str(), "provider_invalid_request", "{bad}");
        }
    }

    #[test]
    fn a_single_message_is_checked_against_its_role() {
        for good in [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": [], "tool_calls": [{"id": "c", "name": "n", "arguments": {}}]}),
            json!({"role": "tool", "tool_call_id": "c", "content": "r"}),
        ] {
            Message::from_json_checked(&good).unwrap();
        }
        for bad in [
            json!({"role": "user", "content": ""}),
            json!({"role": "user", "content": []}),
            json!({"role": "assistant", "content": ""}),
            json!({"role": "tool", "tool_call_id": "", "content": "r"}),
            json!({"role": "tool", "content": "r"}),
            json!({"role": "system", "content": [{"type": "text", "text": "x"}]}),
        ] {
            let err = Message::from_json_checked(&bad).unwrap_err();
            assert_eq!(err.category().as_str(), "provider_invalid_request", "{bad}");
        }
    }
}
