//! Spec: graph-engine §6 *Typed tool-call event* / *Typed tool-call failure event*
//! (observability §5.5.12, proposal 0063): what a tool-call instrumentation scope
//! reports. The scope itself (`ToolScope`, `ToolScopeExt::instrument_tool` /
//! `start_tool` on the node context) is `openarmature-llm`'s, which re-exports
//! these types.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use crate::CallSite;

/// What the caller declares about one tool execution when entering the scope.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolExecution {
    /// The tool's name (the `Tool.name` when it satisfies a model request).
    pub tool_name: String,
    /// The `ToolCall.id` of the model's request this execution satisfies; `None` for
    /// a standalone instrumented function.
    pub tool_call_id: Option<String>,
    /// The arguments the tool is invoked with; `None` when it takes none.
    pub arguments: Option<Value>,
}

impl ToolExecution {
    /// An execution of `tool_name` with no arguments and no model-request link.
    pub fn new(tool_name: impl Into<String>) -> Self {
        ToolExecution {
            tool_name: tool_name.into(),
            tool_call_id: None,
            arguments: None,
        }
    }

    /// Links the execution to the model's tool-call request `id`.
    pub fn tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// The arguments the tool is invoked with (e.g. the parsed `ToolCall.arguments`).
    pub fn arguments(mut self, arguments: Value) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// The request side shared by both terminal tool events: where the scope was
/// entered and what was executed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The node that entered the scope (identity captured at scope entry).
    pub site: CallSite,
    /// A fresh per-execution id minted at scope entry (OA's own token, distinct
    /// from `tool_call_id`).
    pub call_id: Arc<str>,
    /// The tool's name.
    pub tool_name: String,
    /// The model request this execution satisfies, if any.
    pub tool_call_id: Option<String>,
    /// The arguments (payload; renderers gate it, §5.5.4).
    pub arguments: Option<Value>,
    /// Wall-clock latency measured at the scope boundary, in milliseconds.
    pub latency_ms: Option<f64>,
    /// When the outcome became known (wall clock).
    pub at: SystemTime,
}

impl ToolCallRecord {
    /// The record of `execution` entered at `site` under `call_id`, stamped now, with
    /// no latency yet.
    pub fn new(site: CallSite, call_id: Arc<str>, execution: ToolExecution) -> Self {
        ToolCallRecord {
            site,
            call_id,
            tool_name: execution.tool_name,
            tool_call_id: execution.tool_call_id,
            arguments: execution.arguments,
            latency_ms: None,
            at: SystemTime::now(),
        }
    }
}

/// A tool execution returned a result (graph-engine §6 `ToolCallEvent`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallEvent {
    /// Identity, tool name, ids, arguments and latency.
    pub call: ToolCallRecord,
    /// The tool's result as JSON (payload; renderers gate it, §5.5.4).
    pub result: Value,
}

impl ToolCallEvent {
    /// A success event.
    pub fn new(call: ToolCallRecord, result: Value) -> Self {
        ToolCallEvent { call, result }
    }
}

/// A tool execution failed (graph-engine §6 `ToolCallFailedEvent`). Deliberately no
/// error category: tool code has no closed failure taxonomy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallFailedEvent {
    /// Identity, tool name, ids, arguments and latency.
    pub call: ToolCallRecord,
    /// The error's type name (or a tool-defined code); `None` when unknown.
    pub error_type: Option<String>,
    /// The error's message (empty when it has none).
    pub error_message: String,
}

impl ToolCallFailedEvent {
    /// A failure event.
    pub fn new(call: ToolCallRecord, error_type: Option<String>, error_message: String) -> Self {
        ToolCallFailedEvent {
            call,
            error_type,
            error_message,
        }
    }
}
