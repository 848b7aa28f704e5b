//! Spec: prompt-management §5 — the reference filesystem backend and its (informative)
//! sidecar conventions for `sampling` and `token_budget`.
//!
//! # Layout
//!
//! Compatible with the Python reference's `FilesystemPromptBackend`:
//!
//! | [`FsLayout`] | template | per-prompt sidecar |
//! |---|---|---|
//! | `PerLabel` (default) | `<root>/<label>/<name>.j2` | `<root>/<label>/<name>.config.json` |
//! | `Flat` | `<root>/<name>.j2` (any label; the requested label is echoed) | `<root>/<name>.config.json` |
//!
//! - `<name>.j2` is a Text prompt (Jinja2 source, read as UTF-8, verbatim).
//! - When there is no `.j2`, `<name>.chat.json` in the same directory is a Chat prompt:
//!   a JSON array of segments in the spec shape ([`crate::ChatSegment::from_json`]).
//!   The `.j2` file wins when both exist.
//! - `version` is the first 16 hex digits of the template's SHA-256 (the `template_hash`
//!   without its `sha256:` prefix), so distinct contents get distinct versions with no
//!   metadata file. `metadata` carries `{"source_path": "<file>"}`.
//! - A `name` may contain `/` to address a subdirectory; `.`/`..` components, empty
//!   components and a `label` containing a path separator are `invalid_argument`.
//!
//! # Config ([`ConfigSource`])
//!
//! `PerPrompt` (default) reads the sidecar above; `Unified` reads
//! `<root>/prompt_configs.json`, an object keyed by prompt name; `None` reads nothing.
//! A config object holds the sampling fields at top level (the `RuntimeConfig` JSON
//! shape: declared fields, an optional `extras` object, any other key as an extra)
//! plus an optional `token_budget` object. A missing file or entry means no config.
//!
//! - `sampling` is `None` when the object has no key besides `token_budget`; a sampling
//!   field of the wrong type is `prompt_store_unavailable` (the config would change
//!   the call, so it fails loudly and is fallback-eligible).
//! - `token_budget` takes `input_max_tokens` / `total_max_tokens`; unrecognized keys
//!   are ignored, and a malformed budget (not an object, a bound that is not a
//!   non-negative integer) is dropped — never an error, the budget being advisory.
//!
//! # Errors
//!
//! A missing template is `prompt_not_found`; a missing root directory, any other I/O
//! error, unparsable JSON in a `.chat.json` or config file is
//! `prompt_store_unavailable`. Every fetch reads the disk (no cache), so
//! `cache_ttl_seconds` is ignored.

mod config;

use std::io;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::backend::{BoxFuture, PromptBackend};
use crate::chat::ChatSegment;
use crate::error::PromptError;
use crate::hash::HASH_PREFIX;
use crate::prompt::{Prompt, Template};

/// Where templates live under the root (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FsLayout {
    /// `<root>/<label>/<name>.j2`.
    #[default]
    PerLabel,
    /// `<root>/<name>.j2`, whatever the label.
    Flat,
}

/// Where `sampling` / `token_budget` come from (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ConfigSource {
    /// No config: both stay `None`.
    None,
    /// `<name>.config.json` next to the template.
    #[default]
    PerPrompt,
    /// `<root>/prompt_configs.json`, keyed by prompt name.
    Unified,
}

/// The reference filesystem backend (§5). Emits Text prompts (`.j2`) and Chat prompts
/// (`.chat.json`).
#[derive(Debug, Clone)]
pub struct FilesystemBackend {
    root: PathBuf,
    layout: FsLayout,
    config: ConfigSource,
}

