//! Spec: llm-provider §8 (the HTTP exchange the three wire mappings share: the key in
//! the mapping's header, JSON requests under the response-size cap, the streamed
//! exchange of §8.1.6 / extension 0006).
//!
//! Each mapping's provider holds one [`WireClient`] by composition: the capped client,
//! the API key and the header it travels in, the mapping's fixed headers (Anthropic's
//! `anthropic-version`). What differs per mapping (the URLs, the body, the answer's
//! mapping) stays in the mapping's module.

use openarmature_http::{HttpClient, Reply, Transport};
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use crate::error::LlmError;
use crate::openai::DEFAULT_MAX_RESPONSE_BYTES;
use crate::sse::Assemble;
use crate::stream::DeltaSink;

/// A mapping's error mapper: a non-2xx answer's status, headers and body → its §7
/// error.
pub(crate) type ErrorMapper = fn(u16, &HeaderMap, &[u8]) -> LlmError;

const JSON: &str = "application/json";

/// A mapping's endpoint, parsed once when its provider is built: a request takes a
/// clone of the parsed URL instead of parsing the text again on every call.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint(reqwest::Url);

impl Endpoint {
    /// `url` parsed.
    ///
    /// # Errors
    /// `provider_invalid_request` when it is not an `http(s)` URL.
    pub(crate) fn new(url: &str) -> Result<Self, LlmError> {
        Ok(Endpoint(openarmature_http::parse_base_url(url)?))
    }

    /// The URL as text.
    pub(crate) fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// How a mapping sends its API key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI-compatible).
    Bearer,
    /// The key verbatim under this header (`x-api-key`, `x-goog-api-key`).
    Named(&'static str),
}

/// The transport half of a wire mapping's provider. `Debug` never prints the key.
#[derive(Clone)]
pub(crate) struct WireClient {
    /// The capped client (the key redacted from every body read).
    pub(crate) http: HttpClient,
    api_key: Option<String>,
    key_header: KeyHeader,
    /// Headers every request carries, in order.
    fixed: Vec<(&'static str, String)>,
}

impl std::fmt::Debug for WireClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireClient")
            .field("api_key", &self.key_shown())
            .field("max_response_bytes", &self.http.max_response_bytes())
            .finish_non_exhaustive()
    }
}

impl WireClient {
    /// A client over `transport` (cap default [`DEFAULT_MAX_RESPONSE_BYTES`]) sending
    /// `api_key` as `key_header` and the `fixed` headers on every request.
    ///
    /// # Errors
    /// `provider_invalid_request` when the HTTP client cannot be built.
    pub(crate) fn new(
        transport: Transport,
        api_key: Option<String>,
        key_header: KeyHeader,
        fixed: Vec<(&'static str, String)>,
    ) -> Result<Self, LlmError> {
        let http = transport
            .build(DEFAULT_MAX_RESPONSE_BYTES)?
            .redacting(api_key.as_deref().unwrap_or_default());
        Ok(WireClient {
            http,
            api_key,
            key_header,
            fixed,
        })
    }

    /// What `Debug` output shows for the key: `<redacted>` when one is set.
    pub(crate) fn key_shown(&self) -> Option<&'static str> {
        self.api_key.as_ref().map(|_| "<redacted>")
    }

    /// `builder` with `Accept: accept`, the fixed headers and the key.
    fn headers(&self, builder: reqwest::RequestBuilder, accept: &str) -> reqwest::RequestBuilder {
        let mut builder = builder.header(ACCEPT, accept);
        for (name, value) in &self.fixed {
            builder = builder.header(*name, value);
        }
        match (&self.api_key, self.key_header) {
            (Some(key), KeyHeader::Bearer) => {
                builder.header(AUTHORIZATION, format!("Bearer {key}"))
            }
            (Some(key), KeyHeader::Named(name)) => builder.header(name, key),
            (None, _) => builder,
        }
    }

    /// A JSON POST of `body` to `url`, not yet sent.
    fn post(&self, url: &Endpoint, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.http
            .post(url.0.clone())
            .header(CONTENT_TYPE, JSON)
            .body(body)
    }

    /// GETs `url` and reads the answer (capped).
    ///
    /// # Errors
    /// The transport's (`provider_unavailable`, `provider_invalid_response` over the
    /// cap).
    pub(crate) async fn get(&self, url: &Endpoint) -> Result<Reply, LlmError> {
        Ok(self
            .http
            .execute(self.headers(self.http.get(url.0.clone()), JSON))
            .await?)
    }

    /// POSTs the JSON `body` to `url` and reads the answer (capped).
    ///
    /// # Errors
    /// As [`WireClient::get`].
    pub(crate) async fn post_json(&self, url: &Endpoint, body: Vec<u8>) -> Result<Reply, LlmError> {
        Ok(self
            .http
            .execute(self.headers(self.post(url, body), JSON))
            .await?)
    }

    /// POSTs the JSON `body` to `url` for a Server-Sent Events answer: a non-2xx
    /// answer is `on_error`'s, a 2xx stream feeds `assembler` (deltas to `sink`).
    ///
    /// # Errors
    /// As [`crate::sse::exchange`].
    pub(crate) async fn post_stream(
        &self,
        url: &Endpoint,
        body: Vec<u8>,
        on_error: ErrorMapper,
        assembler: &mut dyn Assemble,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        let request = self.headers(self.post(url, body), "text/event-stream");
        crate::sse::exchange(&self.http, request, on_error, assembler, sink).await
    }

    /// A 2xx stream arriving in `pieces`, fed to `assembler` without a network (the
    /// providers' `decode_stream`).
    ///
    /// # Errors
    /// As [`crate::sse::decode`].
    pub(crate) fn decode(
        &self,
        pieces: &[&[u8]],
        assembler: &mut dyn Assemble,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        crate::sse::decode(pieces, self.http.max_response_bytes(), assembler, sink)
    }
}

/// `Ok` for a 2xx answer, else `on_error`'s error for it.
///
/// # Errors
/// The mapped error of a non-2xx answer.
pub(crate) fn success(reply: &Reply, on_error: ErrorMapper) -> Result<(), LlmError> {
    if reply.is_success() {
        Ok(())
    } else {
        Err(on_error(reply.status, &reply.headers, &reply.body))
    }
}
