//! Spec: prompt-management §3 — the `Prompt` record (identity, unrendered template,
//! content hash, fetch time, optional sampling / token budget / observability entities /
//! metadata) and its two variants (§3.1: Text and Chat).
//!
//! A `Prompt` is immutable once built: fields are read through getters, and the builder
//! methods consume and return it. The constructors compute `template_hash`
//! ([`crate::hash`]); a backend whose store supplies its own content hash replaces it
//! with [`Prompt::with_template_hash`].

use std::time::SystemTime;

use crate::prompt_context::TokenBudget;
use openarmature_llm::RuntimeConfig;

/// The spec-normative `observability_entities` key of the Langfuse Prompt-entity
/// reference (prompt-management §3, observability §8.4.4).
pub const LANGFUSE_PROMPT: &str = "langfuse_prompt";
use serde_json::{Map, Value};

use crate::chat::ChatSegment;
use crate::hash::{chat_template_hash, text_template_hash};

/// The unrendered template: exactly one of the two §3.1 variants.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// A Text prompt: one template, rendered to one `user` message.
    Text(String),
    /// A Chat prompt: role-tagged segments and placeholders, rendered in order.
    Chat(Vec<ChatSegment>),
}

impl Template {
    /// The `template_hash` of this template ([`crate::hash`]).
    pub fn content_hash(&self) -> String {
        match self {
            Template::Text(text) => text_template_hash(text),
            Template::Chat(segments) => chat_template_hash(segments),
        }
    }
}

/// A fetched, unrendered prompt (§3).
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    name: String,
    version: String,
    label: String,
    template: Template,
    template_hash: String,
    fetched_at: SystemTime,
    sampling: Option<RuntimeConfig>,
    token_budget: Option<TokenBudget>,
    observability_entities: Option<Map<String, Value>>,
    metadata: Option<Map<String, Value>>,
}

impl Prompt {
    /// A prompt with `template`, its hash computed, fetched now, and no optional fields.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        label: impl Into<String>,
        template: Template,
    ) -> Self {
        Prompt {
            name: name.into(),
            version: version.into(),
            label: label.into(),
            template_hash: template.content_hash(),
            template,
            fetched_at: SystemTime::now(),
            sampling: None,
            token_budget: None,
            observability_entities: None,
            metadata: None,
        }
    }

    /// A Text prompt.
    pub fn text(
        name: impl Into<String>,
        version: impl Into<String>,
        label: impl Into<String>,
        template: impl Into<String>,
    ) -> Self {
        Prompt::new(name, version, label, Template::Text(template.into()))
    }

    /// A Chat prompt.
    pub fn chat(
        name: impl Into<String>,
        version: impl Into<String>,
        label: impl Into<String>,
        segments: Vec<ChatSegment>,
    ) -> Self {
        Prompt::new(name, version, label, Template::Chat(segments))
    }

    /// Sets the per-prompt sampling configuration (the llm-provider `RuntimeConfig`, so
    /// it can be passed straight to a completion request).
    pub fn with_sampling(mut self, sampling: RuntimeConfig) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// Sets the advisory token budget (observability only; never changes a request).
    pub fn with_token_budget(mut self, budget: TokenBudget) -> Self {
        self.token_budget = Some(budget);
        self
    }

    /// Sets backend-keyed observability entity references (e.g. `langfuse_prompt`).
    pub fn with_observability_entities(mut self, entities: Map<String, Value>) -> Self {
        self.observability_entities = Some(entities);
        self
    }

    /// Sets backend-supplied metadata (free-form).
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Sets the fetch time. A caching backend serving a stored entry sets the original
    /// fetch time here, never the cache-hit time.
    pub fn with_fetched_at(mut self, fetched_at: SystemTime) -> Self {
        self.fetched_at = fetched_at;
        self
    }

    /// Replaces the computed `template_hash`, for backends whose store supplies its own
    /// content hash. It must still be deterministic for identical template content.
    pub fn with_template_hash(mut self, template_hash: impl Into<String>) -> Self {
        self.template_hash = template_hash.into();
        self
    }

    /// The prompt's identifier within its backend.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The backend's version identifier (distinct versions denote distinct contents).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The label the prompt was fetched under.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The unrendered template.
    pub fn template(&self) -> &Template {
        &self.template
    }

    /// Whether this is a Chat prompt.
    pub fn is_chat(&self) -> bool {
        matches!(self.template, Template::Chat(_))
    }

    /// The content hash of the template (`sha256:<hex>` unless a backend supplied one).
    pub fn template_hash(&self) -> &str {
        &self.template_hash
    }

    /// When the prompt was fetched from its backend.
    pub fn fetched_at(&self) -> SystemTime {
        self.fetched_at
    }

    /// Per-prompt sampling configuration, when the backend supplied one.
    pub fn sampling(&self) -> Option<&RuntimeConfig> {
        self.sampling.as_ref()
    }

    /// The advisory token budget, when the backend supplied one.
    pub fn token_budget(&self) -> Option<TokenBudget> {
        self.token_budget
    }

    /// Backend-keyed observability entity references, when supplied.
    pub fn observability_entities(&self) -> Option<&Map<String, Value>> {
        self.observability_entities.as_ref()
    }

    /// Backend-supplied metadata, when supplied.
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.metadata.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_hash_and_builders_override() {
        let a = Prompt::text("g", "v1", "production", "Hello {{ u }}");
        let b = Prompt::text("g", "v2", "staging", "Hello {{ u }}");
        assert_eq!(a.template_hash(), b.template_hash());
        assert!(a.template_hash().starts_with("sha256:"));
        assert!(!a.is_chat());
        let c = a.clone().with_template_hash("store:42");
        assert_eq!(c.template_hash(), "store:42");
        let chat = Prompt::chat("g", "v1", "production", vec![ChatSegment::user("x")]);
        assert!(chat.is_chat());
        assert_ne!(
            chat.template_hash(),
            Prompt::text("g", "v1", "p", "x").template_hash()
        );
        assert!(a.sampling().is_none() && a.token_budget().is_none());
    }
}
