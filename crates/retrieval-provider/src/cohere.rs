//! Spec: retrieval-provider §8.4 (Cohere `/v2/rerank`).
//!
//! `POST {base_url}/v2/rerank` with `{"model", "query", "documents": [..], "top_n"?}`
//! plus the extras bag (e.g. `max_tokens_per_doc`). `results[].{index,
//! relevance_score}` become the sorted results (document echoes stay `None`: the wire
//! echoes none, and `return_documents` is a silent no-op); `meta.billed_units` gives
//! the usage record (`search_units`, and `input_tokens` when a compatible server
//! reports it); the top-level `id` is the response id. The response model is the
//! echoed `model` when present, else the bound model.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::error::RetrievalError;
use crate::rerank::{RerankProvider, RerankRequest, RerankResponse, RerankUsage, ScoredDocument};
use crate::{http, wire};

/// Builds a [`CohereRerank`] provider.
#[derive(Debug, Clone)]
#[must_use]
pub struct CohereRerankBuilder {
    model: String,
    api_key: Option<String>,
    base_url: String,
    timeout: Duration,
    client: Option<reqwest::Client>,
}

impl CohereRerankBuilder {
    /// The API key, sent as `Authorization: Bearer <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The server origin (default `https://api.cohere.com`; `/v2` stays in the route).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The whole-request timeout (default 300 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Uses the caller's reqwest client instead of building one.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, or a client that cannot be built.
    pub fn build(self) -> Result<CohereRerank, RetrievalError> {
        if self.model.is_empty() {
            return Err(RetrievalError::invalid_request("the bound model is empty"));
        }
        let base = http::base_url(&self.base_url)?;
        let client = match self.client {
            Some(c) => c,
            None => http::client(self.timeout)?,
        };
        Ok(CohereRerank {
            model: self.model,
            api_key: self.api_key,
            base,
            client,
        })
    }
}

/// A Cohere rerank provider (`gen_ai.system` `cohere`).
#[derive(Debug, Clone)]
pub struct CohereRerank {
    model: String,
    api_key: Option<String>,
    base: String,
    client: reqwest::Client,
}

impl CohereRerank {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> CohereRerankBuilder {
        CohereRerankBuilder {
            model: model.into(),
            api_key: None,
            base_url: "https://api.cohere.com".into(),
            timeout: Duration::from_secs(300),
            client: None,
        }
    }

    /// The wire body (deterministic key order: model, query, documents, top_n, then
    /// the extras the mapping does not produce itself).
    pub fn wire_body(&self, request: &RerankRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert("query".into(), Value::String(request.query.clone()));
        body.insert(
            "documents".into(),
            Value::Array(
                request
                    .documents
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            ),
        );
        if let Some(k) = request.top_k {
            body.insert("top_n".into(), Value::from(k));
        }
        for (k, v) in &request.config.extras {
            if !body.contains_key(k) {
                body.insert(k.clone(), v.clone());
            }
        }
        Value::Object(body)
    }

    async fn call(&self, request: &RerankRequest) -> Result<RerankResponse, RetrievalError> {
        let url = format!("{}/v2/rerank", self.base);
        let body = self.wire_body(request);
        let raw = http::post_json(&self.client, &url, self.api_key.as_deref(), &body).await?;
        let results = parse_results(&raw)?;
        let billed = raw.get("meta").and_then(|m| m.get("billed_units"));
        let usage = RerankUsage {
            search_units: wire::count(billed.and_then(|b| b.get("search_units"))),
            input_tokens: wire::count(billed.and_then(|b| b.get("input_tokens"))),
        };
        let usage = (usage.search_units.is_some() || usage.input_tokens.is_some()).then_some(usage);
        RerankResponse::checked(
            results,
            request.documents.len(),
            request.top_k,
            wire::model(raw.get("model")).unwrap_or_else(|| self.model.clone()),
            usage,
            wire::identifier(raw.get("id")),
            raw,
        )
    }
}

impl RerankProvider for CohereRerank {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        "cohere"
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>> {
        Box::pin(async move {
            let url = format!("{}/v1/models/{}", self.base, self.model);
            http::get_json(&self.client, &url, self.api_key.as_deref())
                .await
                .map(|_| ())
        })
    }

    fn send<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>> {
        Box::pin(self.call(request))
    }
}

/// `results[].{index, relevance_score}`, as listed.
fn parse_results(raw: &Value) -> Result<Vec<ScoredDocument>, RetrievalError> {
    let list = raw
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| RetrievalError::invalid_response("the response has no `results` list"))?;
    list.iter()
        .enumerate()
        .map(|(pos, r)| {
            let index = r
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| {
                    RetrievalError::invalid_response(format!("results[{pos}] has no valid index"))
                })?;
            let score = r
                .get("relevance_score")
                .filter(|s| s.is_number())
                .and_then(Value::as_f64)
                .ok_or_else(|| {
                    RetrievalError::invalid_response(format!(
                        "results[{pos}] has no numeric relevance_score"
                    ))
                })?;
            Ok(ScoredDocument::new(index, score))
        })
        .collect()
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

    #[test]
    fn results_need_an_index_and_a_numeric_score() {
        let ok = json!({"results": [{"index": 1, "relevance_score": 0.5}]});
        assert_eq!(
            parse_results(&ok).unwrap(),
            vec![ScoredDocument::new(1, 0.5)]
        );
        for bad in [
            json!({}),
            json!({"results": [{"relevance_score": 0.5}]}),
            json!({"results": [{"index": 0, "relevance_score": "0.5"}]}),
        ] {
            assert!(parse_results(&bad).is_err(), "{bad}");
        }
    }
}
