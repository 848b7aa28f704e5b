//! Spec: llm-provider §8 / retrieval-provider §8 (the transport options every wire
//! mapping's builder takes).

use std::time::Duration;

use crate::{HttpClient, TransportError};

/// How a provider reaches its server: the reqwest (rustls) client options and the
/// response-size cap, or a caller-configured [`reqwest::Client`].
///
/// Every provider builder of `openarmature-llm` and `openarmature-retrieval` holds one
/// (`builder(..).transport(Transport::default().timeout(..))`, or
/// `builder.transport_mut()`); [`Transport::build`] is what the builder's `build()`
/// calls. Cheap to clone.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use openarmature_http::Transport;
///
/// // Options for a client the transport builds:
/// let local = Transport::default().no_proxy().read_timeout(Duration::from_secs(30));
/// // Or the caller's own client (its timeouts and proxy settings are the client's):
/// let own = reqwest::Client::builder().https_only(true).build()?;
/// let shared = Transport::default().client(own).max_response_bytes(1 << 20);
/// assert_eq!(shared.build(8 << 20)?.max_response_bytes(), 1 << 20);
/// # let _ = local;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Transport {
    timeout: Duration,
    connect_timeout: Duration,
    read_timeout: Option<Duration>,
    no_proxy: bool,
    max_response_bytes: Option<usize>,
    client: Option<reqwest::Client>,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            timeout: Transport::DEFAULT_TIMEOUT,
            connect_timeout: Transport::DEFAULT_CONNECT_TIMEOUT,
            read_timeout: None,
            no_proxy: false,
            max_response_bytes: None,
            client: None,
        }
    }
}

impl Transport {
    /// The default whole-request deadline (300 s).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// The default connection deadline (10 s).
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The whole-request deadline, body included (default 300 s; for a streamed LLM
    /// call, the whole stream).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The connection deadline (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest silence between body reads (default: none beyond `timeout`); bounds
    /// a long generation's stalls without bounding its length.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = Some(timeout);
        self
    }

    /// Ignores the proxy environment variables (e.g. for a server on loopback).
    pub fn no_proxy(mut self) -> Self {
        self.no_proxy = true;
        self
    }

    /// The response-size cap in bytes (default: the provider's own, e.g. 8 MiB for the
    /// LLM providers, 64 MiB for the embedding and rerank providers). It also applies
    /// to a caller-supplied client.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = Some(bytes);
        self
    }

    /// Uses a caller-configured client (a custom resolver, TLS roots, connection pool
    /// shared with other code, ...). The timeout, connect-timeout, read-timeout and
    /// proxy options of this transport are then ignored: they are the client's.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// The client these options describe, capped at the configured size or, when none
    /// is configured, at `default_max_response_bytes`.
    ///
    /// # Errors
    /// `provider_invalid_request` when the client cannot be built.
    pub fn build(&self, default_max_response_bytes: usize) -> Result<HttpClient, TransportError> {
        let max_response_bytes = self
            .max_response_bytes
            .unwrap_or(default_max_response_bytes);
        if let Some(client) = &self.client {
            return Ok(HttpClient::new(client.clone(), max_response_bytes));
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
        let client = builder.build().map_err(|e| {
            TransportError::invalid_request(format!("cannot build the HTTP client: {e}"), e)
        })?;
        Ok(HttpClient::new(client, max_response_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_falls_back_to_the_providers_default() {
        let default = Transport::default()
            .build(64)
            .ok()
            .map(|c| c.max_response_bytes());
        assert_eq!(default, Some(64));
        let set = Transport::default()
            .max_response_bytes(16)
            .build(64)
            .ok()
            .map(|c| c.max_response_bytes());
        assert_eq!(set, Some(16));
        let own = reqwest::Client::new();
        let supplied = Transport::default()
            .client(own)
            .max_response_bytes(8)
            .build(64)
            .ok()
            .map(|c| c.max_response_bytes());
        assert_eq!(supplied, Some(8));
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let t = Transport::default();
        assert_eq!(t.timeout, Duration::from_secs(300));
        assert_eq!(t.connect_timeout, Duration::from_secs(10));
        assert_eq!((t.read_timeout, t.no_proxy), (None, false));
        let t = t
            .timeout(Duration::from_secs(1))
            .connect_timeout(Duration::from_secs(2))
            .read_timeout(Duration::from_secs(3))
            .no_proxy();
        assert_eq!(
            (t.timeout, t.connect_timeout, t.read_timeout, t.no_proxy),
            (
                Duration::from_secs(1),
                Duration::from_secs(2),
                Some(Duration::from_secs(3)),
                true
            )
        );
    }
}
