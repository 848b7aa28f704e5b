//! Spec: llm-provider §4 (tool definitions) and §5 `tool_choice`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LlmError;

/// A function the model may ask the caller to run (§4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// Unique within one call's tool list.
    pub name: String,
    /// What the tool does; sent to the model.
    pub description: String,
    /// A JSON Schema (object schema) for the arguments; validated at call time.
    pub parameters: Value,
}

impl Tool {
    /// A tool definition.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// Reads a tool list in the spec's JSON shape.
    ///
    /// # Errors
    /// `provider_invalid_request` when an entry is not a §4 tool record.
    pub fn list_from_json(value: &Value) -> Result<Vec<Tool>, LlmError> {
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    Tool::deserialize(t).map_err(|e| {
                        LlmError::invalid_request(format!("malformed tool at index {i}: {e}"))
                    })
                })
                .collect(),
            _ => Err(LlmError::invalid_request("tools must be a list")),
        }
    }
}

/// The §5 tool-choice constraint. Absent (`None` in [`crate::CompletionRequest`])
/// means the provider's own default and no wire field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// `"auto"`: the model decides.
    Auto,
    /// `"required"`: at least one tool call (`tools` must be non-empty).
    Required,
    /// `"none"`: no tool calls, even with tools supplied.
    None,
    /// `{type: "tool", name}`: exactly the named tool (which must be in `tools`).
    Tool {
        /// The forced tool.
        name: String,
    },
}

impl ToolChoice {
    /// Reads `"auto" | "required" | "none" | {type: "tool", name: X}`.
    ///
    /// # Errors
    /// `provider_invalid_request` for any other shape.
    pub fn from_json(value: &Value) -> Result<ToolChoice, LlmError> {
        match value {
            Value::String(s) => match s.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "required" => Ok(ToolChoice::Required),
                "none" => Ok(ToolChoice::None),
                other => Err(LlmError::invalid_request(format!(
                    "tool_choice: unknown mode `{other}` (expected auto, required, none or {{type: tool, name}})"
                ))),
            },
            Value::Object(map) => {
                let kind = map.get("type").and_then(Value::as_str);
                let name = map.get("name").and_then(Value::as_str);
                match (kind, name, map.len()) {
                    (Some("tool"), Some(name), 2) if !name.is_empty() => Ok(ToolChoice::Tool {
                        name: name.to_owned(),
                    }),
                    _ => Err(LlmError::invalid_request(
                        "tool_choice: a record must be exactly {type: \"tool\", name: <non-empty string>}",
                    )),
                }
            }
            _ => Err(LlmError::invalid_request(
                "tool_choice must be a string mode or {type: \"tool\", name}",
            )),
        }
    }

    /// The spec's JSON shape.
    pub fn to_json(&self) -> Value {
        match self {
            ToolChoice::Auto => Value::from("auto"),
            ToolChoice::Required => Value::from("required"),
            ToolChoice::None => Value::from("none"),
            ToolChoice::Tool { name } => serde_json::json!({"type": "tool", "name": name}),
        }
    }
}
