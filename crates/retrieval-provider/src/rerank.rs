//! Spec: retrieval-provider §2 (rerank runtime config), §5 (`RerankProvider`:
//! `ready()`, `rerank()`, per-instance model binding) and §6 (`RerankResponse`,
//! `RerankUsage`, `ScoredDocument`, the cross-impl invariants).

use futures::future::BoxFuture;
use openarmature_graph::NodeCtx;
use serde_json::{Map, Value};

pub use openarmature_core::vocab::retrieval::{RerankUsage, ScoredDocument};

use crate::error::RetrievalError;

/// Caller-supplied rerank request parameters (§2).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RerankConfig {
    /// Whether the provider should echo document text (`None`: the OA default,
    /// `false`).
    pub return_documents: Option<bool>,
    /// Vendor-specific knobs forwarded to the wire body (the extras pass-through bag).
    pub extras: Map<String, Value>,
}

impl RerankConfig {
    /// An empty config.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `return_documents`.
    pub fn return_documents(mut self, echo: bool) -> Self {
        self.return_documents = Some(echo);
        self
    }

    /// Adds one extras key.
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extras.insert(key.into(), value);
        self
    }

    /// The declared fields the caller set, by name (the event's `request_params`).
    pub fn request_params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(r) = self.return_documents {
            m.insert("return_documents".into(), Value::from(r));
        }
        m
    }
}

/// The normalized result of a `rerank()` call (§6).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RerankResponse {
    /// The results, most relevant first.
    pub results: Vec<ScoredDocument>,
    /// The model the provider reported (or the bound one when it echoes none).
    pub model: String,
    /// The usage record, when the provider reported any well-formed figure.
    pub usage: Option<RerankUsage>,
    /// The provider's response id, when present and non-empty.
    pub response_id: Option<String>,
    /// The provider response verbatim.
    pub raw: Value,
}

impl RerankResponse {
    /// A response, checked against the §6 invariants for a call over
    /// `document_count` documents with `top_k`: every index in range, no index twice,
    /// at most `min(top_k, document_count)` results. The results are sorted by
    /// relevance, descending (a stable sort: ties keep the provider's order).
    ///
    /// # Errors
    /// `provider_invalid_response` when an invariant does not hold.
    pub fn checked(
        mut results: Vec<ScoredDocument>,
        document_count: usize,
        top_k: Option<u32>,
        model: String,
        usage: Option<RerankUsage>,
        response_id: Option<String>,
        raw: Value,
    ) -> Result<Self, RetrievalError> {
        let cap = top_k.map_or(document_count, |k| (k as usize).min(document_count));
        if results.len() > cap {
            return Err(RetrievalError::invalid_response(format!(
                "the provider returned {} results, at most {cap} were requested",
                results.len()
            )));
        }
        let mut seen = vec![false; document_count];
        for r in &results {
            match seen.get_mut(r.index) {
                None => {
                    return Err(RetrievalError::invalid_response(format!(
                        "result index {} is out of range for {document_count} documents",
                        r.index
                    )))
                }
                Some(true) => {
                    return Err(RetrievalError::invalid_response(format!(
                        "result index {} appears twice",
                        r.index
                    )))
                }
                Some(slot) => *slot = true,
            }
        }
        results.sort_by(|a, b| b.relevance_score.total_cmp(&a.relevance_score));
        Ok(RerankResponse {
            results,
            model,
            usage,
            response_id,
            raw,
        })
    }
}

/// One `rerank()` call.
#[derive(Clone)]
#[non_exhaustive]
pub struct RerankRequest {
    /// The query the documents are scored against (non-empty).
    pub query: String,
    /// The candidate documents (non-empty).
    pub documents: Vec<String>,
    /// The most results wanted (`None`: all; `Some(0)` is rejected).
    pub top_k: Option<u32>,
    /// The caller's config.
    pub config: RerankConfig,
    /// The calling node, when the call runs inside one.
    pub node: Option<NodeCtx>,
}

impl std::fmt::Debug for RerankRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RerankRequest")
            .field("query", &self.query)
            .field("documents", &self.documents)
            .field("top_k", &self.top_k)
            .field("config", &self.config)
            .field("in_node", &self.node.is_some())
            .finish()
    }
}

