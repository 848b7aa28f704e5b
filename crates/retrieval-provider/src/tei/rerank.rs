//! Spec: retrieval-provider §8.1 `/rerank` (the TEI rerank provider) and its
//! *Mandatory rerank batch chunking*.
//!
//! `POST {base_url}/rerank` with `{"query", "texts": [..], "truncate": false,
//! "return_text"}` plus the extras bag; `return_documents` becomes `return_text`.
//! The answer `[{index, score, text?}]` maps onto the results (`text` is the
//! document echo). Documents beyond the chunk size go out in consecutive chunks with
//! the same query; each chunk's chunk-relative indices are re-based to absolute
//! positions, all results are sorted together by score, and `top_k` is applied last
//! (TEI's wire has no `top_n`). `raw` keeps the chunk-relative answers verbatim.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::{DEFAULT_CHUNK_SIZE, DEFAULT_ORIGIN, SYSTEM, TRUNCATE};
use crate::builder::{Chunked, ProviderBuilder};
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{Ready, RerankWire, Wire};
use crate::rerank::{RerankConfig, RerankRequest, RerankResponse};
use crate::scored::{self, ResultShape};
use crate::{extras, wire};

/// Builds a [`TeiRerank`] provider: the shared [`ProviderBuilder`] setters (key, base
/// URL, transport) plus `chunk_size`.
pub type TeiRerankBuilder = ProviderBuilder<TeiRerank>;

impl ProviderBuilder<TeiRerank> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, a chunk size of 0, or a client that cannot be built.
    pub fn build(self) -> Result<TeiRerank, RetrievalError> {
        let chunk_size = self.checked_chunk_size(usize::MAX)?;
        Ok(TeiRerank {
            endpoint: self.conn.open()?,
            chunk_size,
        })
    }
}

/// A TEI rerank provider (`gen_ai.system` `tei`).
#[derive(Debug, Clone)]
pub struct TeiRerank {
    endpoint: Endpoint,
    chunk_size: usize,
}

impl Chunked for TeiRerank {}

/// TEI's result entries: `{index, score, text?}`.
const SHAPE: ResultShape = ResultShape {
    score: "score",
    echo: Some("text"),
};

impl TeiRerank {
    /// Starts a builder bound to `model` (TEI serves one model; the name is what
    /// events and spans report).
    pub fn builder(model: impl Into<String>) -> TeiRerankBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN).chunk_size(DEFAULT_CHUNK_SIZE)
    }

    /// The wire body for one chunk of `texts` (key order: query, texts, truncate,
    /// return_text, then the extras in the caller's order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an extras `truncate` other than `false` or an
    /// extras `return_text` conflicting with `return_documents`.
    pub fn wire_body(
        &self,
        query: &str,
        texts: &[String],
        config: &RerankConfig,
    ) -> Result<Value, RetrievalError> {
        let mut body = Map::new();
        body.insert("query".into(), Value::String(query.to_owned()));
        body.insert("texts".into(), wire::strings(texts, None));
        extras::insert_managed(&mut body, &config.extras, TRUNCATE, Value::Bool(false))?;
        let echo = Value::Bool(config.return_documents.unwrap_or(false));
        extras::insert_managed(&mut body, &config.extras, "return_text", echo)?;
        extras::append(&mut body, &config.extras, &[]);
        Ok(Value::Object(body))
    }
}

impl RerankWire for TeiRerank {
    const WIRE: Wire = Wire::new(SYSTEM, "/rerank").ready(Ready::Path("/info"));
    const SHAPE: ResultShape = SHAPE;

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn body(&self, request: &RerankRequest, texts: &[String]) -> Result<Value, RetrievalError> {
        self.wire_body(&request.query, texts, &request.config)
    }

    /// Chunk-and-stitch: one request per chunk of documents, the chunk-relative
    /// indices re-based, all results sorted together, `top_k` applied last.
    fn call<'a>(
        &'a self,
        request: &'a RerankRequest,
    ) -> BoxFuture<'a, Result<RerankResponse, RetrievalError>> {
        let route = Self::WIRE.route();
        Box::pin(async move {
            let mut results = Vec::with_capacity(request.documents.len());
            let mut raws = Vec::new();
            for (n, texts) in request.documents.chunks(self.chunk_size).enumerate() {
                let body = self.body(request, texts)?;
                let raw = self.endpoint.post(route, &body).await?;
                let offset = n * self.chunk_size;
                for mut result in scored::parse(Some(&raw), SHAPE)? {
                    if result.index >= texts.len() {
                        return Err(RetrievalError::invalid_response(format!(
                            "result index {} is out of range for a chunk of {} documents",
                            result.index,
                            texts.len()
                        )));
                    }
                    result.index += offset;
                    results.push(result);
                }
                raws.push(raw);
            }
            let mut response = RerankResponse::checked(
                results,
                request.documents.len(),
                None,
                self.endpoint.model.clone(),
                None,
                None,
                wire::stitch_raw(raws),
            )?;
            if let Some(k) = request.top_k {
                response
                    .results
                    .truncate(usize::try_from(k).unwrap_or(usize::MAX));
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_body_sends_truncate_false_and_return_text() {
        let p = TeiRerank::builder("tei-rerank").build().unwrap();
        let texts = ["a".to_owned(), "b".to_owned()];
        let plain = p.wire_body("q", &texts, &RerankConfig::new()).unwrap();
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"query":"q","texts":["a","b"],"truncate":false,"return_text":false}"#
        );
        let echo = RerankConfig::new()
            .return_documents(true)
            .extra("truncate", json!(false))
            .extra("raw_scores", json!(true));
        assert_eq!(
            serde_json::to_string(&p.wire_body("q", &texts, &echo).unwrap()).unwrap(),
            r#"{"query":"q","texts":["a","b"],"truncate":false,"return_text":true,"raw_scores":true}"#
        );
        let flip = RerankConfig::new().extra("truncate", json!(true));
        assert!(p.wire_body("q", &texts, &flip).is_err());
    }
}
