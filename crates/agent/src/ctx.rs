//! Spec: suspension §3 / §4 — what a running tool sees, and how it asks a person for
//! approval by suspending the invocation.

use openarmature_graph::suspension::{suspend_with, OnResume, SignalDescriptor};
use openarmature_graph::NodeCtx;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::state::Approval;

/// The metadata of the signal an approval suspension awaits
/// ([`SignalDescriptor::metadata`]): what a reviewer needs to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Always `"tool_approval"`.
    pub kind: String,
    /// The tool call awaiting a decision (answer with [`Approval::approve`] /
    /// [`Approval::deny`] for this id).
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments the model passed.
    pub arguments: Value,
    /// Why the tool asks, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalRequest {
    /// The `kind` value.
    pub const KIND: &'static str = "tool_approval";

    /// Reads the request back from a suspension's descriptor; `None` when the
    /// descriptor is not an agent approval request.
    pub fn from_descriptor(descriptor: &SignalDescriptor) -> Option<ApprovalRequest> {
        let request: ApprovalRequest = descriptor.metadata_as()?.ok()?;
        (request.kind == Self::KIND).then_some(request)
    }
}

/// The signal id an approval suspension for `tool_call_id` awaits.
pub fn approval_signal_id(tool_call_id: &str) -> String {
    format!("agent-approval:{tool_call_id}")
}

/// What a tool handler receives besides its arguments.
#[derive(Clone)]
pub struct ToolCtx {
    node: NodeCtx,
    tool: String,
    tool_call_id: String,
    arguments: Value,
    approval: Option<Approval>,
}

impl std::fmt::Debug for ToolCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCtx")
            .field("tool", &self.tool)
            .field("tool_call_id", &self.tool_call_id)
            .field("approval", &self.approval)
            .finish_non_exhaustive()
    }
}

impl ToolCtx {
    /// The context for one call; `approval` is the decision in the state, kept only
    /// when it is for this call.
    pub(crate) fn new(
        node: NodeCtx,
        tool: &str,
        tool_call_id: &str,
        arguments: Value,
        approval: Option<&Approval>,
    ) -> Self {
        ToolCtx {
            node,
            tool: tool.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            arguments,
            approval: approval.filter(|a| a.tool_call_id == tool_call_id).cloned(),
        }
    }

    /// The tools node's context (invocation id, observers, call site).
    pub fn node(&self) -> &NodeCtx {
        &self.node
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// The model's id for this call.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The arguments the model passed (already checked against the schema).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The reviewer's decision on this call, when a resume delivered one.
    pub fn approval(&self) -> Option<&Approval> {
        self.approval.as_ref()
    }

    /// Asks a person to approve this call before the tool goes on.
    ///
    /// On the first run it suspends the invocation, awaiting the signal
    /// [`approval_signal_id`] with an [`ApprovalRequest`] as metadata; return the
    /// error with `?`. The tools node runs again on resume (the payload is
    /// [`Approval::payload_for`]): then this returns `Ok(())` when approved and
    /// [`ToolError::Denied`] when denied. Call it before any side effect: the tool
    /// body runs again from the start on resume.
    ///
    /// # Errors
    /// [`ToolError::Suspended`] (awaiting the decision) or [`ToolError::Denied`].
    pub fn require_approval(&self, reason: Option<&str>) -> Result<(), ToolError> {
        match &self.approval {
            Some(decision) if decision.approved => Ok(()),
            Some(decision) => Err(ToolError::Denied {
                tool: self.tool.clone(),
                reason: decision.reason.clone(),
            }),
            None => {
                let request = ApprovalRequest {
                    kind: ApprovalRequest::KIND.to_owned(),
                    tool_call_id: self.tool_call_id.clone(),
                    tool: self.tool.clone(),
                    arguments: self.arguments.clone(),
                    reason: reason.map(str::to_owned),
                };
                let metadata = serde_json::to_value(&request).unwrap_or(Value::Null);
                let descriptor = SignalDescriptor::new(approval_signal_id(&self.tool_call_id))
                    .with_metadata_value(metadata);
                match suspend_with::<()>(descriptor, OnResume::RerunNode) {
                    Err(suspension) => Err(ToolError::Suspended(suspension)),
                    Ok(()) => Ok(()),
                }
            }
        }
    }
}
