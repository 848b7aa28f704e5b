//! Spec: retrieval-provider §8.4 (Cohere `/v2/rerank`; `/v2/embed` is [`CohereEmbeddings`]).
//!
//! `POST {base_url}/v2/rerank` with `{"model", "query", "documents": [..], "top_n"?}`
//! plus the extras bag (e.g. `max_tokens_per_doc`). `results[].{index,
//! relevance_score}` become the sorted results (document echoes stay `None`: the wire
//! echoes none, and `return_documents` is a silent no-op); `meta.billed_units` gives
//! the usage record (`search_units`, and `input_tokens` when a compatible server
//! reports it); the top-level `id` is the response id. The response model is the
//! echoed `model` when present, else the bound model.

use serde_json::{Map, Value};

use crate::builder::ProviderBuilder;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{RerankWire, Wire};
use crate::rerank::{RerankRequest, RerankUsage};
use crate::scored::ResultShape;
use crate::{extras, wire};

mod embed;

/// The hosted origin both builders start from.
const DEFAULT_ORIGIN: &str = "https://api.cohere.com";

pub use embed::{CohereEmbeddings, CohereEmbeddingsBuilder, MAX_TEXTS_PER_REQUEST};

/// Builds a [`CohereRerank`] provider: the shared [`ProviderBuilder`] setters (key,
/// base URL, transport).
pub type CohereRerankBuilder = ProviderBuilder<CohereRerank>;

impl ProviderBuilder<CohereRerank> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, or a client that cannot be built.
    pub fn build(self) -> Result<CohereRerank, RetrievalError> {
        Ok(CohereRerank {
            endpoint: self.conn.open()?,
        })
    }
}

/// A Cohere rerank provider (`gen_ai.system` `cohere`).
#[derive(Debug, Clone)]
pub struct CohereRerank {
    endpoint: Endpoint,
}

/// Cohere's result entries: `{index, relevance_score}`, no echo.
const SHAPE: ResultShape = ResultShape {
    score: "relevance_score",
    echo: None,
};

impl CohereRerank {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> CohereRerankBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN)
    }

    /// The wire body (deterministic key order: model, query, documents, top_n, then
    /// the extras the mapping does not produce itself).
    pub fn wire_body(&self, request: &RerankRequest) -> Value {
        let mut body = query_body(&self.endpoint.model, request);
        extras::append(&mut body, &request.config.extras, &[]);
        Value::Object(body)
    }
}

/// The `{model, query, documents, top_n?}` head the hosted rerank wires share.
pub(crate) fn query_body(model: &str, request: &RerankRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    body.insert("query".into(), Value::String(request.query.clone()));
    body.insert("documents".into(), wire::strings(&request.documents, None));
    if let Some(k) = request.top_k {
        body.insert("top_n".into(), Value::from(k));
    }
    body
}

impl RerankWire for CohereRerank {
    const WIRE: Wire = Wire::new("cohere", "/v2/rerank");
    const SHAPE: ResultShape = SHAPE;

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn body(&self, request: &RerankRequest, _: &[String]) -> Result<Value, RetrievalError> {
        Ok(self.wire_body(request))
    }

    /// `meta.billed_units`: `search_units`, and `input_tokens` when a compatible
    /// server reports it.
    fn usage(&self, raw: &Value) -> Option<RerankUsage> {
        let billed = raw.get("meta").and_then(|m| m.get("billed_units"));
        let usage = RerankUsage {
            search_units: wire::count(billed.and_then(|b| b.get("search_units"))),
            input_tokens: wire::count(billed.and_then(|b| b.get("input_tokens"))),
        };
        (usage.search_units.is_some() || usage.input_tokens.is_some()).then_some(usage)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::rerank::RerankConfig;
    use serde_json::json;

    #[test]
    fn the_body_maps_top_k_to_top_n_and_ignores_return_documents() {
        let p = CohereRerank::builder("rerank-test").build().unwrap();
        let request = RerankRequest::new("q", ["a", "b"]).top_k(1).config(
            RerankConfig::new()
                .return_documents(true)
                .extra("max_tokens_per_doc", json!(512)),
        );
        assert_eq!(
            serde_json::to_string(&p.wire_body(&request)).unwrap(),
            r#"{"model":"rerank-test","query":"q","documents":["a","b"],"top_n":1,"max_tokens_per_doc":512}"#
        );
    }
}