impl RerankRequest {
    /// A request scoring `documents` against `query`, outside any node.
    pub fn new<I, S>(query: impl Into<String>, documents: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RerankRequest {
            query: query.into(),
            documents: documents.into_iter().map(Into::into).collect(),
            top_k: None,
            config: RerankConfig::default(),
            node: None,
        }
    }

    /// Sets `top_k`.
    pub fn top_k(mut self, top_k: u32) -> Self {
        self.top_k = Some(top_k);
        self
    }

    /// Sets the config.
    pub fn config(mut self, config: RerankConfig) -> Self {
        self.config = config;
        self
    }

    /// Runs the call inside `ctx`'s node: its typed events go to the node's observers.
    pub fn in_node(mut self, ctx: &NodeCtx) -> Self {
        self.node = Some(ctx.clone());
        self
    }
}

/// A rerank provider bound to one model (§5). Stateless; never retries.
pub trait RerankProvider: Send + Sync {
    /// The bound model identifier.
    fn model(&self) -> &str;

    /// The provider identifier reported on events and spans (`gen_ai.system`).
    fn provider_name(&self) -> &str;

    /// Checks that the bound model can serve requests (§5 `ready()`).
    ///
    /// # Errors
    /// `provider_invalid_model`, `provider_model_not_loaded`,
    /// `provider_authentication` or `provider_unavailable`.
    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>>;

    /// The wire exchange of one validated call (with the §6 invariants checked).
    /// Never retries.
    ///
    /// # Errors
    /// Any §7 category.
    fn send<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>>;

    /// A `rerank()` call (§5): pre-send validation, [`RerankProvider::send`], and —
    /// inside a node — exactly one `RerankEvent` or `RerankFailedEvent`.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty query, no documents or `top_k = 0`;
    /// any §7 category from the provider.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the call; no event is dispatched.
    fn rerank<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>> {
        Box::pin(crate::call::rerank(self, request))
    }
}

/// §5 / §7 pre-send validation.
pub(crate) fn validate(request: &RerankRequest) -> Result<(), RetrievalError> {
    if request.query.is_empty() {
        return Err(RetrievalError::invalid_request(
            "rerank() needs a non-empty query",
        ));
    }
    if request.documents.is_empty() {
        return Err(RetrievalError::invalid_request(
            "rerank() needs at least one document",
        ));
    }
    if request.top_k == Some(0) {
        return Err(RetrievalError::invalid_request("top_k must be positive"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::error::RetrievalCategory;

    fn check(
        results: Vec<ScoredDocument>,
        n: usize,
        k: Option<u32>,
    ) -> Result<RerankResponse, RetrievalError> {
        RerankResponse::checked(results, n, k, "m".into(), None, None, Value::Null)
    }

    #[test]
    fn results_are_sorted_by_relevance_descending() {
        let r = check(
            vec![ScoredDocument::new(0, 0.3), ScoredDocument::new(1, 0.9)],
            2,
            None,
        )
        .unwrap();
        assert_eq!(
            r.results.iter().map(|d| d.index).collect::<Vec<_>>(),
            [1, 0]
        );
    }

    #[test]
    fn out_of_range_duplicate_and_excess_results_are_invalid_responses() {
        for (results, n, k) in [
            (vec![ScoredDocument::new(2, 0.1)], 2, None),
            (
                vec![ScoredDocument::new(0, 0.1), ScoredDocument::new(0, 0.2)],
                2,
                None,
            ),
            (
                vec![ScoredDocument::new(0, 0.1), ScoredDocument::new(1, 0.2)],
                2,
                Some(1),
            ),
        ] {
            assert_eq!(
                check(results, n, k).unwrap_err().category(),
                RetrievalCategory::InvalidResponse
            );
        }
    }

    #[test]
    fn bad_inputs_are_rejected_before_sending() {
        assert!(validate(&RerankRequest::new("", ["d"])).is_err());
        assert!(validate(&RerankRequest::new("q", Vec::<String>::new())).is_err());
        assert!(validate(&RerankRequest::new("q", ["d"]).top_k(0)).is_err());
        assert!(validate(&RerankRequest::new("q", ["d"]).top_k(5)).is_ok());
    }
}