impl FilesystemBackend {
    /// A backend rooted at `root` with the per-label layout and per-prompt sidecars.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FilesystemBackend {
            root: root.into(),
            layout: FsLayout::default(),
            config: ConfigSource::default(),
        }
    }

    /// Sets the layout.
    pub fn with_layout(mut self, layout: FsLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Sets the config source.
    pub fn with_config_source(mut self, config: ConfigSource) -> Self {
        self.config = config;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn directory(&self, label: &str) -> PathBuf {
        match self.layout {
            FsLayout::PerLabel => self.root.join(label),
            FsLayout::Flat => self.root.clone(),
        }
    }

    async fn load(&self, name: &str, label: &str) -> Result<Prompt, PromptError> {
        check_name(name, label)?;
        let unavailable = |what: String| PromptError::store_unavailable(name, label, what);
        match tokio::fs::metadata(&self.root).await {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(unavailable(format!(
                    "{} is not a directory",
                    self.root.display()
                )))
            }
            Err(e) => {
                let message = format!("prompt root {}: {e}", self.root.display());
                return Err(unavailable(message).with_source(e));
            }
        }
        let dir = self.directory(label);
        let text_path = dir.join(format!("{name}.j2"));
        let chat_path = dir.join(format!("{name}.chat.json"));
        let (template, path) = match read(&text_path).await {
            Ok(Some(source)) => (Template::Text(source), text_path),
            Ok(None) => match read(&chat_path).await {
                Ok(Some(source)) => {
                    let segments = serde_json::from_str::<Value>(&source)
                        .map_err(|e| {
                            unavailable(format!("{}: {e}", chat_path.display())).with_source(e)
                        })
                        .and_then(|json| {
                            ChatSegment::list_from_json(&json).map_err(|e| {
                                unavailable(format!("{}: {e}", chat_path.display())).with_source(e)
                            })
                        })?;
                    (Template::Chat(segments), chat_path)
                }
                Ok(None) => {
                    let message = format!(
                        "prompt ({name:?}, {label:?}) not found: no {} or {}",
                        text_path.display(),
                        chat_path.display()
                    );
                    return Err(PromptError::not_found(name, label, message));
                }
                Err(e) => return Err(io_error(name, label, &chat_path, e)),
            },
            Err(e) => return Err(io_error(name, label, &text_path, e)),
        };
        let config = self.config_for(name, label, &dir).await?;
        let hash = template.content_hash();
        let version: String = hash
            .strip_prefix(HASH_PREFIX)
            .unwrap_or(&hash)
            .chars()
            .take(16)
            .collect();
        let mut metadata = Map::new();
        metadata.insert("source_path".into(), path.display().to_string().into());
        let mut prompt = Prompt::new(name, version, label, template).with_metadata(metadata);
        if let Some(config) = config {
            if let Some(budget) = config::token_budget(&config) {
                prompt = prompt.with_token_budget(budget);
            }
            if let Some(sampling) = config::sampling(&config).map_err(|e| {
                unavailable(format!("malformed sampling config for {name:?}: {e}")).with_source(e)
            })? {
                prompt = prompt.with_sampling(sampling);
            }
        }
        Ok(prompt)
    }
}

impl PromptBackend for FilesystemBackend {
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        _cache_ttl_seconds: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
        Box::pin(self.load(name, label))
    }

    fn describe(&self) -> String {
        format!("filesystem:{}", self.root.display())
    }
}

/// Reads a UTF-8 file; `Ok(None)` when it does not exist.
async fn read(path: &Path) -> io::Result<Option<String>> {
    match tokio::fs::read_to_string(path).await {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn io_error(name: &str, label: &str, path: &Path, e: io::Error) -> PromptError {
    PromptError::store_unavailable(name, label, format!("reading {}: {e}", path.display()))
        .with_source(e)
}

fn check_name(name: &str, label: &str) -> Result<(), PromptError> {
    let safe = |part: &str| {
        !part.is_empty()
            && !part.contains('\\')
            && !part.contains('\0')
            && Path::new(part)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
            && part.split('/').all(|s| !s.is_empty())
    };
    if !safe(name) || !safe(label) || label.contains('/') {
        return Err(PromptError::invalid_argument(format!(
            "unsafe prompt path for name {name:?}, label {label:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::config::token_budget;
    use super::*;
    use crate::prompt_context::TokenBudget;
    use serde_json::json;

    fn budget(v: Value) -> Option<TokenBudget> {
        token_budget(v.as_object().unwrap_or(&Map::new()))
    }

    #[test]
    fn token_budget_is_lenient() {
        let b = budget(json!({"token_budget": {"input_max_tokens": 10, "unknown": 5}}));
        assert_eq!(b, Some(TokenBudget::new(Some(10), None)));
        assert_eq!(budget(json!({"token_budget": "lots"})), None);
        assert_eq!(
            budget(json!({"token_budget": {"input_max_tokens": -1}})),
            None
        );
        assert_eq!(
            budget(json!({"token_budget": {"total_max_tokens": 1.5}})),
            None
        );
        assert_eq!(budget(json!({"token_budget": {}})), None);
        assert_eq!(budget(json!({"temperature": 0.1})), None);
    }

    #[test]
    fn names_cannot_escape_the_root() {
        assert!(check_name("greeting", "production").is_ok());
        assert!(check_name("agents/classify", "production").is_ok());
        for (n, l) in [
            ("../x", "p"),
            ("x", ".."),
            ("/etc/passwd", "p"),
            ("x", "a/b"),
            ("", "p"),
            ("a//b", "p"),
            ("a\\b", "p"),
        ] {
            assert_eq!(
                check_name(n, l).map_err(|e| e.category()),
                Err("invalid_argument"),
                "{n} {l}"
            );
        }
    }
}
