//! The agent's typed errors: what a tool call can end with ([`ToolError`]) and what
//! stops the loop or its construction ([`AgentError`]). Each has a [`Category`].

use openarmature_graph::{Categorized, Category, NodeError};

/// The model's arguments were not valid JSON for the tool, or did not match its schema.
pub const TOOL_ARGUMENTS_INVALID: Category = Category::new("agent_tool_arguments_invalid");
/// The model called a tool the agent does not have.
pub const TOOL_UNKNOWN: Category = Category::new("agent_tool_unknown");
/// A person denied the tool call.
pub const TOOL_DENIED: Category = Category::new("agent_tool_denied");
/// The tool ran and failed.
pub const TOOL_FAILED: Category = Category::new("agent_tool_failed");
/// The loop reached its turn limit with the model still calling tools.
pub const TURN_LIMIT_EXCEEDED: Category = Category::new("agent_turn_limit_exceeded");
/// The agent was misconfigured (duplicate tool names, a non-object argument schema, a
/// zero turn limit).
pub const AGENT_CONFIGURATION_INVALID: Category = Category::new("agent_configuration_invalid");

/// How one tool call ended other than with a result. Every variant except
/// [`ToolError::Suspended`] becomes a tool-result message for the model (see
/// [`ToolError::to_tool_content`]); none crashes the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments did not parse or did not match the tool's schema.
    #[error("invalid arguments for tool `{tool}`: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What was wrong, for the model to correct.
        message: String,
    },
    /// No tool of that name.
    #[error("unknown tool `{tool}`; available tools: {available}")]
    UnknownTool {
        /// The name the model used.
        tool: String,
        /// The tools the agent has, comma-separated.
        available: String,
    },
    /// A person denied the call.
    #[error("the call to `{tool}` was denied{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Denied {
        /// The tool.
        tool: String,
        /// The reviewer's reason, when given.
        reason: Option<String>,
    },
    /// The tool's own failure.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
    },
    /// The tool suspended the invocation (awaiting approval): the node body returns
    /// this error; the engine acts on the recorded suspension.
    #[error("the tool call suspended the invocation: {0}")]
    Suspended(NodeError),
}

impl ToolError {
    /// A tool failure with `message`.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        ToolError::Failed {
            message: message.to_string(),
        }
    }

    /// The content of the tool-result message reporting this error to the model:
    /// `{"error": {"category": ..., "message": ...}}`.
    pub fn to_tool_content(&self) -> String {
        let category = self.category().map(Category::as_str);
        serde_json::json!({"error": {"category": category, "message": self.to_string()}})
            .to_string()
    }
}

impl Categorized for ToolError {
    fn category(&self) -> Option<Category> {
        Some(match self {
            ToolError::InvalidArguments { .. } => TOOL_ARGUMENTS_INVALID,
            ToolError::UnknownTool { .. } => TOOL_UNKNOWN,
            ToolError::Denied { .. } => TOOL_DENIED,
            ToolError::Failed { .. } => TOOL_FAILED,
            ToolError::Suspended(inner) => return inner.category(),
        })
    }
}

/// What stops the agent loop, or its construction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model was called `max_turns` times since the last user message and still
    /// asked for tools.
    #[error("the agent reached its turn limit ({max_turns} model calls) without a final answer")]
    TurnLimitExceeded {
        /// The configured limit.
        max_turns: u32,
    },
    /// The agent's configuration is invalid.
    #[error("invalid agent configuration: {0}")]
    Configuration(String),
}

impl Categorized for AgentError {
    fn category(&self) -> Option<Category> {
        Some(match self {
            AgentError::TurnLimitExceeded { .. } => TURN_LIMIT_EXCEEDED,
            AgentError::Configuration(_) => AGENT_CONFIGURATION_INVALID,
        })
    }
}
