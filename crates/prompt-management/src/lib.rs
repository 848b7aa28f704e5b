//! # openarmature-prompt
//!
//! Spec: prompt-management §1–§13 (OpenArmature specification, pinned release v0.109.0).
//!
//! Named, versioned prompt templates fetched from backends, rendered strictly into
//! llm-provider [`Message`](openarmature_llm::Message)s, and bound to LLM calls for
//! observability:
//!
//! - [`Prompt`] (§3): Text or Chat ([`Template`], [`ChatSegment`], §3.1) plus identity,
//!   `template_hash`, optional [`RuntimeConfig`](openarmature_llm::RuntimeConfig)
//!   sampling, [`TokenBudget`], observability entities and metadata;
//! - [`PromptResult`] (§4): rendered messages, `rendered_hash`, and
//!   [`PromptResult::scope`], which makes LLM calls inside a future carry the prompt on
//!   their typed events and `openarmature.prompt.*` span attributes;
//! - [`PromptBackend`] (§5) with [`InMemoryBackend`] and [`FilesystemBackend`], and
//!   [`token_budget_from_config`], the §5 rule for a backend-sourced budget config;
//! - [`PromptManager`] (§6, §9) with [`LabelResolver`] (§7): label and cache-TTL
//!   resolution, ordered fallback, strict Jinja2 rendering via minijinja (§8, §13);
//! - [`PromptGroup`] (§10) and [`PromptError`] (§11).
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use openarmature_prompt::{prompt_context, InMemoryBackend, Prompt, PromptManager};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), openarmature_prompt::PromptError> {
//! let store = InMemoryBackend::new();
//! store.insert(Prompt::text("greeting", "v1", "production", "Hello, {{ user }}!"));
//! let manager = PromptManager::new(vec![Arc::new(store)])?;
//!
//! let prompt = manager.fetch("greeting", None).await?; // label resolves to "production"
//! let result = manager.render(&prompt, &json!({ "user": "Alice" }))?;
//! assert_eq!(result.messages()[0].to_json()["content"], "Hello, Alice!");
//!
//! let active = result
//!     .scope(async {
//!         // provider.complete(&CompletionRequest::new(result.messages().to_vec())).await
//!         prompt_context::current().prompt().map(|p| p.rendered_hash.clone())
//!     })
//!     .await;
//! assert_eq!(active.as_deref(), Some(result.rendered_hash()));
//! # Ok(()) }
//! ```

mod backend;
mod budget;
mod chat;
mod chat_json;
mod error;
mod filesystem;
mod group;
pub mod hash;
mod label;
mod manager;
mod prompt;
pub mod prompt_context;
mod render;
mod result;

pub use backend::{BoxFuture, InMemoryBackend, PromptBackend};
pub use budget::token_budget_from_config;
pub use chat::{
    is_valid_placeholder_name, AuthorRole, ChatSegment, ContentBlockTemplate, SegmentContent,
};
pub use error::{
    Cause, PromptError, RenderFailure, INVALID_ARGUMENT, PROMPT_GROUP_INVALID, PROMPT_NOT_FOUND,
    PROMPT_RENDER_ERROR, PROMPT_STORE_UNAVAILABLE,
};
pub use filesystem::{ConfigSource, FilesystemBackend, FsLayout};
pub use group::PromptGroup;
pub use label::{LabelResolver, DEFAULT_LABEL};
pub use manager::{FetchOptions, PromptManager};
pub use prompt::{Prompt, Template, LANGFUSE_PROMPT};
pub use prompt_context::{PromptGroupIdentity, PromptIdentity, TokenBudget};
pub use render::{render_prompt, Placeholders, RenderOptions};
pub use result::PromptResult;

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "prompt-management";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "prompt-management");
        assert_eq!(super::SPEC_VERSION, "0.109.0");
    }
}

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
