//! The journaled outcome of one graph turn: what Restate stores for a `ctx.run` step,
//! so a replay after a crash reads it instead of running the turn again.

use openarmature_graph::suspension::SignalDescriptor;
use openarmature_harness::Outbound;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a turn of the served graph ended, as the workflow journals it and as its
/// `run` handler returns it (tagged by `shape`, the harness's outbound shapes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Step {
    /// `completion_response`: the graph reached `END`.
    CompletionResponse {
        /// The engine invocation that finished (a checkpoint-resumed run has its own
        /// id; the workflow's key stays the id the caller chose).
        invocation_id: String,
        /// The final state as JSON.
        state: Value,
    },
    /// `suspended_acknowledgment`: a node suspended; the workflow waits for the signal.
    SuspendedAcknowledgment {
        /// The paused engine invocation (the one a signal resumes).
        invocation_id: String,
        /// The awaited signal.
        descriptor: SignalDescriptor,
    },
    /// `error_response`: the turn failed. Final: Restate does not run it again (the
    /// graph's own retry lanes already ran); the payload is the harness's error payload
    /// (category, bucket, diagnostic message, flags).
    ErrorResponse {
        /// The harness's error payload.
        error: Value,
    },
}

impl Step {
    /// The step a harness outbound surface describes.
    pub fn of(outbound: &Outbound) -> Step {
        match outbound {
            Outbound::Completion {
                invocation_id,
                state,
            } => Step::CompletionResponse {
                invocation_id: invocation_id.clone(),
                state: state.clone(),
            },
            Outbound::Suspended {
                invocation_id,
                descriptor,
            } => Step::SuspendedAcknowledgment {
                invocation_id: invocation_id.clone(),
                descriptor: descriptor.clone(),
            },
            other => Step::ErrorResponse {
                error: other.payload(),
            },
        }
    }

    /// The final state of a completion.
    pub fn state(&self) -> Option<&Value> {
        match self {
            Step::CompletionResponse { state, .. } => Some(state),
            _ => None,
        }
    }

    /// The error category of an error response.
    pub fn error_category(&self) -> Option<&str> {
        match self {
            Step::ErrorResponse { error } => error.get("category").and_then(Value::as_str),
            _ => None,
        }
    }
}
