//! Spec: llm-provider §6 `RuntimeConfig` — the seven declared fields, the extras
//! pass-through bag and the null-skip rule.
//!
//! A declared field left `None` is "not supplied" and never reaches the wire (0.0 is a
//! value, not "unset"). Undeclared fields live in [`RuntimeConfig::extras`] and are
//! forwarded untouched, subject to the wire mapping's managed-field rules (§6
//! *Managed-field collision*; see [`crate::openai`]).

use serde_json::{Map, Value};

use crate::error::LlmError;

/// Names of the declared fields, in spec order.
pub const DECLARED_FIELDS: [&str; 7] = [
    "temperature",
    "max_tokens",
    "top_p",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "stop_sequences",
];

/// Per-call sampling parameters and budget hints (§6).
///
/// # Examples
/// ```
/// use openarmature_llm::RuntimeConfig;
/// let base = RuntimeConfig::default().temperature(0.0).max_tokens(64);
/// let retry = base.overlay(&RuntimeConfig::default().temperature(0.3));
/// assert_eq!(retry.temperature, Some(0.3));
/// assert_eq!(retry.max_tokens, Some(64));
/// assert_eq!(base.temperature, Some(0.0));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Maximum completion tokens.
    pub max_tokens: Option<u64>,
    /// Nucleus sampling probability.
    pub top_p: Option<f64>,
    /// Best-effort determinism seed.
    pub seed: Option<i64>,
    /// Penalty on token frequency.
    pub frequency_penalty: Option<f64>,
    /// Penalty on token presence.
    pub presence_penalty: Option<f64>,
    /// Stop sequences (OpenAI wire name: `stop`).
    pub stop_sequences: Option<Vec<String>>,
    /// Undeclared fields, forwarded untouched (key order is irrelevant: the wire body
    /// is canonicalized).
    pub extras: Map<String, Value>,
}

impl RuntimeConfig {
    /// Sets `temperature`.
    pub fn temperature(mut self, value: f64) -> Self {
        self.temperature = Some(value);
        self
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(mut self, value: u64) -> Self {
        self.max_tokens = Some(value);
        self
    }

    /// Sets `top_p`.
    pub fn top_p(mut self, value: f64) -> Self {
        self.top_p = Some(value);
        self
    }

    /// Sets `seed`.
    pub fn seed(mut self, value: i64) -> Self {
        self.seed = Some(value);
        self
    }

    /// Sets `frequency_penalty`.
    pub fn frequency_penalty(mut self, value: f64) -> Self {
        self.frequency_penalty = Some(value);
        self
    }

    /// Sets `presence_penalty`.
    pub fn presence_penalty(mut self, value: f64) -> Self {
        self.presence_penalty = Some(value);
        self
    }

    /// Sets `stop_sequences`.
    pub fn stop_sequences<I: IntoIterator<Item = S>, S: Into<String>>(mut self, values: I) -> Self {
        self.stop_sequences = Some(values.into_iter().map(Into::into).collect());
        self
    }

    /// Adds an undeclared field.
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extras.insert(key.into(), value);
        self
    }

    /// The per-key shallow merge of §7.1 `per_attempt_override`: every field set in
    /// `partial` replaces this config's; fields left `None` (and extras whose value is
    /// JSON `null`) inherit. Returns a new config; neither input changes.
    pub fn overlay(&self, partial: &RuntimeConfig) -> RuntimeConfig {
        fn take<T: Clone>(out: &mut Option<T>, partial: &Option<T>) {
            if partial.is_some() {
                out.clone_from(partial);
            }
        }
        let mut out = self.clone();
        take(&mut out.temperature, &partial.temperature);
        take(&mut out.max_tokens, &partial.max_tokens);
        take(&mut out.top_p, &partial.top_p);
        take(&mut out.seed, &partial.seed);
        take(&mut out.frequency_penalty, &partial.frequency_penalty);
        take(&mut out.presence_penalty, &partial.presence_penalty);
        take(&mut out.stop_sequences, &partial.stop_sequences);
        for (key, value) in &partial.extras {
            if !value.is_null() {
                out.extras.insert(key.clone(), value.clone());
            }
        }
        out
    }

