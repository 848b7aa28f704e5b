//! Spec: prompt-management §7 — the `LabelResolver`: which label to fetch a prompt under
//! when the caller names none.
//!
//! Resolution order: a per-name override, then the resolver's default, then
//! `"production"` ([`DEFAULT_LABEL`]). Resolution is pure and synchronous; change the
//! labels by building a new resolver (e.g. from a re-read JSON file).

use std::collections::HashMap;

use serde_json::Value;

use crate::error::PromptError;

/// The spec-fallback label.
pub const DEFAULT_LABEL: &str = "production";

/// Maps prompt names to labels (per-name override > default > `"production"`).
///
/// ```
/// use openarmature_prompt::LabelResolver;
/// let resolver = LabelResolver::from_json(&serde_json::json!({
///     "default": "production",
///     "segment_semantic": "staging",
/// }))?;
/// assert_eq!(resolver.resolve("segment_semantic"), "staging");
/// assert_eq!(resolver.resolve("anything_else"), "production");
/// # Ok::<(), openarmature_prompt::PromptError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelResolver {
    default: Option<String>,
    overrides: HashMap<String, String>,
}

impl LabelResolver {
    /// A resolver with no overrides and no default (it always answers `"production"`).
    pub fn new() -> Self {
        LabelResolver::default()
    }

    /// A resolver with these per-name overrides. Every key is a prompt name, including
    /// a key spelled `default` (use [`LabelResolver::with_default`] for the default).
    pub fn from_map<I, K, V>(overrides: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        LabelResolver {
            default: None,
            overrides: overrides
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A resolver from a JSON object whose `"default"` key is the default label and
    /// whose other keys map prompt names to labels.
    ///
    /// # Errors
    /// `invalid_argument` when the value is not an object or a value is not a string.
    pub fn from_json(value: &Value) -> Result<Self, PromptError> {
        let map = value.as_object().ok_or_else(|| {
            PromptError::invalid_argument(format!(
                "label resolver source must be an object, got {value}"
            ))
        })?;
        let mut resolver = LabelResolver::new();
        for (key, v) in map {
            let label = v.as_str().ok_or_else(|| {
                PromptError::invalid_argument(format!(
                    "label for {key:?} must be a string, got {v}"
                ))
            })?;
            if key == "default" {
                resolver.default = Some(label.to_owned());
            } else {
                resolver.overrides.insert(key.clone(), label.to_owned());
            }
        }
        Ok(resolver)
    }

    /// Sets the default label (used for names without an override).
    pub fn with_default(mut self, label: impl Into<String>) -> Self {
        self.default = Some(label.into());
        self
    }

    /// Adds (or replaces) the override for `name`.
    pub fn with_override(mut self, name: impl Into<String>, label: impl Into<String>) -> Self {
        self.overrides.insert(name.into(), label.into());
        self
    }

    /// The label for `name`: its override, else the default, else `"production"`.
    pub fn resolve(&self, name: &str) -> &str {
        self.overrides
            .get(name)
            .or(self.default.as_ref())
            .map_or(DEFAULT_LABEL, String::as_str)
    }
}
