//! Spec: retrieval-provider §8.3 (OpenAI-compatible `/v1/embeddings`) and §8 *Batch
//! chunking*.
//!
//! `POST {base_url}/v1/embeddings` with `{"model", "input": [..], "dimensions"?}` plus
//! the extras bag. Each `data[].embedding` is decoded by its wire shape (a number array
//! verbatim, a base64 string as little-endian float32s, anything else
//! `provider_invalid_response`); `usage.prompt_tokens` is the usage record; a
//! top-level `id`, when an OpenAI-compatible server sends one, is the response id.
//! Calls over the per-request input cap (2048) are split into consecutive chunks with
//! identical other fields and stitched back in input order.

use serde_json::{Map, Value};

use crate::builder::{Chunked, ProviderBuilder};
use crate::embedding::EmbeddingConfig;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{EmbeddingWire, Wire};
use crate::stitch::Chunk;
use crate::{extras, wire};

/// OpenAI's per-request input cap.
pub const MAX_INPUTS_PER_REQUEST: usize = 2048;

/// Builds an [`OpenAiEmbeddings`] provider: the shared [`ProviderBuilder`] setters
/// (key, base URL, transport) plus `chunk_size` and `prefixes`.
pub type OpenAiEmbeddingsBuilder = ProviderBuilder<OpenAiEmbeddings>;

impl ProviderBuilder<OpenAiEmbeddings> {
    /// Client-side prefixes for an asymmetric model behind the endpoint: prepended to
    /// every input when `input_type` is `query` / `document` (§8.3 *`input_type`*).
    pub fn prefixes(mut self, query: impl Into<String>, document: impl Into<String>) -> Self {
        self.prefixes = Some((query.into(), document.into()));
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, a chunk size outside `1..=2048`, or a client that cannot be built.
    pub fn build(self) -> Result<OpenAiEmbeddings, RetrievalError> {
        let chunk_size = self.checked_chunk_size(MAX_INPUTS_PER_REQUEST)?;
        let (query_prefix, document_prefix) = self.prefixes.unzip();
        Ok(OpenAiEmbeddings {
            endpoint: self.conn.open()?,
            chunk_size,
            query_prefix,
            document_prefix,
        })
    }
}

/// An OpenAI-compatible embedding provider (`gen_ai.system` `openai`).
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    endpoint: Endpoint,
    chunk_size: usize,
    query_prefix: Option<String>,
    document_prefix: Option<String>,
}

impl Chunked for OpenAiEmbeddings {}

impl OpenAiEmbeddings {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> OpenAiEmbeddingsBuilder {
        ProviderBuilder::<Self>::new(model, "https://api.openai.com")
            .chunk_size(MAX_INPUTS_PER_REQUEST)
    }

    /// The wire body for one chunk (deterministic key order: model, input,
    /// dimensions, then the extras in the caller's order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an extras `dimensions` conflicting with the
    /// declared one (a managed realization, §10).
    pub fn wire_body(
        &self,
        input: &[String],
        config: &EmbeddingConfig,
    ) -> Result<Value, RetrievalError> {
        let prefix = match config.input_type.as_deref() {
            Some("query") => self.query_prefix.as_deref(),
            Some("document") => self.document_prefix.as_deref(),
            _ => None,
        };
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.endpoint.model.clone()));
        body.insert("input".into(), wire::strings(input, prefix));
        if let Some(d) = config.dimensions {
            extras::insert_managed(&mut body, &config.extras, "dimensions", Value::from(d))?;
        }
        extras::append(&mut body, &config.extras, &[]);
        Ok(Value::Object(body))
    }
}

impl EmbeddingWire for OpenAiEmbeddings {
    const WIRE: Wire = Wire::new("openai", "/v1/embeddings");

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn chunk_cap(&self) -> Option<usize> {
        Some(self.chunk_size)
    }

    fn body(&self, input: &[String], config: &EmbeddingConfig) -> Result<Value, RetrievalError> {
        self.wire_body(input, config)
    }

    fn decode(&self, raw: Value) -> Result<Chunk, RetrievalError> {
        Chunk::from_data(raw, "prompt_tokens")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn provider() -> OpenAiEmbeddings {
        OpenAiEmbeddings::builder("text-embedding-test")
            .base_url("http://127.0.0.1:9")
            .build()
            .unwrap()
    }

    #[test]
    fn the_body_carries_model_input_dimensions_then_extras() {
        let config = EmbeddingConfig::new()
            .dimensions(64)
            .extra("encoding_format", json!("base64"))
            .extra("dimensions", json!(64));
        let body = provider().wire_body(&["a".into()], &config).unwrap();
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"text-embedding-test","input":["a"],"dimensions":64,"encoding_format":"base64"}"#
        );
        let clash = EmbeddingConfig::new()
            .dimensions(64)
            .extra("dimensions", json!(32));
        assert!(provider().wire_body(&["a".into()], &clash).is_err());
        // Without the declared field the extras key rides untouched (§10 escape hatch).
        let free = EmbeddingConfig::new().extra("dimensions", json!(32));
        let body = provider().wire_body(&["a".into()], &free).unwrap();
        assert_eq!(body["dimensions"], json!(32));
    }

    #[test]
    fn prefixes_apply_only_with_an_input_type() {
        let p = OpenAiEmbeddings::builder("m")
            .prefixes("query: ", "passage: ")
            .build()
            .unwrap();
        let q = p
            .wire_body(&["x".into()], &EmbeddingConfig::new().input_type("query"))
            .unwrap();
        assert_eq!(q["input"], json!(["query: x"]));
        let plain = p.wire_body(&["x".into()], &EmbeddingConfig::new()).unwrap();
        assert_eq!(plain["input"], json!(["x"]));
    }
}
