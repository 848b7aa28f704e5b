//! Spec: prompt-management §6 — the `PromptManager` (fetch, render, get), with the §7
//! label chain, the §6 cache-TTL chain and the §9 backend fallback.
//!
//! - **Label**: the explicit label, else the [`LabelResolver`]'s answer, else
//!   `"production"`.
//! - **Cache TTL**: the per-call `cache_ttl_seconds`, else the manager's
//!   `default_cache_ttl_seconds`, else none; the resolved value goes to every backend
//!   consulted. Both are `u64`, so negative values cannot be expressed.
//! - **Fallback**: backends are tried in order; the first prompt wins;
//!   `prompt_not_found` stops the chain (a retired prompt is never resurrected from a
//!   secondary store); `prompt_store_unavailable` moves on; when every backend is
//!   unavailable the result is one `prompt_store_unavailable` whose
//!   [`PromptError::causes`] lists each backend's error. Any other error stops the chain.
//!   A fallback (a prompt served after one or more backends were unavailable) is
//!   logged at WARN through [`tracing`] (target `openarmature::prompt`), naming the
//!   degraded backends and the one that answered (§9 SHOULD).

use std::sync::Arc;

use serde::Serialize;

use crate::backend::PromptBackend;
use crate::error::PromptError;
use crate::label::{LabelResolver, DEFAULT_LABEL};
use crate::prompt::Prompt;
use crate::render::{render_converted, render_prompt, to_variables, Placeholders, RenderOptions};
use crate::result::PromptResult;

/// Per-call fetch options: an explicit label and a cache-staleness bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchOptions {
    /// The label to fetch under (`None`: resolver, then `"production"`).
    pub label: Option<String>,
    /// The staleness bound for caching backends (`Some(0)`: force a fresh read).
    pub cache_ttl_seconds: Option<u64>,
}

impl FetchOptions {
    /// No label, no TTL.
    pub fn new() -> Self {
        FetchOptions::default()
    }

    /// Sets the explicit label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the per-call cache TTL.
    pub fn cache_ttl_seconds(mut self, seconds: u64) -> Self {
        self.cache_ttl_seconds = Some(seconds);
        self
    }
}

/// The user-facing prompt API (§6): composes backends and renders.
#[derive(Clone)]
pub struct PromptManager {
    backends: Vec<Arc<dyn PromptBackend>>,
    label_resolver: Option<LabelResolver>,
    default_cache_ttl_seconds: Option<u64>,
}

impl std::fmt::Debug for PromptManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backends: Vec<String> = self.backends.iter().map(|b| b.describe()).collect();
        f.debug_struct("PromptManager")
            .field("backends", &backends)
            .field("label_resolver", &self.label_resolver)
            .field("default_cache_ttl_seconds", &self.default_cache_ttl_seconds)
            .finish()
    }
}

impl PromptManager {
    /// A manager over `backends`, consulted in order.
    ///
    /// # Errors
    /// `invalid_argument` when `backends` is empty.
    pub fn new(backends: Vec<Arc<dyn PromptBackend>>) -> Result<Self, PromptError> {
        if backends.is_empty() {
            return Err(PromptError::invalid_argument(
                "a prompt manager needs at least one backend",
            ));
        }
        Ok(PromptManager {
            backends,
            label_resolver: None,
            default_cache_ttl_seconds: None,
        })
    }

    /// Sets the label resolver consulted when a fetch names no label.
    pub fn with_label_resolver(mut self, resolver: LabelResolver) -> Self {
        self.label_resolver = Some(resolver);
        self
    }

    /// Sets the standing cache TTL used when a fetch passes none.
    pub fn with_default_cache_ttl_seconds(mut self, seconds: u64) -> Self {
        self.default_cache_ttl_seconds = Some(seconds);
        self
    }

    /// The backends, in consultation order.
    pub fn backends(&self) -> &[Arc<dyn PromptBackend>] {
        &self.backends
    }

    /// The label resolver, if configured.
    pub fn label_resolver(&self) -> Option<&LabelResolver> {
        self.label_resolver.as_ref()
    }

    /// The standing cache TTL, if configured.
    pub fn default_cache_ttl_seconds(&self) -> Option<u64> {
        self.default_cache_ttl_seconds
    }

    /// The label a fetch of `name` uses: `label`, else the resolver's, else
    /// `"production"`.
    pub fn resolve_label(&self, name: &str, label: Option<&str>) -> String {
        match (label, &self.label_resolver) {
            (Some(label), _) => label.to_owned(),
            (None, Some(resolver)) => resolver.resolve(name).to_owned(),
            (None, None) => DEFAULT_LABEL.to_owned(),
        }
    }

    /// Fetches `name` under `label` (or the resolved label) with the manager's default
    /// cache TTL.
    ///
    /// # Errors
    /// See the module docs: `prompt_not_found` from the first backend reporting it,
    /// `prompt_store_unavailable` when every backend is unavailable.
    pub async fn fetch(&self, name: &str, label: Option<&str>) -> Result<Prompt, PromptError> {
        let label = self.resolve_label(name, label);
        self.fetch_resolved(name, &label, self.default_cache_ttl_seconds)
            .await
    }

