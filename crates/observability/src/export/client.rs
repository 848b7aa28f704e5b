//! The HTTP client OTLP/HTTP export sends through (feature `otlp-http`).
//!
//! [`ReqwestBlockingClient`] implements OpenTelemetry's
//! [`HttpClient`](opentelemetry_http::HttpClient) over the same reqwest the LLM and
//! retrieval providers use (one reqwest in the build), as a blocking client: export
//! runs on the batch processor's (or periodic reader's) own thread, where no async
//! runtime is running. Bring your own with
//! [`OtlpExport::reqwest_client`](super::OtlpExport::reqwest_client) (a configured
//! `reqwest::blocking::Client`: proxy, TLS roots, middleware-free headers) or any
//! `HttpClient` with [`OtlpExport::http_client`](super::OtlpExport::http_client).

use std::future::Future;
use std::io::Read;
use std::pin::Pin;
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The largest OTLP response body read back (a collector answers with a short
/// status message; anything past this is an error, not buffered).
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// An OTLP/HTTP client over a `reqwest::blocking::Client`.
#[derive(Debug, Clone)]
pub struct ReqwestBlockingClient {
    client: reqwest::blocking::Client,
}

impl ReqwestBlockingClient {
    /// Wraps a caller-configured blocking client.
    pub fn new(client: reqwest::blocking::Client) -> Self {
        ReqwestBlockingClient { client }
    }

    /// A default client with a per-request `timeout`. Built on a thread of its own:
    /// a blocking reqwest client cannot be built inside an async runtime, and the
    /// exporter may be built in one.
    ///
    /// # Errors
    /// What reqwest reports when the client cannot be built.
    pub fn with_timeout(timeout: Duration) -> Result<Self, String> {
        let built = std::thread::Builder::new()
            .name("openarmature-otlp-client".into())
            .spawn(move || {
                reqwest::blocking::Client::builder()
                    .timeout(timeout)
                    .build()
            })
            .map_err(|e| format!("cannot spawn the thread building the HTTP client: {e}"))?
            .join()
            .map_err(|_| "the thread building the HTTP client panicked".to_owned())?;
        built
            .map(ReqwestBlockingClient::new)
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }

    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
        let response = self
            .client
            .execute(reqwest::blocking::Request::try_from(request)?)?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        response
            .take(MAX_RESPONSE_BYTES + 1)
            .read_to_end(&mut body)?;
        if body.len() as u64 > MAX_RESPONSE_BYTES {
            return Err(
                format!("the OTLP response body exceeds {MAX_RESPONSE_BYTES} bytes").into(),
            );
        }
        let mut out = Response::builder().status(status).body(Bytes::from(body))?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}

impl HttpClient for ReqwestBlockingClient {
    fn send_bytes<'s, 'f>(
        &'s self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'f>>
    where
        's: 'f,
        Self: 'f,
    {
        // The exporter polls this on its own thread (`futures::executor::block_on`):
        // blocking there is what the blocking client is for.
        Box::pin(std::future::ready(self.send(request)))
    }
}
