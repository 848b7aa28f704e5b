//! Spec: prompt-management §4 — the `PromptResult` record — and §12's prompt-context
//! binding (the `openarmature.prompt.*` span attributes and the typed LLM events'
//! `active_prompt`).
//!
//! [`PromptResult::scope`] is how a rendered prompt reaches observability: LLM calls made
//! inside the scoped future carry the prompt's identity (name, version, label, template
//! and rendered hashes) and its token budget. The binding is task-scoped and ends with
//! the future.

use std::future::Future;
use std::time::SystemTime;

use crate::prompt_context::{scope_prompt, PromptIdentity, TokenBudget};
use openarmature_llm::{Message, RuntimeConfig};
use serde_json::{Map, Value};

use crate::hash::rendered_hash;
use crate::prompt::Prompt;
use crate::prompt::LANGFUSE_PROMPT;

/// A rendered prompt (§4): the non-empty message list plus the source prompt's identity,
/// the variables applied and the content hash of the messages.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptResult {
    name: String,
    version: String,
    label: String,
    template_hash: String,
    rendered_hash: String,
    messages: Vec<Message>,
    variables: Map<String, Value>,
    fetched_at: SystemTime,
    rendered_at: SystemTime,
    sampling: Option<RuntimeConfig>,
    token_budget: Option<TokenBudget>,
    observability_entities: Option<Map<String, Value>>,
}

impl PromptResult {
    /// Builds the result of rendering `prompt` into `messages` (rendered now).
    pub(crate) fn from_render(
        prompt: &Prompt,
        variables: Map<String, Value>,
        messages: Vec<Message>,
    ) -> Self {
        PromptResult {
            name: prompt.name().to_owned(),
            version: prompt.version().to_owned(),
            label: prompt.label().to_owned(),
            template_hash: prompt.template_hash().to_owned(),
            rendered_hash: rendered_hash(&messages),
            messages,
            variables,
            fetched_at: prompt.fetched_at(),
            rendered_at: SystemTime::now(),
            sampling: prompt.sampling().cloned(),
            token_budget: prompt.token_budget(),
            observability_entities: prompt.observability_entities().cloned(),
        }
    }

    /// The source prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The source prompt's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The source prompt's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The source prompt's template hash.
    pub fn template_hash(&self) -> &str {
        &self.template_hash
    }

    /// `sha256:<hex>` over the canonical JSON of [`PromptResult::messages`]; equal for
    /// equal template and variables, so usable as a memoization key.
    pub fn rendered_hash(&self) -> &str {
        &self.rendered_hash
    }

    /// The rendered messages, ready for a completion request.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Takes the rendered messages.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The variables the prompt was rendered with (placeholders are not included).
    pub fn variables(&self) -> &Map<String, Value> {
        &self.variables
    }

    /// When the source prompt was fetched.
    pub fn fetched_at(&self) -> SystemTime {
        self.fetched_at
    }

    /// When this result was rendered.
    pub fn rendered_at(&self) -> SystemTime {
        self.rendered_at
    }

    /// The source prompt's sampling configuration: pass it (or an overlay of it) as the
    /// completion request's `RuntimeConfig`.
    pub fn sampling(&self) -> Option<&RuntimeConfig> {
        self.sampling.as_ref()
    }

    /// The source prompt's advisory token budget.
    pub fn token_budget(&self) -> Option<TokenBudget> {
        self.token_budget
    }

    /// The source prompt's observability entity references, unchanged by rendering.
    pub fn observability_entities(&self) -> Option<&Map<String, Value>> {
        self.observability_entities.as_ref()
    }

    /// The identity record the engine snapshots on typed LLM events and renders as the
    /// `openarmature.prompt.*` span attributes.
    pub fn identity(&self) -> PromptIdentity {
        let identity = PromptIdentity::new(
            self.name.clone(),
            self.version.clone(),
            self.label.clone(),
            self.template_hash.clone(),
            self.rendered_hash.clone(),
        );
        match self
            .observability_entities
            .as_ref()
            .and_then(|e| e.get(LANGFUSE_PROMPT))
        {
            Some(reference) => identity.with_langfuse_prompt(reference),
            None => identity,
        }
    }

    /// Runs `fut` with this prompt active (keeping any active prompt group): LLM calls
    /// made inside carry its identity and token budget. The returned future does not
    /// borrow `self`.
    ///
    /// ```
    /// # use openarmature_prompt::{Prompt, RenderOptions, render_prompt};
    /// # use openarmature_prompt::prompt_context::current;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), openarmature_prompt::PromptError> {
    /// let prompt = Prompt::text("greeting", "v1", "production", "Hi {{ who }}");
    /// let result = render_prompt(&prompt, &serde_json::json!({"who": "Ann"}), None,
    ///     RenderOptions::default())?;
    /// let name = result
    ///     .scope(async { current().prompt().map(|p| p.name.clone()) })
    ///     .await;
    /// assert_eq!(name.as_deref(), Some("greeting"));
    /// assert!(current().prompt().is_none());
    /// # Ok(()) }
    /// ```
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        scope_prompt(self.identity(), self.token_budget, fut)
    }
}
