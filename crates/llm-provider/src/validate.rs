//! Spec: llm-provider §3 *Validation timing*, §3.1, §4 and §5 — the pre-send checks.
//!
//! Everything here runs at the `complete()` boundary, before any byte is sent; every
//! violation is a `provider_invalid_request` (or, for an image sent to a model known
//! to be text-only, `provider_unsupported_content_block`).

use std::collections::HashSet;

use jsonschema::Validator;

use crate::error::{ErrorCategory, LlmError};
use crate::message::{Content, ContentBlock, ImageBlock, ImageSource, Message};
use crate::provider::{ModelCapabilities, WireRequest};
use crate::schema;
use crate::tool::{Tool, ToolChoice};

/// Schemas compiled during validation, reused to validate the response.
pub(crate) struct Prepared {
    /// `(tool name, parameters validator)`, in `tools` order.
    pub(crate) tools: Vec<(String, Validator)>,
    /// The compiled `response_schema`, if any.
    pub(crate) response_schema: Option<Validator>,
}

impl Prepared {
    pub(crate) fn tool(&self, name: &str) -> Option<&Validator> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

fn bad(message: impl Into<String>) -> LlmError {
    LlmError::invalid_request(message)
}

/// Validates a whole request and compiles its schemas.
///
/// # Errors
/// The first violation found.
pub(crate) fn request(
    req: &WireRequest<'_>,
    capabilities: &ModelCapabilities,
) -> Result<Prepared, LlmError> {
    messages(req.messages, capabilities)?;
    let tools = tools(req.tools)?;
    if let Some(choice) = req.tool_choice {
        tool_choice(choice, req.tools)?;
    }
    let response_schema = match req.response_schema {
        Some(s) => Some(schema::compile_object_schema(s, "response_schema")?),
        None => None,
    };
    Ok(Prepared {
        tools,
        response_schema,
    })
}

/// §3 message-list constraints.
///
/// # Errors
/// `provider_invalid_request` for a shape violation;
/// `provider_unsupported_content_block` for an image sent to a text-only model.
pub(crate) fn messages(list: &[Message], capabilities: &ModelCapabilities) -> Result<(), LlmError> {
    let Some(last) = list.last() else {
        return Err(bad("messages must not be empty"));
    };
    let mut tool_call_ids: HashSet<&str> = HashSet::new();
    let mut first_non_system = true;
    for (i, message) in list.iter().enumerate() {
        let at = |what: &str| bad(format!("messages[{i}] ({}): {what}", message.role()));
        shape(message, capabilities, &at)?;
        match message {
            Message::System(_) => {
                if i != 0 {
                    return Err(at("a system message may only be the first message"));
                }
                continue;
            }
            Message::User(_) => {}
            Message::Assistant(m) => {
                if first_non_system {
                    return Err(at("the conversation must begin with a user message"));
                }
                tool_call_ids.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
            }
            Message::Tool(m) => {
                if first_non_system {
                    return Err(at("the conversation must begin with a user message"));
                }
                if !tool_call_ids.contains(m.tool_call_id.as_str()) {
                    return Err(at(&format!(
                        "tool_call_id `{}` matches no earlier assistant tool call",
                        m.tool_call_id
                    )));
                }
            }
        }
        first_non_system = false;
    }
    if !matches!(last, Message::User(_) | Message::Tool(_)) {
        return Err(bad(format!(
            "the last message must be user or tool, not {}",
            last.role()
        )));
    }
    Ok(())
}

/// The §3 per-role shape of one message, whatever surrounds it: non-empty content,
/// block kinds allowed for the role, tool calls with id, name and arguments, a tool
/// result naming its call.
///
/// # Errors
/// `provider_invalid_request` (built by `at`), or
/// `provider_unsupported_content_block` for an image a text-only model cannot take.
pub(crate) fn shape(
    message: &Message,
    capabilities: &ModelCapabilities,
    at: &dyn Fn(&str) -> LlmError,
) -> Result<(), LlmError> {
    match message {
        Message::System(m) => match &m.content {
            Content::Text(t) if !t.is_empty() => Ok(()),
            Content::Text(_) => Err(at("content must be a non-empty string")),
            Content::Blocks(_) => Err(at(
                "content must be a string (system messages are text-only)",
            )),
        },
        Message::User(m) => match &m.content {
            Content::Text(t) if t.is_empty() => Err(at("content must be a non-empty string")),
            Content::Text(_) => Ok(()),
            Content::Blocks(blocks) => user_blocks(blocks, capabilities, at),
        },
        Message::Assistant(m) => {
            let has_calls = !m.tool_calls.is_empty();
            let empty = match &m.content {
                None => true,
                Some(Content::Text(t)) => t.is_empty(),
                Some(Content::Blocks(blocks)) => {
                    assistant_blocks(blocks, at)?;
                    blocks.is_empty()
                }
            };
            if empty && !has_calls {
                return Err(at("needs non-empty content or at least one tool call"));
            }
            for call in &m.tool_calls {
                if call.id.is_empty() {
                    return Err(at("a tool call needs a non-empty id"));
                }
                if call.name.is_empty() {
                    return Err(at("a tool call needs a non-empty name"));
                }
                if call.arguments.is_none() {
                    return Err(at(&format!(
                        "tool call `{}` needs an arguments mapping",
                        call.id
                    )));
                }
            }
            Ok(())
        }
        Message::Tool(m) if m.tool_call_id.is_empty() => {
            Err(at("a tool message needs a non-empty tool_call_id"))
        }
        Message::Tool(_) => Ok(()),
    }
}

fn user_blocks(
    blocks: &[ContentBlock],
    capabilities: &ModelCapabilities,
    at: &dyn Fn(&str) -> LlmError,
) -> Result<(), LlmError> {
    if blocks.is_empty() {
        return Err(at("a content-block sequence must not be empty"));
    }
    for (j, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) if t.text.is_empty() => {
                return Err(at(&format!("content[{j}]: text must be non-empty")))
            }
            ContentBlock::Text(_) => {}
            ContentBlock::Image(image) => {
                image_block(image, j, at)?;
                if !capabilities.supports_image_input {
                    return Err(LlmError::new(
                        ErrorCategory::ProviderUnsupportedContentBlock,
                        format!("content[{j}]: the bound model does not accept image input"),
                    ));
                }
            }
            other => {
                return Err(at(&format!(
                    "content[{j}]: `{}` blocks may only appear in assistant messages",
                    other.kind()
                )))
            }
        }
    }
    Ok(())
}

