//! Spec: llm-provider §8 / retrieval-provider §8 (one request sent and its body read
//! under a size cap) and §7 (transport failures are `provider_unavailable`).
//!
//! A successful body over the cap is `provider_invalid_response`, so a hostile server
//! cannot exhaust memory; an error body is truncated at the cap and still classified by
//! its status. A streaming mapping reads a successful answer incrementally itself
//! ([`HttpClient::start`]) and applies the same cap to the whole stream.

use reqwest::header::HeaderMap;
use reqwest::{IntoUrl, RequestBuilder, Response};

use crate::TransportError;

/// A built [`Transport`](crate::Transport): the reqwest client and the response-size
/// cap. Cheap to clone (the client is reference-counted).
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    max_response_bytes: usize,
    /// A credential no body may carry back ([`HttpClient::redacting`]).
    secret: Option<Secret>,
}

/// A credential, redacted from every body read ([`HttpClient::redacting`]).
#[derive(Clone)]
struct Secret(std::sync::Arc<[u8]>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The shortest secret [`HttpClient::redacting`] redacts.
pub const MIN_REDACTED_LEN: usize = 8;

/// What replaces a redacted credential in a body.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces every occurrence of `secret` in `body` with [`REDACTED`].
fn redact(body: &mut Vec<u8>, secret: &[u8]) {
    if secret.is_empty() || body.len() < secret.len() {
        return;
    }
    let Some(first) = body.windows(secret.len()).position(|w| w == secret) else {
        return;
    };
    let mut out = Vec::with_capacity(body.len());
    out.extend_from_slice(&body[..first]);
    let mut rest = &body[first..];
    while !rest.is_empty() {
        if rest.starts_with(secret) {
            out.extend_from_slice(REDACTED.as_bytes());
            rest = &rest[secret.len()..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    *body = out;
}

/// A status line, headers and a (capped) body.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body, at most the cap (an error body truncated there).
    pub body: Vec<u8>,
}

impl Reply {
    /// An answer read some other way (a recorded or synthesized one), for the code
    /// that decodes replies.
    pub fn new(status: u16, headers: HeaderMap, body: Vec<u8>) -> Self {
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

impl HttpClient {
    pub(crate) fn new(client: reqwest::Client, max_response_bytes: usize) -> Self {
        HttpClient {
            client,
            max_response_bytes,
            secret: None,
        }
    }

    /// Redacts `secret` (the API key this client sends) from every body it reads,
    /// success or error, before anything parses it: a server that echoes the key (an
    /// "incorrect API key: sk-…" error, a proxy reflecting headers) cannot put it into
    /// error messages, spans, logs or captured payloads. A secret shorter than
    /// [`MIN_REDACTED_LEN`] bytes does nothing: no real credential is that short, and
    /// replacing every occurrence of a short string would corrupt ordinary bodies.
    #[must_use]
    pub fn redacting(mut self, secret: &str) -> Self {
        self.secret = (secret.len() >= MIN_REDACTED_LEN).then(|| Secret(secret.as_bytes().into()));
        self
    }

    /// The response-size cap in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// A `GET` of `url` on this client.
    pub fn get(&self, url: impl IntoUrl) -> RequestBuilder {
        self.client.get(url)
    }

    /// A `POST` to `url` on this client.
    pub fn post(&self, url: impl IntoUrl) -> RequestBuilder {
        self.client.post(url)
    }

    /// Sends the request and reads the answer, capping the body.
    ///
    /// # Errors
    /// `provider_unavailable` for a transport failure; `provider_invalid_response` for
    /// a successful body over the cap.
    pub async fn execute(&self, request: RequestBuilder) -> Result<Reply, TransportError> {
        self.read(self.start(request).await?).await
    }

    /// Sends the request; the answer's body is not read yet (a streaming mapping
    /// consumes it incrementally, or hands an error answer to [`HttpClient::read`]).
    ///
    /// # Errors
    /// `provider_unavailable` for a transport failure.
    pub async fn start(&self, request: RequestBuilder) -> Result<Response, TransportError> {
        Ok(request.send().await?)
    }

    /// Reads an answer's body, capping it.
    ///
    /// # Errors
    /// `provider_unavailable` for a broken successful body; `provider_invalid_response`
    /// for a successful body over the cap.
    pub async fn read(&self, mut response: Response) -> Result<Reply, TransportError> {
        let cap = self.max_response_bytes;
        let status = response.status().as_u16();
        let success = (200..300).contains(&status);
        // Moved out, not cloned: reading the body does not need them.
        let headers = std::mem::take(response.headers_mut());
        let declared = response.content_length();
        if success && declared.is_some_and(|n| n > cap as u64) {
            return Err(TransportError::too_large(cap));
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
                            return Err(TransportError::too_large(cap));
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
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(Secret(secret)) = &self.secret {
            redact(&mut body, secret);
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod redact_tests {
    use super::redact;

    #[test]
    fn every_occurrence_is_replaced_and_nothing_else_changes() {
        let mut body = b"key sk-1 and sk-1sk-1, not sk-2".to_vec();
        redact(&mut body, b"sk-1");
        assert_eq!(body, b"key [REDACTED] and [REDACTED][REDACTED], not sk-2");
        let mut clean = b"nothing here".to_vec();
        redact(&mut clean, b"sk-1");
        assert_eq!(clean, b"nothing here");
        let mut short = b"sk".to_vec();
        redact(&mut short, b"sk-1");
        assert_eq!(short, b"sk");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Transport;
    use openarmature_core::Category;
    use openarmature_testkit::{MockServer, Reply, Script};

    /// A server answering every request with the raw bytes `answer`; it stops
    /// when the returned server is dropped.
    async fn serve(answer: &'static [u8]) -> (MockServer, String) {
        let server = Script::always(Reply::Raw(answer.to_vec()))
            .start()
            .await
            .unwrap();
        let url = format!("{}/", server.origin());
        (server, url)
    }

    fn client(cap: usize) -> HttpClient {
        Transport::default().no_proxy().build(cap).unwrap()
    }

    #[tokio::test]
    async fn bodies_are_read_under_the_cap() {
        let (_server, url) = serve(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello").await;
        let reply = client(5).execute(client(5).get(&url)).await.unwrap();
        assert!(reply.is_success());
        assert_eq!(reply.body, b"hello");
        let over = client(4).execute(client(4).get(&url)).await.unwrap_err();
        assert_eq!(over.category(), Category::PROVIDER_INVALID_RESPONSE);
    }

    #[tokio::test]
    async fn an_error_body_is_truncated_and_kept() {
        let (_server, url) =
            serve(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 9\r\n\r\nmaintains").await;
        let reply = client(4).execute(client(4).get(&url)).await.unwrap();
        assert_eq!((reply.status, reply.body.as_slice()), (503, &b"main"[..]));
        assert!(!reply.is_success());
    }

    #[tokio::test]
    async fn a_refused_connection_is_unavailable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        drop(listener);
        let e = client(8).execute(client(8).get(&url)).await.unwrap_err();
        assert_eq!(e.category(), Category::PROVIDER_UNAVAILABLE);
        assert!(
            e.message().starts_with("cannot connect to the provider"),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
