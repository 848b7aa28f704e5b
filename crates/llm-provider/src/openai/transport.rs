//! Spec: llm-provider §8.1 (transport), §8.1.3 (errors are classified by status) —
//! sending a request and reading its answer with a size cap.
//!
//! Connection failures and timeouts are `provider_unavailable`; a successful body over
//! the cap is `provider_invalid_response`; an error body is truncated at the cap and
//! classified by its status even when it breaks off.

use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION};

use super::OpenAiProvider;
use crate::error::LlmError;

/// A status line, headers and a (capped) body.
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    pub(super) body: Vec<u8>,
}

impl OpenAiProvider {
    fn with_auth(&self, builder: reqwest::RequestBuilder, accept: &str) -> reqwest::RequestBuilder {
        let builder = builder.header(ACCEPT, accept);
        match &self.api_key {
            Some(key) => builder.header(AUTHORIZATION, format!("Bearer {key}")),
            None => builder,
        }
    }

    /// Sends the request; the answer's body is not read yet.
    pub(super) async fn start(
        &self,
        builder: reqwest::RequestBuilder,
        accept: &str,
    ) -> Result<reqwest::Response, LlmError> {
        self.with_auth(builder, accept)
            .send()
            .await
            .map_err(transport_error)
    }

    /// Sends and reads the answer, capping the body.
    pub(super) async fn execute(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<Reply, LlmError> {
        let response = self.start(builder, "application/json").await?;
        self.read(response).await
    }

    /// Reads an answer's body, capped.
    pub(super) async fn read(&self, mut response: reqwest::Response) -> Result<Reply, LlmError> {
        let status = response.status().as_u16();
        let success = (200..300).contains(&status);
        // Moved out, not cloned: reading the body does not need them.
        let headers = std::mem::take(response.headers_mut());
        let cap = self.max_response_bytes;
        let declared = response.content_length();
        if success && declared.is_some_and(|n| n > cap as u64) {
            return Err(too_large(cap));
        }
        // Sized from the declared length, bounded so a lying header costs nothing.
        let hint = declared.map_or(0, |n| {
            usize::try_from(n).unwrap_or(cap).min(cap).min(64 * 1024)
        });
        let mut body = Vec::with_capacity(hint);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > cap {
                        if success {
                            return Err(too_large(cap));
                        }
                        let room = cap - body.len();
                        body.extend_from_slice(&chunk[..room.min(chunk.len())]);
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                // An error status is classified by its status even if its body broke.
                Err(_) if !success => break,
                Err(e) => return Err(transport_error(e)),
            }
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

fn too_large(cap: usize) -> LlmError {
    LlmError::invalid_response(format!("response body exceeds the {cap}-byte limit"))
}

/// A reqwest failure as `provider_unavailable`.
pub(super) fn transport_error(e: reqwest::Error) -> LlmError {
    let what = if e.is_timeout() {
        "request timed out"
    } else if e.is_connect() {
        "cannot connect to the provider"
    } else {
        "transport error"
    };
    LlmError::unavailable(format!("{what}: {e}")).with_source(e)
}
