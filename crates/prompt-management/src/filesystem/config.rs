//! Spec: prompt-management §5 — the filesystem sidecar conventions: where a prompt's
//! config object comes from, and how it splits into `sampling` and `token_budget`.

use std::path::Path;

use crate::prompt_context::TokenBudget;
use openarmature_llm::{LlmError, RuntimeConfig};
use serde_json::{Map, Value};

use super::{io_error, read, ConfigSource, FilesystemBackend};
use crate::budget::token_budget_from_config;
use crate::error::PromptError;

impl FilesystemBackend {
    pub(super) async fn config_for(
        &self,
        name: &str,
        label: &str,
        dir: &Path,
    ) -> Result<Option<Map<String, Value>>, PromptError> {
        let (path, entry) = match self.config {
            ConfigSource::None => return Ok(None),
            ConfigSource::PerPrompt => (dir.join(format!("{name}.config.json")), None),
            ConfigSource::Unified => (self.root.join("prompt_configs.json"), Some(name)),
        };
        let unavailable = |what: String| PromptError::store_unavailable(name, label, what);
        let Some(source) = read(&path)
            .await
            .map_err(|e| io_error(name, label, &path, e))?
        else {
            return Ok(None);
        };
        let json: Value = serde_json::from_str(&source)
            .map_err(|e| unavailable(format!("{}: {e}", path.display())).with_source(e))?;
        let json = match entry {
            Some(key) => match json {
                Value::Object(mut all) => match all.remove(key) {
                    Some(v) => v,
                    None => return Ok(None),
                },
                _ => return Err(unavailable(format!("{} is not an object", path.display()))),
            },
            None => json,
        };
        match json {
            Value::Object(map) => Ok(Some(map)),
            _ => Err(unavailable(format!(
                "config for {name:?} in {} is not an object",
                path.display()
            ))),
        }
    }
}

/// The sampling part of a config object: every key but `token_budget`.
pub(super) fn sampling(config: &Map<String, Value>) -> Result<Option<RuntimeConfig>, LlmError> {
    let fields: Map<String, Value> = config
        .iter()
        .filter(|(k, _)| k.as_str() != "token_budget")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if fields.is_empty() {
        return Ok(None);
    }
    RuntimeConfig::from_json(&Value::Object(fields)).map(Some)
}

/// The `token_budget` part of a config object, dropped when malformed
/// ([`token_budget_from_config`]).
pub(super) fn token_budget(config: &Map<String, Value>) -> Option<TokenBudget> {
    token_budget_from_config(config.get("token_budget")?)
}