    /// [`PromptManager::fetch`] with per-call options (label, cache TTL).
    ///
    /// # Errors
    /// As for [`PromptManager::fetch`].
    pub async fn fetch_with(
        &self,
        name: &str,
        options: &FetchOptions,
    ) -> Result<Prompt, PromptError> {
        let label = self.resolve_label(name, options.label.as_deref());
        let ttl = options.cache_ttl_seconds.or(self.default_cache_ttl_seconds);
        self.fetch_resolved(name, &label, ttl).await
    }

    async fn fetch_resolved(
        &self,
        name: &str,
        label: &str,
        ttl: Option<u64>,
    ) -> Result<Prompt, PromptError> {
        let mut unavailable = Vec::new();
        for (index, backend) in self.backends.iter().enumerate() {
            match backend.fetch(name, label, ttl).await {
                Ok(prompt) => {
                    if !unavailable.is_empty() {
                        self.warn_fallback(name, label, index, backend.as_ref(), &unavailable);
                    }
                    return Ok(prompt);
                }
                Err(e @ PromptError::StoreUnavailable { .. }) => unavailable.push(e),
                Err(e) => return Err(e),
            }
        }
        let tried: Vec<String> = self.backends.iter().map(|b| b.describe()).collect();
        let message = format!(
            "prompt ({name:?}, {label:?}): every backend is unavailable ({})",
            tried.join(", ")
        );
        let last = unavailable.last().cloned();
        let mut error = PromptError::store_unavailable(name, label, message);
        if let Some(last) = last {
            error = error.with_source(last);
        }
        if let PromptError::StoreUnavailable { causes, .. } = &mut error {
            *causes = unavailable;
        }
        Err(error)
    }

    /// Logs that backend `served` answered after the backends before it were unavailable.
    fn warn_fallback(
        &self,
        name: &str,
        label: &str,
        served: usize,
        served_by: &dyn PromptBackend,
        unavailable: &[PromptError],
    ) {
        let degraded: Vec<String> = self
            .backends
            .iter()
            .take(served)
            .map(|b| b.describe())
            .collect();
        let reasons: Vec<String> = unavailable.iter().map(ToString::to_string).collect();
        tracing::warn!(
            target: "openarmature::prompt",
            prompt_name = name,
            prompt_label = label,
            degraded_backends = %degraded.join(", "),
            served_by = %served_by.describe(),
            reasons = %reasons.join("; "),
            "prompt served by a fallback backend: the backends before it are unavailable"
        );
    }

    /// Renders `prompt` strictly with `variables` (no placeholders).
    ///
    /// # Errors
    /// `prompt_render_error` (see [`render_prompt`]).
    pub fn render<V: Serialize + ?Sized>(
        &self,
        prompt: &Prompt,
        variables: &V,
    ) -> Result<PromptResult, PromptError> {
        render_prompt(prompt, variables, None, RenderOptions::default())
    }

    /// Renders `prompt` strictly, filling a Chat prompt's placeholder segments (ignored
    /// for a Text prompt).
    ///
    /// # Errors
    /// `prompt_render_error` (see [`render_prompt`]).
    pub fn render_with_placeholders<V: Serialize + ?Sized>(
        &self,
        prompt: &Prompt,
        variables: &V,
        placeholders: &Placeholders,
    ) -> Result<PromptResult, PromptError> {
        render_prompt(
            prompt,
            variables,
            Some(placeholders),
            RenderOptions::default(),
        )
    }

    /// Renders with explicit options (e.g. [`RenderOptions::lenient`]).
    ///
    /// # Errors
    /// `prompt_render_error` (see [`render_prompt`]).
    pub fn render_with<V: Serialize + ?Sized>(
        &self,
        prompt: &Prompt,
        variables: &V,
        placeholders: Option<&Placeholders>,
        options: RenderOptions,
    ) -> Result<PromptResult, PromptError> {
        render_prompt(prompt, variables, placeholders, options)
    }

    /// Fetch then strict render (§6 `get`). `variables` are serialized before the
    /// returned future starts, so it is `Send` whatever their type.
    ///
    /// # Errors
    /// Those of [`PromptManager::fetch`], then of [`PromptManager::render`].
    pub fn get<'a, V: Serialize + ?Sized>(
        &'a self,
        name: &'a str,
        label: Option<&'a str>,
        variables: &V,
    ) -> impl std::future::Future<Output = Result<PromptResult, PromptError>> + Send + 'a {
        let options = FetchOptions {
            label: label.map(str::to_owned),
            cache_ttl_seconds: None,
        };
        self.get_with(name, options, variables, None)
    }

    /// [`PromptManager::get`] with fetch options and placeholders.
    ///
    /// # Errors
    /// As for [`PromptManager::get`].
    pub fn get_with<'a, V: Serialize + ?Sized>(
        &'a self,
        name: &'a str,
        options: FetchOptions,
        variables: &V,
        placeholders: Option<&'a Placeholders>,
    ) -> impl std::future::Future<Output = Result<PromptResult, PromptError>> + Send + 'a {
        let variables = to_variables(variables);
        async move {
            let prompt = self.fetch_with(name, &options).await?;
            render_converted(&prompt, variables, placeholders, RenderOptions::default())
        }
    }
}
