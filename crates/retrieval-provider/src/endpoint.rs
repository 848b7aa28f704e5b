//! Spec: retrieval-provider §8 (construction shared by the wire mappings: an API key,
//! an `http(s)` origin with the version in the route, one bound model per instance).
//!
//! [`Connect`] holds what every builder takes (model, key, origin, transport);
//! [`Connect::open`] validates it into an [`Endpoint`], which sends the JSON requests
//! through [`crate::http`] over the shared `openarmature-http` transport.

use openarmature_http::{HttpClient, Transport};
use serde_json::Value;

use crate::error::RetrievalError;
use crate::http;

/// The construction settings every provider builder shares.
#[derive(Clone)]
pub(crate) struct Connect {
    pub(crate) model: String,
    pub(crate) api_key: Option<String>,
    pub(crate) base_url: String,
    pub(crate) transport: Transport,
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connect")
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("transport", &self.transport)
            .finish()
    }
}

impl Connect {
    /// Settings for `model` against `origin`, with the default transport.
    pub(crate) fn new(model: String, origin: &str) -> Self {
        Connect {
            model,
            api_key: None,
            base_url: origin.to_owned(),
            transport: Transport::default(),
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
        Ok(Endpoint {
            base: openarmature_http::base_url(&self.base_url)?,
            http: self
                .transport
                .build(http::DEFAULT_MAX_RESPONSE_BYTES)?
                .redacting(self.api_key.as_deref().unwrap_or_default()),
            model: self.model,
            api_key: self.api_key,
        })
    }
}

/// A validated provider endpoint: the bound model, the origin and the client.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) model: String,
    api_key: Option<String>,
    base: String,
    http: HttpClient,
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
        http::post_json(&self.http, &url, self.api_key.as_deref(), body).await
    }

    /// GETs `{base}/v1/models/{model}`: the readiness probe of a wire with a model
    /// catalog (errors as [`http::get_json`]).
    pub(crate) async fn probe_model(&self) -> Result<(), RetrievalError> {
        self.probe(&format!("/v1/models/{}", self.model)).await
    }

    /// GETs `{base}{route}` and discards the answer: a readiness probe.
    pub(crate) async fn probe(&self, route: &str) -> Result<(), RetrievalError> {
        let url = format!("{}{route}", self.base);
        http::get_json(&self.http, &url, self.api_key.as_deref())
            .await
            .map(|_| ())
    }
}
