//! Spec: prompt-management §5 (the `PromptBackend` protocol), conformance-adapter §6.8
//! (the caching prompt backend) — the harness's prompt backends.
//!
//! A [`HarnessBackend`] is the crate's [`InMemoryBackend`] preloaded with the
//! fixture's prompts, wrapped to count fetches (008 / 009 call counts) and, per the
//! backend's declaration:
//!
//! - `simulate_unavailable: true`: every fetch raises `prompt_store_unavailable`
//!   without reaching the store;
//! - `caching: true` (§6.8): entries are cached by `(name, label)` on a controllable
//!   clock the fixture advances (`advance_clock`). `cache_ttl_seconds` absent serves a
//!   cached entry, `0` bypasses the cache, `N > 0` serves an entry younger than `N`
//!   seconds; any other fetch is a source read, counted, and its result is cached. A
//!   cached entry is returned as stored (original `fetched_at`, same `template_hash`).
//!
//! A non-caching backend reads its store on every fetch, so its source reads equal
//! its fetches reaching the store. These conventions are register P4 (REGISTER.md).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use openarmature_prompt::{BoxFuture, InMemoryBackend, Prompt, PromptBackend, PromptError};

/// A fixture backend (see the module docs).
#[derive(Debug)]
pub(super) struct HarnessBackend {
    name: String,
    store: InMemoryBackend,
    unavailable: bool,
    cache: Option<Cache>,
    fetches: AtomicUsize,
    source_reads: AtomicUsize,
}

/// The §6.8 cache and its clock (whole seconds since the case started).
#[derive(Debug, Default)]
struct Cache {
    now: AtomicU64,
    entries: Mutex<HashMap<(String, String), (u64, Prompt)>>,
}

impl Cache {
    fn lookup(&self, name: &str, label: &str, ttl: Option<u64>) -> Option<Prompt> {
        if ttl == Some(0) {
            return None;
        }
        let now = self.now.load(Ordering::SeqCst);
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (stored_at, prompt) = entries.get(&(name.to_owned(), label.to_owned()))?;
        let fresh = ttl.is_none_or(|max_age| now.saturating_sub(*stored_at) < max_age);
        fresh.then(|| prompt.clone())
    }

    fn store(&self, prompt: &Prompt) {
        let now = self.now.load(Ordering::SeqCst);
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                (prompt.name().to_owned(), prompt.label().to_owned()),
                (now, prompt.clone()),
            );
    }
}

impl HarnessBackend {
    /// A backend named `name` holding `prompts`.
    pub(super) fn new(
        name: &str,
        prompts: Vec<Prompt>,
        unavailable: bool,
        caching: bool,
    ) -> HarnessBackend {
        let store = InMemoryBackend::new();
        for prompt in prompts {
            store.insert(prompt);
        }
        HarnessBackend {
            name: name.to_owned(),
            store,
            unavailable,
            cache: caching.then(Cache::default),
            fetches: AtomicUsize::new(0),
            source_reads: AtomicUsize::new(0),
        }
    }

    /// The fixture's name for this backend.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// How many times `fetch` was called.
    pub(super) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// How many fetches read the backing store (not the cache).
    pub(super) fn source_reads(&self) -> usize {
        self.source_reads.load(Ordering::SeqCst)
    }

    /// Advances the §6.8 clock; `None` when this is not a caching backend.
    pub(super) fn advance_clock(&self, seconds: u64) -> Option<()> {
        let cache = self.cache.as_ref()?;
        cache.now.fetch_add(seconds, Ordering::SeqCst);
        Some(())
    }
}

impl PromptBackend for HarnessBackend {
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        cache_ttl_seconds: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.unavailable {
                return Err(PromptError::store_unavailable(
                    name,
                    label,
                    format!("backend {:?} simulates an outage", self.name),
                ));
            }
            let cached = self
                .cache
                .as_ref()
                .and_then(|c| c.lookup(name, label, cache_ttl_seconds));
            if let Some(prompt) = cached {
                return Ok(prompt);
            }
            self.source_reads.fetch_add(1, Ordering::SeqCst);
            let prompt = self.store.fetch(name, label, cache_ttl_seconds).await?;
            if let Some(cache) = &self.cache {
                cache.store(&prompt);
            }
            Ok(prompt)
        })
    }

    fn describe(&self) -> String {
        format!("fixture backend {:?}", self.name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn backend(caching: bool) -> HarnessBackend {
        let p = Prompt::text("greeting", "v1", "production", "Hello");
        HarnessBackend::new("b", vec![p], false, caching)
    }

    async fn fetch(b: &HarnessBackend, ttl: Option<u64>) -> Prompt {
        b.fetch("greeting", "production", ttl).await.unwrap()
    }

    #[tokio::test]
    async fn cache_serves_by_age_and_keeps_the_original_fetch_time() {
        let b = backend(true);
        let first = fetch(&b, None).await;
        assert_eq!(fetch(&b, None).await.fetched_at(), first.fetched_at());
        assert_eq!(b.source_reads(), 1);
        fetch(&b, Some(0)).await;
        assert_eq!(b.source_reads(), 2);
        b.advance_clock(59).unwrap();
        fetch(&b, Some(60)).await;
        assert_eq!(b.source_reads(), 2, "59 s old, bound 60: served from cache");
        b.advance_clock(1).unwrap();
        fetch(&b, Some(60)).await;
        assert_eq!(b.source_reads(), 3, "60 s old, bound 60: read again");
        assert_eq!(b.fetches(), 5);
    }

    #[tokio::test]
    async fn non_caching_backend_reads_every_time_and_has_no_clock() {
        let b = backend(false);
        fetch(&b, None).await;
        fetch(&b, None).await;
        assert_eq!(b.source_reads(), 2);
        assert!(b.advance_clock(1).is_none());
    }

    #[tokio::test]
    async fn unavailable_backend_never_reaches_its_store() {
        let p = Prompt::text("greeting", "v1", "production", "Hello");
        let b = HarnessBackend::new("down", vec![p], true, false);
        let err = b.fetch("greeting", "production", None).await.unwrap_err();
        assert_eq!(err.category().to_string(), "prompt_store_unavailable");
        assert_eq!((b.fetches(), b.source_reads()), (1, 0));
    }
}
