//! Spec: retrieval-provider §8 (construction shared by the wire mappings: an API key,
//! an `http(s)` origin with the version in the route, one bound model per instance).
//!
//! [`Connect`] holds what every builder takes (model, key, origin, timeout, client);
//! [`Connect::open`] validates it into an [`Endpoint`], which sends the JSON
//! requests through [`crate::http`]. The [`connection_options!`] macro writes the
//! four shared builder setters once.

use std::time::Duration;

use serde_json::Value;

use crate::error::RetrievalError;
use crate::http;

/// The construction settings every provider builder shares.
#[derive(Clone)]
pub(crate) struct Connect {
    pub(crate) model: String,
    pub(crate) api_key: Option<String>,
    pub(crate) base_url: String,
    pub(crate) timeout: Duration,
    pub(crate) client: Option<reqwest::Client>,
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connect")
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Connect {
    /// Settings for `model` against `origin`, with the default 300 s timeout.
    pub(crate) fn new(model: String, origin: &str) -> Self {
        Connect {
            model,
            api_key: None,
            base_url: origin.to_owned(),
            timeout: Duration::from_secs(300),
            client: None,
        }
    }

    /// Validates the settings into an endpoint.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, or a client that cannot be built.
    pub(crate) fn open(self) -> Result<Endpoint, RetrievalError> {
        if self.model.is_empty() {
            return Err(RetrievalError::invalid_request("the bound model is empty"));
        }
        let base = http::base_url(&self.base_url)?;
        let client = match self.client {
            Some(c) => c,
            None => http::client(self.timeout)?,
        };
        Ok(Endpoint {
            model: self.model,
            api_key: self.api_key,
            base,
            client,
        })
    }
}

/// A validated provider endpoint: the bound model, the origin and the client.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) model: String,
    api_key: Option<String>,
    base: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("model", &self.model)
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// POSTs `body` to `{base}{route}` (errors as [`http::post_json`]).
    pub(crate) async fn post(&self, route: &str, body: &Value) -> Result<Value, RetrievalError> {
        let url = format!("{}{route}", self.base);
        http::post_json(&self.client, &url, self.api_key.as_deref(), body).await
    }

    /// GETs `{base}/v1/models/{model}`: the readiness probe of a wire with a model
    /// catalog (errors as [`http::get_json`]).
    pub(crate) async fn probe_model(&self) -> Result<(), RetrievalError> {
        self.probe(&format!("/v1/models/{}", self.model)).await
    }

    /// GETs `{base}{route}` and discards the answer: a readiness probe.
    pub(crate) async fn probe(&self, route: &str) -> Result<(), RetrievalError> {
        let url = format!("{}{route}", self.base);
        http::get_json(&self.client, &url, self.api_key.as_deref())
            .await
            .map(|_| ())
    }
}

/// The four builder setters every provider shares (`api_key`, `base_url`,
/// `timeout`, `client`), writing into the builder's `conn: Connect` field. The
/// argument names the default origin in the `base_url` docs.
macro_rules! connection_options {
    ($origin:literal) => {
        /// The API key, sent as `Authorization: Bearer <key>`.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.conn.api_key = Some(key.into());
            self
        }

        #[doc = concat!("The server origin (default `", $origin, "`); a version prefix stays in the route.")]
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.conn.base_url = url.into();
            self
        }

        /// The whole-request timeout (default 300 s).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.conn.timeout = timeout;
            self
        }

        /// Uses the caller's reqwest client instead of building one (the timeout is
        /// then the client's).
        pub fn client(mut self, client: reqwest::Client) -> Self {
            self.conn.client = Some(client);
            self
        }
    };
}
pub(crate) use connection_options;

/// The `model()` / `provider_name()` pair of a provider holding an `endpoint`,
/// written once for every `EmbeddingProvider` / `RerankProvider` impl.
macro_rules! endpoint_identity {
    ($system:expr) => {
        fn model(&self) -> &str {
            &self.endpoint.model
        }

        fn provider_name(&self) -> &str {
            $system
        }
    };
}
pub(crate) use endpoint_identity;

/// The `send()` of a `RerankProvider` whose one call is its `call(&RerankRequest)`
/// method.
macro_rules! rerank_send_via_call {
    () => {
        fn send<'a>(
            &'a self,
            request: &'a crate::rerank::RerankRequest,
        ) -> futures::future::BoxFuture<
            'a,
            Result<crate::rerank::RerankResponse, crate::error::RetrievalError>,
        > {
            Box::pin(self.call(request))
        }
    };
}
pub(crate) use rerank_send_via_call;

/// The `send()` of an `EmbeddingProvider` whose requests are its
/// `chunk(&[String], &EmbeddingConfig)` method: `chunk_size` splits by the
/// provider's `chunk_size` field (§8 *Batch chunking*), `whole` sends one request
/// (a provider that batches server-side).
macro_rules! embed_send_via_chunks {
    (chunk_size) => {
        crate::endpoint::embed_send_via_chunks!(@ |this, _input| this.chunk_size);
    };
    (whole) => {
        crate::endpoint::embed_send_via_chunks!(@ |_this, input| input.len());
    };
    (@ |$this:ident, $input:ident| $size:expr) => {
        fn send<'a>(
            &'a self,
            input: &'a [String],
            config: &'a crate::embedding::EmbeddingConfig,
        ) -> futures::future::BoxFuture<
            'a,
            Result<crate::embedding::EmbeddingResponse, crate::error::RetrievalError>,
        > {
            let size = {
                let ($this, $input) = (self, input);
                $size
            };
            Box::pin(crate::stitch::embed_in_chunks(
                input,
                size,
                &self.endpoint.model,
                move |chunk| self.chunk(chunk, config),
            ))
        }
    };
}
pub(crate) use embed_send_via_chunks;
