//! The adapter's errors and the categories they surface as.

use openarmature_core::{Categorized, Category};

/// A served graph without a Checkpointer: a durable invocation could not resume
/// where it stopped, so the worker refuses it (configuration error, not transient).
pub const RESTATE_NO_CHECKPOINTER: Category = Category::new("restate_no_checkpointer");

/// The Restate server (ingress or admin API) could not be reached, or answered with
/// a server error: retrying may succeed.
pub const RESTATE_UNAVAILABLE: Category = Category::transient("restate_unavailable");

/// The Restate server refused the request (4xx): the workflow is unknown, not
/// suspended, or the request is malformed.
pub const RESTATE_REQUEST_REJECTED: Category = Category::new("restate_request_rejected");

/// A dispatched fan-out instance named a fan-out the worker does not serve
/// (`Worker::fan_out` was not called for its path).
pub const RESTATE_FAN_OUT_UNKNOWN: Category = Category::new("restate_fan_out_unknown");

/// A signal named a signal id no paused invocation awaits (the harness's own
/// `harness_signal_correlation_failed`).
pub const HARNESS_SIGNAL_CORRELATION_FAILED: Category = Category::HARNESS_SIGNAL_CORRELATION_FAILED;

/// Why a Restate worker or client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestateError {
    /// The served graph has no Checkpointer (`GraphBuilder::checkpointer`).
    #[error("restate_no_checkpointer: the served graph registers no Checkpointer; a durable invocation needs one to resume where it stopped")]
    NoCheckpointer,
    /// The request did not reach Restate, or Restate answered 5xx.
    #[error("restate_unavailable: {operation} {url}: {message}")]
    Unavailable {
        /// What was asked (`submit`, `attach`, `signal`, `register`, ...).
        operation: &'static str,
        /// The URL.
        url: String,
        /// The transport's error or the server's answer.
        message: String,
    },
    /// Restate answered 4xx.
    #[error("restate_request_rejected: {operation} {url}: HTTP {status}: {body}")]
    Rejected {
        /// What was asked.
        operation: &'static str,
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's answer.
        body: String,
    },
    /// Restate's answer is not what the operation expects.
    #[error("restate_unavailable: {operation} {url}: unexpected answer: {reason}")]
    Malformed {
        /// What was asked.
        operation: &'static str,
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No paused invocation awaits the signal id.
    #[error("harness_signal_correlation_failed: no paused invocation awaits signal `{signal_id}`")]
    NoPausedInvocation {
        /// The signal id.
        signal_id: String,
    },
    /// The signal coordinator failed to resolve the signal id.
    #[error("harness_signal_correlation_failed: resolving signal `{signal_id}`: {source}")]
    Resolve {
        /// The signal id.
        signal_id: String,
        /// The coordinator's error.
        #[source]
        source: openarmature_graph::BoxError,
    },
}

impl RestateError {
    /// The category (see the constants of this module).
    pub fn category(&self) -> Category {
        match self {
            RestateError::NoCheckpointer => RESTATE_NO_CHECKPOINTER,
            RestateError::Unavailable { .. } | RestateError::Malformed { .. } => {
                RESTATE_UNAVAILABLE
            }
            RestateError::Rejected { .. } => RESTATE_REQUEST_REJECTED,
            RestateError::NoPausedInvocation { .. } | RestateError::Resolve { .. } => {
                HARNESS_SIGNAL_CORRELATION_FAILED
            }
        }
    }

    /// Whether retrying the same call may succeed.
    pub fn is_transient(&self) -> bool {
        self.category().is_transient()
    }
}

impl Categorized for RestateError {
    fn category(&self) -> Option<Category> {
        Some(RestateError::category(self))
    }
}
