//! Spec: retrieval-provider §8.2 `/v1/rerank` (the Jina rerank provider).
//!
//! `POST {base_url}/v1/rerank` with `{"model", "query", "documents": [..], "top_n"?,
//! "return_documents", "truncation": false}` plus the extras bag.
//! `return_documents` is always sent (Jina defaults to `true`, OpenArmature to
//! `false`). The answer `{model, usage: {total_tokens}, results: [{index,
//! relevance_score, document?}]}` gives the sorted results (a string echo verbatim,
//! a `{"text"}` object its text, an image or other text-less object `None`, a
//! number / boolean / array `provider_invalid_response`), `usage.total_tokens` as
//! `RerankUsage::input_tokens` (Jina meters rerank by tokens) and the model.

use serde_json::Value;

use super::{DEFAULT_ORIGIN, SYSTEM};
use crate::builder::ProviderBuilder;
use crate::cohere::query_body;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{Ready, RerankWire, Wire};
use crate::rerank::{RerankRequest, RerankUsage};
use crate::scored::ResultShape;
use crate::{extras, wire};

/// Builds a [`JinaRerank`] provider: the shared [`ProviderBuilder`] setters (key, base
/// URL, transport).
pub type JinaRerankBuilder = ProviderBuilder<JinaRerank>;

impl ProviderBuilder<JinaRerank> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, or a client that cannot be built.
    pub fn build(self) -> Result<JinaRerank, RetrievalError> {
        Ok(JinaRerank {
            endpoint: self.conn.open()?,
        })
    }
}

/// A Jina rerank provider (`gen_ai.system` `jina`).
#[derive(Debug, Clone)]
pub struct JinaRerank {
    endpoint: Endpoint,
}

/// Jina's result entries: `{index, relevance_score, document?}`.
const SHAPE: ResultShape = ResultShape {
    score: "relevance_score",
    echo: Some("document"),
};

impl JinaRerank {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> JinaRerankBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN)
    }

    /// The wire body (key order: model, query, documents, top_n, return_documents,
    /// truncation, then the extras in the caller's order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an extras `truncation` other than `false` or an
    /// extras `return_documents` conflicting with the config's.
    pub fn wire_body(&self, request: &RerankRequest) -> Result<Value, RetrievalError> {
        let extras_bag = &request.config.extras;
        let mut body = query_body(&self.endpoint.model, request);
        let echo = Value::Bool(request.config.return_documents.unwrap_or(false));
        extras::insert_managed(&mut body, extras_bag, "return_documents", echo)?;
        extras::insert_managed(&mut body, extras_bag, "truncation", Value::Bool(false))?;
        extras::append(&mut body, extras_bag, &[]);
        Ok(Value::Object(body))
    }
}

impl RerankWire for JinaRerank {
    const WIRE: Wire = Wire::new(SYSTEM, "/v1/rerank").ready(Ready::Call);
    const SHAPE: ResultShape = SHAPE;

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn body(&self, request: &RerankRequest, _: &[String]) -> Result<Value, RetrievalError> {
        self.wire_body(request)
    }

    /// `usage.total_tokens`, as input tokens (Jina meters rerank by tokens).
    fn usage(&self, raw: &Value) -> Option<RerankUsage> {
        let tokens = wire::count(raw.get("usage").and_then(|u| u.get("total_tokens")));
        tokens.map(|t| RerankUsage {
            search_units: None,
            input_tokens: Some(t),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::rerank::RerankConfig;
    use serde_json::json;

    #[test]
    fn the_body_sends_return_documents_and_truncation_explicitly() {
        let p = JinaRerank::builder("jina-rerank").build().unwrap();
        let plain = RerankRequest::new("q", ["a", "b"]);
        assert_eq!(
            serde_json::to_string(&p.wire_body(&plain).unwrap()).unwrap(),
            r#"{"model":"jina-rerank","query":"q","documents":["a","b"],"return_documents":false,"truncation":false}"#
        );
        let top = RerankRequest::new("q", ["a"]).top_k(1).config(
            RerankConfig::new()
                .return_documents(true)
                .extra("truncation", json!(false)),
        );
        assert_eq!(
            serde_json::to_string(&p.wire_body(&top).unwrap()).unwrap(),
            r#"{"model":"jina-rerank","query":"q","documents":["a"],"top_n":1,"return_documents":true,"truncation":false}"#
        );
        let flip = RerankRequest::new("q", ["a"])
            .config(RerankConfig::new().extra("truncation", json!(true)));
        assert!(p.wire_body(&flip).is_err());
    }
}