fn image_block(
    image: &ImageBlock,
    j: usize,
    at: &dyn Fn(&str) -> LlmError,
) -> Result<(), LlmError> {
    match &image.source {
        ImageSource::Url { url } if url.is_empty() => {
            Err(at(&format!("content[{j}]: image url must be non-empty")))
        }
        ImageSource::Url { .. } => Ok(()),
        ImageSource::Inline { base64_data } => {
            if base64_data.is_empty() {
                return Err(at(&format!(
                    "content[{j}]: inline image data must be non-empty"
                )));
            }
            match image.media_type.as_deref() {
                None | Some("") => Err(at(&format!(
                    "content[{j}]: an inline image needs a media_type"
                ))),
                Some(mt) if !mt.starts_with("image/") || mt.len() <= "image/".len() => Err(at(
                    &format!("content[{j}]: media_type `{mt}` is not an image/* type"),
                )),
                Some(_) => Ok(()),
            }
        }
    }
}

fn assistant_blocks(
    blocks: &[ContentBlock],
    at: &dyn Fn(&str) -> LlmError,
) -> Result<(), LlmError> {
    for (j, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) if t.text.is_empty() => {
                return Err(at(&format!("content[{j}]: text must be non-empty")))
            }
            ContentBlock::Thinking(t) if t.text.is_empty() => {
                return Err(at(&format!(
                    "content[{j}]: thinking text must be non-empty"
                )))
            }
            ContentBlock::Image(_) => {
                return Err(at(&format!(
                    "content[{j}]: image blocks may only appear in user messages"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// §4: unique, non-empty names; each `parameters` a valid object JSON Schema.
///
/// # Errors
/// `provider_invalid_request` naming the tool.
pub(crate) fn tools(list: &[Tool]) -> Result<Vec<(String, Validator)>, LlmError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(list.len());
    for tool in list {
        if tool.name.is_empty() {
            return Err(bad("a tool needs a non-empty name"));
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(bad(format!("duplicate tool name `{}`", tool.name)));
        }
        let what = format!("parameters of tool `{}`", tool.name);
        let validator = schema::compile_object_schema(&tool.parameters, &what)?;
        out.push((tool.name.clone(), validator));
    }
    Ok(out)
}

/// §5 `tool_choice` rules 1–2.
///
/// # Errors
/// `provider_invalid_request` when `required` or a forced tool has no tools to use.
pub(crate) fn tool_choice(choice: &ToolChoice, tools: &[Tool]) -> Result<(), LlmError> {
    match choice {
        ToolChoice::Required if tools.is_empty() => {
            Err(bad("tool_choice `required` needs a non-empty tools list"))
        }
        ToolChoice::Tool { name } if tools.is_empty() => Err(bad(format!(
            "tool_choice forces tool `{name}` but no tools were supplied"
        ))),
        ToolChoice::Tool { name } if !tools.iter().any(|t| &t.name == name) => Err(bad(format!(
            "tool_choice forces tool `{name}`, which is not in the tools list"
        ))),
        _ => Ok(()),
    }
}
