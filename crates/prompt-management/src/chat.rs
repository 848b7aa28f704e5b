//! Spec: prompt-management §3.1 — the Chat-prompt variant: role-tagged content segments
//! (a text template or a list of content-block templates) and placeholder segments
//! filled with caller-supplied messages at render time.
//!
//! The records are plain data: nothing is validated at construction. The §11 checks
//! (empty segments, empty block lists, image blocks outside a user segment, duplicate or
//! malformed placeholder names) run at render, the spec's normative point of
//! enforcement, so a backend can hand over whatever its store holds and the caller gets
//! a `prompt_render_error` that names the offending segment.
//!
//! [`ChatSegment::from_json`] / [`ChatSegment::to_json`] read and write the spec's JSON
//! shape (`{"role", "content"}` / `{"placeholder"}`; blocks `{"type": "text"}` and
//! `{"type": "image", "source": {"type": "url" | "inline", ...}}`).

use openarmature_llm::ImageDetail;

/// The authoring roles of a content segment. `tool` is deliberately absent: tool results
/// are injected through placeholder segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthorRole {
    /// `system`.
    System,
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
}

impl AuthorRole {
    /// `system` / `user` / `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorRole::System => "system",
            AuthorRole::User => "user",
            AuthorRole::Assistant => "assistant",
        }
    }

    /// Parses `system` / `user` / `assistant`.
    pub fn parse(role: &str) -> Option<AuthorRole> {
        match role {
            "system" => Some(AuthorRole::System),
            "user" => Some(AuthorRole::User),
            "assistant" => Some(AuthorRole::Assistant),
            _ => None,
        }
    }
}

/// One entry of a chat template.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatSegment {
    /// A role-tagged segment that renders to exactly one message.
    Content {
        /// The message role.
        role: AuthorRole,
        /// The unrendered content.
        content: SegmentContent,
    },
    /// A slot named by this string, filled at render time with a list of messages
    /// (possibly empty). Names must match `[A-Za-z_][A-Za-z0-9_]*` and be unique within
    /// the template (checked at render).
    Placeholder(String),
}

impl ChatSegment {
    /// A text-template segment with `role`.
    pub fn text(role: AuthorRole, template: impl Into<String>) -> Self {
        ChatSegment::Content {
            role,
            content: SegmentContent::Text(template.into()),
        }
    }

    /// A content-blocks segment with `role` (image blocks are valid only for `user`).
    ///
    /// Note that the llm-provider request validation accepts only string content on a
    /// `system` message, so a `system` blocks segment renders but is refused at
    /// `complete()`; author system segments as text.
    pub fn blocks(role: AuthorRole, blocks: Vec<ContentBlockTemplate>) -> Self {
        ChatSegment::Content {
            role,
            content: SegmentContent::Blocks(blocks),
        }
    }

    /// A `system` text-template segment.
    pub fn system(template: impl Into<String>) -> Self {
        ChatSegment::text(AuthorRole::System, template)
    }

    /// A `user` text-template segment.
    pub fn user(template: impl Into<String>) -> Self {
        ChatSegment::text(AuthorRole::User, template)
    }

    /// An `assistant` text-template segment.
    pub fn assistant(template: impl Into<String>) -> Self {
        ChatSegment::text(AuthorRole::Assistant, template)
    }

    /// A `user` content-blocks segment.
    pub fn user_blocks(blocks: Vec<ContentBlockTemplate>) -> Self {
        ChatSegment::blocks(AuthorRole::User, blocks)
    }

    /// A placeholder segment named `name`.
    pub fn placeholder(name: impl Into<String>) -> Self {
        ChatSegment::Placeholder(name.into())
    }
}

/// The unrendered content of a content segment.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentContent {
    /// A text template; renders to a message with string content.
    Text(String),
    /// Block templates; render to a message with a content-block sequence. Must not be
    /// empty.
    Blocks(Vec<ContentBlockTemplate>),
}

/// A content block with template fields, mirroring the llm-provider text and image
/// blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlockTemplate {
    /// A text block; `text` is a template.
    Text {
        /// The template.
        text: String,
    },
    /// An image referenced by URL; `url` is a template, `media_type` and `detail` are
    /// literal.
    ImageUrl {
        /// The URL template.
        url: String,
        /// A literal media type (optional for URL sources).
        media_type: Option<String>,
        /// A literal fidelity hint.
        detail: Option<ImageDetail>,
    },
    /// An inline base64 image; `base64_data` and `media_type` are templates, `detail` is
    /// literal.
    ImageInline {
        /// The base64-data template.
        base64_data: String,
        /// The media-type template (e.g. `image/png` or `{{ media_type }}`).
        media_type: String,
        /// A literal fidelity hint.
        detail: Option<ImageDetail>,
    },
}

impl ContentBlockTemplate {
    /// A text block template.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlockTemplate::Text { text: text.into() }
    }

    /// A URL image block template.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentBlockTemplate::ImageUrl {
            url: url.into(),
            media_type: None,
            detail: None,
        }
    }

    /// An inline image block template.
    pub fn image_inline(media_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        ContentBlockTemplate::ImageInline {
            base64_data: base64_data.into(),
            media_type: media_type.into(),
            detail: None,
        }
    }

    /// Sets the literal `detail` hint (no effect on a text block).
    pub fn with_detail(mut self, value: ImageDetail) -> Self {
        match &mut self {
            ContentBlockTemplate::ImageUrl { detail, .. }
            | ContentBlockTemplate::ImageInline { detail, .. } => *detail = Some(value),
            ContentBlockTemplate::Text { .. } => {}
        }
        self
    }

    /// Sets the literal `media_type` of a URL image block (no effect otherwise; an
    /// inline block takes its media type at construction).
    pub fn with_media_type(mut self, value: impl Into<String>) -> Self {
        if let ContentBlockTemplate::ImageUrl { media_type, .. } = &mut self {
            *media_type = Some(value.into());
        }
        self
    }

    /// Whether this is an image block (user segments only).
    pub fn is_image(&self) -> bool {
        !matches!(self, ContentBlockTemplate::Text { .. })
    }
}

/// Whether `name` is a valid placeholder name: `[A-Za-z_][A-Za-z0-9_]*` (ASCII only).
pub fn is_valid_placeholder_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_names() {
        for ok in ["history", "_h", "_history_v2", "A1", "a"] {
            assert!(is_valid_placeholder_name(ok), "{ok}");
        }
        for bad in ["", "1history", "chat-history", "é", "a b", "a.b"] {
            assert!(!is_valid_placeholder_name(bad), "{bad}");
        }
    }

    #[test]
    fn builders_set_literal_fields() {
        let b = ContentBlockTemplate::image_url("{{ u }}")
            .with_media_type("image/png")
            .with_detail(ImageDetail::Low);
        assert_eq!(
            b,
            ContentBlockTemplate::ImageUrl {
                url: "{{ u }}".into(),
                media_type: Some("image/png".into()),
                detail: Some(ImageDetail::Low)
            }
        );
        assert!(b.is_image());
        assert!(!ContentBlockTemplate::text("x").is_image());
        assert_eq!(AuthorRole::parse("assistant"), Some(AuthorRole::Assistant));
        assert_eq!(AuthorRole::parse("tool"), None);
    }
}
