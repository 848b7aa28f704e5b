//! Spec: observability §8.9 *Client ownership* — where finished traces go: a
//! caller-constructed client (mode a, any [`LangfuseClient`]) or one the observer
//! builds from credentials (mode b, [`super::IngestionClient`]).

use futures::future::BoxFuture;

use super::model::LangfuseTrace;

/// Why sending to Langfuse failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LangfuseError {
    /// The configured host is not a usable base URL.
    #[error("invalid Langfuse host `{0}`")]
    InvalidHost(String),
    /// The request could not be sent or its response not read.
    #[error("Langfuse ingestion request failed: {0}")]
    Transport(String),
    /// The ingestion API answered with a non-success status.
    #[error("Langfuse ingestion answered {status}: {body}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The response body (diagnostics).
        body: String,
    },
}

impl LangfuseError {
    /// A stable category string: `langfuse_invalid_host`, `langfuse_transport` or
    /// `langfuse_status`.
    pub fn category(&self) -> &'static str {
        match self {
            LangfuseError::InvalidHost(_) => "langfuse_invalid_host",
            LangfuseError::Transport(_) => "langfuse_transport",
            LangfuseError::Status { .. } => "langfuse_status",
        }
    }
}

/// A Langfuse client: receives every finished trace (with its observation tree) and
/// sends what it received on [`LangfuseClient::flush`].
///
/// Implement it to hand the observer a client you construct and own (§8.9 mode a):
/// the observer never reconfigures it.
pub trait LangfuseClient: Send + Sync + 'static {
    /// Receives one finished trace. Must not block (it runs on the observer's
    /// delivery path).
    fn record(&self, trace: &LangfuseTrace);

    /// Sends everything recorded so far. The default does nothing.
    ///
    /// # Errors
    /// A [`LangfuseError`] when the backend could not be reached or refused the batch.
    fn flush(&self) -> BoxFuture<'_, Result<(), LangfuseError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
