//! Spec: conformance-adapter §5.15 (*absent `mapping:`, the harness-internal stand-in
//! shape*), retrieval-provider §5 / §6 / §7 — the stand-in rerank mapping of the
//! pre-wire-mapping fixtures 006–012 (register V2).
//!
//! The suite's stand-in body is Cohere-flavoured but carries an optional per-result
//! `document` echo and a `return_documents` knob, which the real Cohere mapping
//! (§8.4, never echoes) cannot serve. So the stand-in is a harness mapping behind the
//! crate's `RerankProvider` trait (the crate's `rerank()` still does the pre-send
//! validation, the §6 invariants through `RerankResponse::checked`, and the typed
//! events): `POST {origin}/v2/rerank` with `{model, query, documents, top_n?,
//! return_documents?}`; `results[].{index, relevance_score, document?}` with the §6
//! echo rule; `meta.billed_units.{search_units, input_tokens}` (a malformed figure is
//! not reported, §7); the top-level `id` (non-empty string); the echoed `model`,
//! else the bound one. A non-2xx status maps through the shared §7 table.

use futures::future::BoxFuture;
use openarmature_retrieval::{
    RerankProvider, RerankRequest, RerankResponse, RerankUsage, RetrievalCategory, RetrievalError,
    ScoredDocument,
};
use serde_json::{json, Map, Value};

/// The harness stand-in rerank provider.
pub(super) struct StandInRerank {
    model: String,
    origin: String,
    client: reqwest::Client,
}

impl StandInRerank {
    pub(super) fn new(model: String, origin: String, client: reqwest::Client) -> Self {
        StandInRerank {
            model,
            origin,
            client,
        }
    }

    fn body(&self, request: &RerankRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("query".into(), json!(request.query));
        body.insert("documents".into(), json!(request.documents));
        if let Some(k) = request.top_k {
            body.insert("top_n".into(), json!(k));
        }
        if let Some(r) = request.config.return_documents {
            body.insert("return_documents".into(), json!(r));
        }
        for (k, v) in &request.config.extras {
            body.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(body)
    }

    async fn call(&self, request: &RerankRequest) -> Result<RerankResponse, RetrievalError> {
        let url = format!("{}/v2/rerank", self.origin);
        let reply = self
            .client
            .post(url)
            .bearer_auth("test-key")
            .json(&self.body(request))
            .send()
            .await
            .map_err(|e| RetrievalError::unavailable(format!("transport error: {e}")))?;
        let status = reply.status().as_u16();
        let raw: Value = reply.json().await.unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            return Err(RetrievalError::new(
                category_of_status(status),
                format!("the stand-in provider answered HTTP {status}"),
            )
            .with_status(status));
        }
        let results = parse_results(raw.get("results"))?;
        let billed = raw.get("meta").and_then(|m| m.get("billed_units"));
        let figure = |key: &str| billed.and_then(|b| b.get(key)).and_then(Value::as_u64);
        let usage = RerankUsage {
            search_units: figure("search_units"),
            input_tokens: figure("input_tokens"),
        };
        let usage = (usage.search_units.is_some() || usage.input_tokens.is_some()).then_some(usage);
        let text = |key: &str| {
            raw.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        RerankResponse::checked(
            results,
            request.documents.len(),
            request.top_k,
            text("model").unwrap_or_else(|| self.model.clone()),
            usage,
            text("id"),
            raw,
        )
    }
}

/// The shared §7 status table (retrieval-provider §8.x *Errors*).
fn category_of_status(status: u16) -> RetrievalCategory {
    match status {
        401 | 403 => RetrievalCategory::Authentication,
        404 => RetrievalCategory::InvalidModel,
        429 => RetrievalCategory::RateLimit,
        500..=599 => RetrievalCategory::Unavailable,
        _ => RetrievalCategory::InvalidRequest,
    }
}

/// The result entries, with the §6 echo rule.
fn parse_results(list: Option<&Value>) -> Result<Vec<ScoredDocument>, RetrievalError> {
    let list = list
        .and_then(Value::as_array)
        .ok_or_else(|| RetrievalError::invalid_response("the response has no result list"))?;
    list.iter()
        .enumerate()
        .map(|(pos, r)| {
            let bad = |why: &str| RetrievalError::invalid_response(format!("results[{pos}] {why}"));
            let index = r
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| bad("has no valid index"))?;
            let score = r
                .get("relevance_score")
                .filter(|s| s.is_number())
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("has no numeric relevance_score"))?;
            let document = match r.get("document") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Object(o)) => o.get("text").and_then(Value::as_str).map(str::to_owned),
                Some(_) => return Err(bad("echoes a document that is not text")),
            };
            Ok(ScoredDocument::new(index, score).with_document(document))
        })
        .collect()
}

impl RerankProvider for StandInRerank {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        "mock"
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>> {
        Box::pin(async { Ok(()) })
    }

    fn send<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>> {
        Box::pin(self.call(request))
    }
}
