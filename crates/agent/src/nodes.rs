//! Spec: graph-engine §6 *Tool-call instrumentation scope* (one scope per tool call);
//! suspension §3 (`mark_node_completed = false`: the tools node re-enters on resume).
//!
//! The loop's two node bodies (model call, one tool call) and its routing.
//!
//! The tools node runs **one** pending tool call per step and routes back to itself
//! while calls remain. Each result is committed to the state before the next call
//! starts, so a call that suspends for approval loses nothing: on resume the node runs
//! again (`OnResume::RerunNode`) and the first pending call is the suspended one;
//! calls that already ran have their results in the history and are not run again.

use std::sync::Arc;

use openarmature_graph::{Categorized, NodeCtx, NodeError};
use openarmature_llm::{CompletionRequest, Message, ToolCall, ToolExecution, ToolScopeExt};
use serde_json::Value;

use crate::agent::AgentInner;
use crate::ctx::ToolCtx;
use crate::error::{AgentError, ToolError};
use crate::state::{AgentState, AgentUpdate};

/// The next tool call of the latest assistant message that has no result yet.
/// Results are matched by position (the tools node appends them in call order);
/// a user message after the assistant message abandons its calls.
pub(crate) fn pending_call(messages: &[Message]) -> Option<&ToolCall> {
    let at = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))?;
    let Message::Assistant(assistant) = &messages[at] else {
        return None;
    };
    let after = &messages[at + 1..];
    if after.iter().any(|m| matches!(m, Message::User(_))) {
        return None;
    }
    let answered = after
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count();
    assistant.tool_calls.get(answered)
}

/// Model calls since the last user message (the turns of the current request).
pub(crate) fn turns_taken(messages: &[Message]) -> u32 {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, Message::User(_)))
        .map_or(0, |i| i + 1);
    let turns = messages[start..]
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count();
    u32::try_from(turns).unwrap_or(u32::MAX)
}

/// The model node: one `complete()` call with the agent's tools; appends the reply.
pub(crate) async fn model_step<S: AgentState>(
    inner: Arc<AgentInner>,
    state: Arc<S>,
    ctx: NodeCtx,
) -> Result<S::Update, NodeError> {
    let history = state.messages();
    if turns_taken(history) >= inner.max_turns {
        return Err(AgentError::TurnLimitExceeded {
            max_turns: inner.max_turns,
        }
        .into());
    }
    let mut messages = Vec::with_capacity(history.len() + 1);
    if let Some(system) = &inner.system {
        if !matches!(history.first(), Some(Message::System(_))) {
            messages.push(Message::system(system.clone()));
        }
    }
    messages.extend(history.iter().cloned());
    let mut request = CompletionRequest::new(messages)
        .tools(inner.definitions.clone())
        .config(inner.config.clone())
        .stream(inner.stream)
        .in_node(&ctx);
    if let Some(retry) = &inner.retry {
        request = request.retry(retry.clone());
    }
    let response = inner.provider.complete(&request).await?;
    Ok(S::agent_update(AgentUpdate {
        messages: vec![Message::Assistant(response.message)],
        clear_approval: false,
    }))
}

/// The tools node: runs the first pending tool call and appends its result.
pub(crate) async fn tools_step<S: AgentState>(
    inner: Arc<AgentInner>,
    state: Arc<S>,
    ctx: NodeCtx,
) -> Result<S::Update, NodeError> {
    let Some(call) = pending_call(state.messages()) else {
        return Ok(S::agent_update(AgentUpdate::default()));
    };
    let approval = state.approval();
    let content = run_call(&inner, call, approval, &ctx).await?;
    Ok(S::agent_update(AgentUpdate {
        messages: vec![Message::tool(call.id.clone(), content)],
        clear_approval: approval.is_some(),
    }))
}

/// Runs one call inside a tool-call scope. Every outcome but a suspension becomes
/// the tool-result content; a suspension is returned for the node body to return.
async fn run_call(
    inner: &AgentInner,
    call: &ToolCall,
    approval: Option<&crate::Approval>,
    ctx: &NodeCtx,
) -> Result<String, NodeError> {
    let arguments = call.arguments.clone().map(Value::Object);
    let execution = ToolExecution::new(call.name.clone())
        .tool_call_id(call.id.clone())
        .arguments(arguments.clone().unwrap_or(Value::Null));
    let scope = ctx.start_tool(execution);
    let outcome = match (inner.tool(&call.name), arguments) {
        (None, _) => Err(ToolError::UnknownTool {
            tool: call.name.clone(),
            available: inner.tool_names(),
        }),
        (Some(tool), None) => Err(ToolError::InvalidArguments {
            tool: tool.name().to_owned(),
            message: "the arguments were not a valid JSON object".to_owned(),
        }),
        (Some(tool), Some(args)) => {
            let tool_ctx = ToolCtx::new(ctx.clone(), tool.name(), &call.id, args.clone(), approval);
            tool.call(args, tool_ctx).await
        }
    };
    match outcome {
        Ok(value) => {
            scope.complete(&value);
            Ok(match value {
                Value::String(text) => text,
                other => other.to_string(),
            })
        }
        Err(ToolError::Suspended(suspension)) => {
            // No outcome yet: the scope reports nothing for the suspended attempt.
            drop(scope);
            Err(suspension)
        }
        Err(error) => {
            let category = error.category().map(|c| c.as_str());
            scope.fail(category, error.to_string());
            Ok(error.to_tool_content())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "t", Map::new())
    }

    #[test]
    fn pending_calls_are_matched_by_position_and_abandoned_by_a_user_message() {
        let mut history = vec![
            Message::user("go"),
            Message::assistant_tool_calls(vec![call("a"), call("b")]),
        ];
        assert_eq!(pending_call(&history).map(|c| c.id.as_str()), Some("a"));
        history.push(Message::tool("a", "1"));
        assert_eq!(pending_call(&history).map(|c| c.id.as_str()), Some("b"));
        history.push(Message::tool("b", "2"));
        assert!(pending_call(&history).is_none());
        assert_eq!(turns_taken(&history), 1);
        history.truncate(3);
        history.push(Message::user("never mind"));
        assert!(pending_call(&history).is_none());
        assert_eq!(turns_taken(&history), 0);
    }
}
