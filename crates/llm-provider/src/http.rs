//! Spec: llm-provider §8 (transport shared by the wire mappings), §8.X.4 (no
//! serialization layer) and §7 (transport failures are `provider_unavailable`).
//!
//! The HTTP plumbing every §8.x mapping (OpenAI, Anthropic, Gemini) uses: building
//! the reqwest (rustls) client from the builder options, sending one request and
//! reading its body under a size cap ([`execute`], or [`start`] then [`read`]; a
//! streaming mapping reads a successful answer incrementally itself and applies the
//! same cap to the whole stream). A successful body over the cap is
//! `provider_invalid_response` (a hostile server cannot exhaust memory); an error
//! body is truncated at the cap and still classified by its status.

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::error::LlmError;

/// The client options the provider builders share.
#[derive(Clone)]
pub(crate) struct ClientOptions {
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Option<Duration>,
    pub(crate) no_proxy: bool,
    pub(crate) client: Option<reqwest::Client>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            read_timeout: None,
            no_proxy: false,
            client: None,
        }
    }
}

impl ClientOptions {
    /// The caller's client, or one built from these options.
    ///
    /// # Errors
    /// `provider_invalid_request` when the client cannot be built.
    pub(crate) fn build(self) -> Result<reqwest::Client, LlmError> {
        if let Some(client) = self.client {
            return Ok(client);
        }
        let mut builder = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .user_agent(concat!("openarmature-rust/", env!("CARGO_PKG_VERSION")));
        if let Some(read) = self.read_timeout {
            builder = builder.read_timeout(read);
        }
        if self.no_proxy {
            builder = builder.no_proxy();
        }
        builder.build().map_err(|e| {
            LlmError::invalid_request(format!("cannot build the HTTP client: {e}")).with_source(e)
        })
    }
}

/// The transport setters every provider builder offers, over its `http:
/// ClientOptions` and `max_response_bytes` fields (expanded inside the builder's
/// `impl` block).
macro_rules! transport_options {
    () => {
        /// The whole-request deadline, body included (default 300 s; for a stream,
        /// the whole stream).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.timeout = timeout;
            self
        }

        /// The connection deadline (default 10 s).
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.connect_timeout = timeout;
            self
        }

        /// The longest silence between body reads (default: none beyond `timeout`).
        pub fn read_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.read_timeout = Some(timeout);
            self
        }

        /// The response size cap (default
        /// [`DEFAULT_MAX_RESPONSE_BYTES`](crate::openai::DEFAULT_MAX_RESPONSE_BYTES)).
        pub fn max_response_bytes(mut self, bytes: usize) -> Self {
            self.max_response_bytes = bytes;
            self
        }

        /// Ignores proxy environment variables (e.g. for a server on loopback).
        pub fn no_proxy(mut self) -> Self {
            self.http.no_proxy = true;
            self
        }

        /// Uses a caller-configured HTTP client; the timeout and proxy options of this
        /// builder are then ignored.
        pub fn http_client(mut self, client: reqwest::Client) -> Self {
            self.http.client = Some(client);
            self
        }
    };
}
pub(crate) use transport_options;

/// Checks that `base` (trailing slashes removed) is an `http(s)` URL and returns it
/// as text, ready for `format!("{base}/path")`.
///
/// # Errors
/// `provider_invalid_request` otherwise.
pub(crate) fn base_url(base: &str) -> Result<String, LlmError> {
    parse_base_url(base).map(|_| base.trim_end_matches('/').to_owned())
}

/// Checks that `base` (trailing slashes removed) is an `http(s)` URL and returns it
/// parsed, for a mapping that appends path segments.
///
/// # Errors
/// `provider_invalid_request` otherwise.
pub(crate) fn parse_base_url(base: &str) -> Result<reqwest::Url, LlmError> {
    let base = base.trim_end_matches('/');
    let url = reqwest::Url::parse(base).map_err(|e| {
        LlmError::invalid_request(format!("invalid base URL `{base}`: {e}")).with_source(e)
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LlmError::invalid_request(format!(
            "base URL `{base}` must be http or https"
        )));
    }
    Ok(url)
}

/// A status line, headers and a (capped) body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    /// A 2xx status.
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends the request and reads the answer, capping the body at `cap` bytes.
///
/// # Errors
/// `provider_unavailable` for a transport failure; `provider_invalid_response` for
/// a successful body over the cap.
pub(crate) async fn execute(
    builder: reqwest::RequestBuilder,
    cap: usize,
) -> Result<Reply, LlmError> {
    read(start(builder).await?, cap).await
}

/// Sends the request; the answer's body is not read yet (a streaming mapping
/// consumes it incrementally, or hands an error answer to [`read`]).
///
/// # Errors
/// `provider_unavailable` for a transport failure.
pub(crate) async fn start(builder: reqwest::RequestBuilder) -> Result<reqwest::Response, LlmError> {
    builder.send().await.map_err(transport_error)
}

/// Reads an answer's body, capping it at `cap` bytes.
///
/// # Errors
/// `provider_unavailable` for a broken successful body; `provider_invalid_response`
/// for a successful body over the cap.
pub(crate) async fn read(mut response: reqwest::Response, cap: usize) -> Result<Reply, LlmError> {
    let status = response.status().as_u16();
    let success = (200..300).contains(&status);
    // Moved out, not cloned: reading the body does not need them.
    let headers = std::mem::take(response.headers_mut());
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

/// A successful body (or a whole stream) over the cap: `provider_invalid_response`.
pub(crate) fn too_large(cap: usize) -> LlmError {
    LlmError::invalid_response(format!("response body exceeds the {cap}-byte limit"))
}

/// A transport failure (connect, timeout, broken body): `provider_unavailable`.
pub(crate) fn transport_error(e: reqwest::Error) -> LlmError {
    let what = if e.is_timeout() {
        "request timed out"
    } else if e.is_connect() {
        "cannot connect to the provider"
    } else {
        "transport error"
    };
    LlmError::unavailable(format!("{what}: {e}")).with_source(e)
}
