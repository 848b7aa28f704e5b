//! Spec: graph-engine §6 *Tool-call instrumentation scope* as the observability
//! fixtures' `calls_tool` node directive (092–098, proposal 0063).
//!
//! `calls_tool: {tool_name, tool_call_id?, arguments?, mock_tool, stores_result_in?}`
//! — the node runs a mock tool inside the engine's scope:
//! - `mock_tool: {returns: <value>}` — the inline form ([`ToolScopeExt::instrument_tool`])
//!   wraps a tool returning `<value>`; `stores_result_in` receives it.
//! - `mock_tool: {raises: {error_type, message}}` — the start/complete form
//!   ([`ToolScopeExt::start_tool`]) reports the failure under the fixture's own
//!   `error_type` name (a Python exception class), then the node raises.
//!
//! The node's other directives run first; the tool runs after them.

use std::sync::Arc;

use openarmature_graph::{DynState, DynUpdate, Node, NodeCtx, NodeError};
use openarmature_llm::{ToolExecution, ToolScopeExt};
use serde_json::Value;

use crate::shared::{Around, AroundNode};
use crate::yaml::Y;
use crate::AdapterError;

/// The directive's key.
pub(crate) const KEY: &str = "calls_tool";

/// What the mock tool does.
enum MockTool {
    Returns(Value),
    Raises { error_type: String, message: String },
}

struct ToolNode {
    inner: Arc<dyn Node<DynState>>,
    execution: ToolExecution,
    mock: Arc<MockTool>,
    stores_result_in: Option<String>,
}

/// Wraps `node` with its `calls_tool` directive, if it has one.
pub(crate) fn wrap(
    spec: &Y<'_>,
    node: Arc<dyn Node<DynState>>,
) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
    let Some(tool) = spec.get(KEY) else {
        return Ok(node);
    };
    tool.check_keys(&[
        "tool_name",
        "tool_call_id",
        "arguments",
        "mock_tool",
        "stores_result_in",
    ])?;
    let mut execution = ToolExecution::new(tool.req("tool_name")?.str()?);
    if let Some(id) = tool.get("tool_call_id").filter(|y| !y.is_null()) {
        execution = execution.tool_call_id(id.str()?);
    }
    if let Some(args) = tool.get("arguments").filter(|y| !y.is_null()) {
        execution = execution.arguments(args.json()?);
    }
    let mock = tool.req("mock_tool")?;
    mock.check_keys(&["returns", "raises"])?;
    let mock = match (mock.get("returns"), mock.get("raises")) {
        (Some(value), None) => MockTool::Returns(value.json()?),
        (None, Some(raise)) => {
            raise.check_keys(&["error_type", "message"])?;
            MockTool::Raises {
                error_type: raise.req("error_type")?.str()?.to_owned(),
                message: raise.req("message")?.str()?.to_owned(),
            }
        }
        _ => return Err(mock.invalid("mock_tool needs exactly one of `returns` / `raises`")),
    };
    let stores_result_in = tool
        .get("stores_result_in")
        .map(|y| y.str().map(str::to_owned))
        .transpose()?;
    Ok(Around::node(ToolNode {
        inner: node,
        execution,
        mock: Arc::new(mock),
        stores_result_in,
    }))
}

/// The mock tool's failure: its message, under the fixture's error type name.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct MockToolError {
    message: String,
}

impl openarmature_graph::Categorized for MockToolError {}

impl AroundNode for ToolNode {
    fn inner(&self) -> &Arc<dyn Node<DynState>> {
        &self.inner
    }

    async fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> Result<DynUpdate, NodeError> {
        let mut update = self.inner.run(state, ctx.clone()).await?;
        let result = match &*self.mock {
            MockTool::Returns(value) => {
                let tool = std::future::ready(Ok::<_, MockToolError>(value.clone()));
                ctx.instrument_tool(self.execution.clone(), tool).await?
            }
            MockTool::Raises {
                error_type,
                message,
            } => {
                let scope = ctx.start_tool(self.execution.clone());
                scope.fail(Some(error_type), message.clone());
                return Err(NodeError::from(MockToolError {
                    message: message.clone(),
                }));
            }
        };
        if let Some(field) = &self.stores_result_in {
            update = update.set(field.as_str(), result);
        }
        Ok(update)
    }
}
