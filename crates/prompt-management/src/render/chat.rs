//! Spec: prompt-management §6 render (Chat-prompt contract), §8 per-segment /
//! per-block strict undefined, §11 Chat-prompt triggers.
//!
//! Placeholder names are checked (shape, uniqueness) before anything renders; then the
//! segments render in order, each text template on its own, and placeholder slots take
//! the caller's messages as they are.

use std::collections::HashSet;

use openarmature_llm::{
    AssistantMessage, Content, ContentBlock, ImageBlock, ImageSource, Message, SystemMessage,
    UserMessage,
};

use super::{Placeholders, Renderer};
use crate::chat::{
    is_valid_placeholder_name, AuthorRole, ChatSegment, ContentBlockTemplate, SegmentContent,
};
use crate::error::PromptError;

impl<'p> Renderer<'p> {
    pub(super) fn chat(
        &self,
        segments: &'p [ChatSegment],
        placeholders: Option<&Placeholders>,
    ) -> Result<Vec<Message>, PromptError> {
        let mut seen = HashSet::new();
        for segment in segments {
            if let ChatSegment::Placeholder(name) = segment {
                if !is_valid_placeholder_name(name) {
                    return Err(self.fail(
                        format!("placeholder name {name:?} must match [A-Za-z_][A-Za-z0-9_]*"),
                        None,
                    ));
                }
                if !seen.insert(name.as_str()) {
                    return Err(self.fail(
                        format!("duplicate placeholder name {name:?} in the chat template"),
                        None,
                    ));
                }
            }
        }
        let mut messages = Vec::new();
        for (index, segment) in segments.iter().enumerate() {
            match segment {
                ChatSegment::Placeholder(name) => {
                    let injected = placeholders.and_then(|p| p.get(name)).ok_or_else(|| {
                        self.fail(
                            format!("placeholder {name:?} (segment {index}) was not filled"),
                            None,
                        )
                    })?;
                    messages.extend(injected.iter().cloned());
                }
                ChatSegment::Content { role, content } => {
                    let location = format!("segment {index} ({})", role.as_str());
                    let content = match content {
                        SegmentContent::Text(source) => {
                            let text = self.text(source, &location)?;
                            if text.is_empty() {
                                return Err(self.fail(
                                    format!("{location} rendered to an empty string"),
                                    None,
                                ));
                            }
                            Content::Text(text)
                        }
                        SegmentContent::Blocks(blocks) => {
                            Content::Blocks(self.blocks(*role, blocks, &location)?)
                        }
                    };
                    messages.push(message(*role, content));
                }
            }
        }
        if messages.is_empty() {
            return Err(self.fail(
                "the chat template rendered to an empty message list".to_owned(),
                None,
            ));
        }
        Ok(messages)
    }

    fn blocks(
        &self,
        role: AuthorRole,
        blocks: &'p [ContentBlockTemplate],
        location: &str,
    ) -> Result<Vec<ContentBlock>, PromptError> {
        if blocks.is_empty() {
            return Err(self.fail(format!("{location} has an empty block list"), None));
        }
        if role != AuthorRole::User {
            if let Some(j) = blocks.iter().position(ContentBlockTemplate::is_image) {
                return Err(self.fail(
                    format!("{location} block {j} is an image block; image blocks are user-only"),
                    None,
                ));
            }
        }
        let mut out = Vec::with_capacity(blocks.len());
        for (j, block) in blocks.iter().enumerate() {
            let at = |field: &str| format!("{location} block {j} ({field})");
            out.push(match block {
                ContentBlockTemplate::Text { text } => {
                    let rendered = self.text(text, &at("text"))?;
                    if rendered.is_empty() {
                        return Err(
                            self.fail(format!("{} rendered to an empty string", at("text")), None)
                        );
                    }
                    ContentBlock::text(rendered)
                }
                ContentBlockTemplate::ImageUrl {
                    url,
                    media_type,
                    detail,
                } => ContentBlock::Image(ImageBlock {
                    source: ImageSource::Url {
                        url: self.text(url, &at("url"))?,
                    },
                    media_type: media_type.clone(),
                    detail: *detail,
                }),
                ContentBlockTemplate::ImageInline {
                    base64_data,
                    media_type,
                    detail,
                } => ContentBlock::Image(ImageBlock {
                    source: ImageSource::Inline {
                        base64_data: self.text(base64_data, &at("base64_data"))?,
                    },
                    media_type: Some(self.text(media_type, &at("media_type"))?),
                    detail: *detail,
                }),
            });
        }
        Ok(out)
    }
}

fn message(role: AuthorRole, content: Content) -> Message {
    match role {
        AuthorRole::System => Message::System(SystemMessage { content }),
        AuthorRole::User => Message::User(UserMessage { content }),
        AuthorRole::Assistant => Message::Assistant(AssistantMessage {
            content: Some(content),
            tool_calls: Vec::new(),
        }),
    }
}
