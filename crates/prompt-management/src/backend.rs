//! Spec: prompt-management §5 — the `PromptBackend` protocol — and an in-memory backend.
//!
//! A backend only fetches: `fetch(name, label, cache_ttl_seconds)` returns a [`Prompt`]
//! (either variant), `prompt_not_found` when nothing matches and
//! `prompt_store_unavailable` when the store cannot be reached. Rendering, fallback and
//! label resolution belong to [`crate::PromptManager`].
//!
//! `cache_ttl_seconds` bounds how stale a cached template a caching backend may serve
//! for this fetch (`Some(0)`: read fresh; `Some(n)`: nothing older than `n` seconds;
//! `None`: the backend's own policy). It is a `u64`, so the spec's "negative is
//! rejected" holds by construction. Backends that read their source on every fetch —
//! both bundled ones — ignore it. A caching backend serving a stored entry keeps the
//! entry's original `fetched_at` and `template_hash`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

use crate::error::PromptError;
use crate::prompt::Prompt;

/// A boxed, `Send` future (what [`PromptBackend::fetch`] returns).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A prompt store (§5). Object-safe, so backends compose as `Arc<dyn PromptBackend>`.
/// `fetch` must be reentrant: concurrent calls are allowed.
///
/// ```
/// use openarmature_prompt::{BoxFuture, Prompt, PromptBackend, PromptError};
///
/// /// A backend that is always down (e.g. to exercise a manager's fallback).
/// struct Down;
///
/// impl PromptBackend for Down {
///     fn fetch<'a>(
///         &'a self,
///         name: &'a str,
///         label: &'a str,
///         _cache_ttl_seconds: Option<u64>,
///     ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
///         Box::pin(async move {
///             Err(PromptError::store_unavailable(name, label, "connection refused"))
///         })
///     }
/// }
/// ```
pub trait PromptBackend: Send + Sync {
    /// Fetches the prompt `name` under `label`.
    ///
    /// # Errors
    /// `prompt_not_found` when no prompt matches `(name, label)`;
    /// `prompt_store_unavailable` when the store is unreachable (network, I/O, timeout).
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        cache_ttl_seconds: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>>;

    /// A short description for error reports (defaults to the type name).
    fn describe(&self) -> String {
        std::any::type_name::<Self>().to_owned()
    }
}

/// Prompts held in memory, keyed by `(name, label)`. Clones share the same store, so a
/// test can keep a handle and change the store under a running manager.
///
/// A fetch returns a copy of the stored prompt stamped with the fetch time. The backend
/// has no cache, so `cache_ttl_seconds` is ignored.
#[derive(Debug, Clone, Default)]
pub struct InMemoryBackend {
    prompts: Arc<RwLock<HashMap<(String, String), Prompt>>>,
}

impl InMemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryBackend::default()
    }

    /// Stores `prompt` under its own `(name, label)`, replacing any previous one.
    pub fn insert(&self, prompt: Prompt) {
        let key = (prompt.name().to_owned(), prompt.label().to_owned());
        self.prompts
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, prompt);
    }

    /// [`InMemoryBackend::insert`], builder-style.
    pub fn with_prompt(self, prompt: Prompt) -> Self {
        self.insert(prompt);
        self
    }

    /// Removes the prompt stored under `(name, label)`, returning it.
    pub fn remove(&self, name: &str, label: &str) -> Option<Prompt> {
        self.prompts
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(name.to_owned(), label.to_owned()))
    }

    /// How many prompts are stored.
    pub fn len(&self) -> usize {
        self.prompts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PromptBackend for InMemoryBackend {
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        _cache_ttl_seconds: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
        let found = self
            .prompts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(name.to_owned(), label.to_owned()))
            .cloned();
        Box::pin(async move {
            match found {
                Some(prompt) => Ok(prompt.with_fetched_at(SystemTime::now())),
                None => Err(PromptError::not_found(
                    name,
                    label,
                    format!("prompt ({name:?}, {label:?}) is not in the in-memory store"),
                )),
            }
        })
    }

    fn describe(&self) -> String {
        "in-memory".to_owned()
    }
}