    /// The declared fields that are set, by their spec names (the GenAI request
    /// parameter family, e.g. for `LlmCompletionEvent::request_params`).
    pub fn declared_params(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                out.insert(key.to_owned(), v);
            }
        };
        put("temperature", self.temperature.and_then(number));
        put("max_tokens", self.max_tokens.map(Value::from));
        put("top_p", self.top_p.and_then(number));
        put("seed", self.seed.map(Value::from));
        put("frequency_penalty", self.frequency_penalty.and_then(number));
        put("presence_penalty", self.presence_penalty.and_then(number));
        put(
            "stop_sequences",
            self.stop_sequences.as_ref().map(|s| Value::from(s.clone())),
        );
        out
    }

    /// Reads a config in the spec's JSON shape: the declared fields (a `null` value is
    /// unset), an optional `extras` mapping, and any other key as an extra.
    ///
    /// # Errors
    /// `provider_invalid_request` when a declared field has the wrong type.
    pub fn from_json(value: &Value) -> Result<RuntimeConfig, LlmError> {
        let map = match value {
            Value::Null => return Ok(RuntimeConfig::default()),
            Value::Object(map) => map,
            _ => return Err(LlmError::invalid_request("config must be a mapping")),
        };
        let mut config = RuntimeConfig::default();
        for (key, v) in map {
            if v.is_null() && DECLARED_FIELDS.contains(&key.as_str()) {
                continue;
            }
            let bad = |what: &str| {
                LlmError::invalid_request(format!("config.{key} must be {what}, got {v}"))
            };
            match key.as_str() {
                "temperature" => {
                    config.temperature = Some(v.as_f64().ok_or_else(|| bad("a number"))?)
                }
                "top_p" => config.top_p = Some(v.as_f64().ok_or_else(|| bad("a number"))?),
                "frequency_penalty" => {
                    config.frequency_penalty = Some(v.as_f64().ok_or_else(|| bad("a number"))?)
                }
                "presence_penalty" => {
                    config.presence_penalty = Some(v.as_f64().ok_or_else(|| bad("a number"))?)
                }
                "max_tokens" => {
                    config.max_tokens =
                        Some(v.as_u64().ok_or_else(|| bad("a non-negative integer"))?)
                }
                "seed" => config.seed = Some(v.as_i64().ok_or_else(|| bad("an integer"))?),
                "stop_sequences" => {
                    let items = v.as_array().ok_or_else(|| bad("a list of strings"))?;
                    let strings = items
                        .iter()
                        .map(|s| s.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| bad("a list of strings"))?;
                    config.stop_sequences = Some(strings);
                }
                "extras" => match v {
                    Value::Object(extras) => {
                        for (k, x) in extras {
                            config.extras.insert(k.clone(), x.clone());
                        }
                    }
                    Value::Null => {}
                    _ => return Err(bad("a mapping")),
                },
                _ => {
                    config.extras.insert(key.clone(), v.clone());
                }
            }
        }
        Ok(config)
    }
}

fn number(x: f64) -> Option<Value> {
    serde_json::Number::from_f64(x).map(Value::Number)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_declared_and_extras() {
        let c = RuntimeConfig::from_json(&json!({
            "temperature": 0.0, "max_tokens": 32, "top_p": null,
            "stop_sequences": ["A"], "extras": {"repetition_penalty": 1.05}, "other": true
        }))
        .unwrap();
        assert_eq!(c.temperature, Some(0.0));
        assert_eq!(c.top_p, None);
        assert_eq!(c.extras.len(), 2);
        assert!(RuntimeConfig::from_json(&json!({"max_tokens": -1})).is_err());
        assert!(RuntimeConfig::from_json(&json!({"stop_sequences": [1]})).is_err());
    }

    #[test]
    fn overlay_is_per_key_and_non_mutating() {
        let base = RuntimeConfig::default()
            .temperature(0.0)
            .extra("a", json!(1))
            .extra("b", json!(2));
        let over = RuntimeConfig::default()
            .temperature(0.6)
            .extra("a", json!(9))
            .extra("b", Value::Null);
        let merged = base.overlay(&over);
        assert_eq!(merged.temperature, Some(0.6));
        assert_eq!(merged.extras["a"], json!(9));
        assert_eq!(merged.extras["b"], json!(2));
        assert_eq!(base.temperature, Some(0.0));
    }
}
