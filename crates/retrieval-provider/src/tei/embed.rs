//! Spec: retrieval-provider §8.1 `/embed` (the TEI embedding provider).
//!
//! `POST {base_url}/embed` with `{"inputs": [..], "prompt_name"?, "dimensions"?}`
//! plus the extras bag. `input_type` becomes TEI's server-side `prompt_name` through
//! the construction map, or — for a model without configured prompts — a client-side
//! query / document prefix; absent, neither is applied. The answer is the bare vector
//! array, in input order.

use serde_json::{Map, Value};

use super::{DEFAULT_CHUNK_SIZE, DEFAULT_ORIGIN, SYSTEM, TRUNCATE};
use crate::builder::{Chunked, ProviderBuilder};
use crate::embedding::EmbeddingConfig;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{EmbeddingWire, Ready, Wire};
use crate::stitch::Chunk;
use crate::{extras, vectors, wire};

/// Builds a [`TeiEmbeddings`] provider: the shared [`ProviderBuilder`] setters (key,
/// base URL, transport) plus `chunk_size`, `prompt_name` and `prefixes`.
pub type TeiEmbeddingsBuilder = ProviderBuilder<TeiEmbeddings>;

impl ProviderBuilder<TeiEmbeddings> {
    /// Maps an `input_type` (e.g. `query`) to one of the model's configured TEI
    /// prompts (e.g. `query`, or `passage` for `document`), sent as `prompt_name`.
    pub fn prompt_name(mut self, input_type: impl Into<String>, prompt: impl Into<String>) -> Self {
        let input_type = input_type.into();
        self.prompt_names.retain(|(t, _)| *t != input_type);
        self.prompt_names.push((input_type, prompt.into()));
        self
    }

    /// Client-side prefixes for a model without configured prompts: prepended to
    /// every input when `input_type` is `query` / `document` and no prompt name is
    /// mapped for it.
    pub fn prefixes(mut self, query: impl Into<String>, document: impl Into<String>) -> Self {
        self.prefixes = Some((query.into(), document.into()));
        self
    }

    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, a chunk size of 0, or a client that cannot be built.
    pub fn build(self) -> Result<TeiEmbeddings, RetrievalError> {
        let chunk_size = self.checked_chunk_size(usize::MAX)?;
        let (query_prefix, document_prefix) = self.prefixes.unzip();
        Ok(TeiEmbeddings {
            endpoint: self.conn.open()?,
            chunk_size,
            prompt_names: self.prompt_names,
            query_prefix,
            document_prefix,
        })
    }
}

/// A TEI embedding provider (`gen_ai.system` `tei`).
#[derive(Debug, Clone)]
pub struct TeiEmbeddings {
    endpoint: Endpoint,
    chunk_size: usize,
    prompt_names: Vec<(String, String)>,
    query_prefix: Option<String>,
    document_prefix: Option<String>,
}

impl Chunked for TeiEmbeddings {}

impl TeiEmbeddings {
    /// Starts a builder bound to `model` (TEI serves one model; the name is what
    /// events and spans report).
    pub fn builder(model: impl Into<String>) -> TeiEmbeddingsBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN).chunk_size(DEFAULT_CHUNK_SIZE)
    }

    /// The wire body for one chunk (key order: inputs, prompt_name, dimensions, then
    /// the extras in the caller's order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an extras `truncate` other than `false`, or an
    /// extras `prompt_name` / `dimensions` conflicting with the value the mapping
    /// produces from `input_type` / `dimensions`.
    pub fn wire_body(
        &self,
        input: &[String],
        config: &EmbeddingConfig,
    ) -> Result<Value, RetrievalError> {
        extras::check_managed(&config.extras, TRUNCATE, &Value::Bool(false))?;
        let input_type = config.input_type.as_deref();
        let prompt = input_type.and_then(|t| {
            self.prompt_names
                .iter()
                .find(|(mapped, _)| mapped == t)
                .map(|(_, p)| p.clone())
        });
        let prefix = match (input_type, &prompt) {
            (Some("query"), None) => self.query_prefix.as_deref(),
            (Some("document"), None) => self.document_prefix.as_deref(),
            _ => None,
        };
        let mut body = Map::new();
        body.insert("inputs".into(), wire::strings(input, prefix));
        if let Some(p) = prompt {
            extras::insert_managed(&mut body, &config.extras, "prompt_name", Value::String(p))?;
        }
        if let Some(d) = config.dimensions {
            extras::insert_managed(&mut body, &config.extras, "dimensions", Value::from(d))?;
        }
        extras::append(&mut body, &config.extras, &[TRUNCATE]);
        Ok(Value::Object(body))
    }
}

impl EmbeddingWire for TeiEmbeddings {
    const WIRE: Wire = Wire::new(SYSTEM, "/embed").ready(Ready::Path("/info"));

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn chunk_cap(&self) -> Option<usize> {
        Some(self.chunk_size)
    }

    fn body(&self, input: &[String], config: &EmbeddingConfig) -> Result<Value, RetrievalError> {
        self.wire_body(input, config)
    }

    /// TEI answers with the bare vector array: no usage, id or model.
    fn decode(&self, raw: Value) -> Result<Chunk, RetrievalError> {
        Ok(Chunk {
            vectors: vectors::decode_bare(&raw)?,
            input_tokens: None,
            response_id: None,
            model: None,
            raw,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::error::RetrievalCategory;
    use serde_json::json;

    fn provider() -> TeiEmbeddings {
        TeiEmbeddings::builder("tei-embed")
            .prompt_name("query", "query")
            .prompt_name("document", "passage")
            .build()
            .unwrap()
    }

    fn body(p: &TeiEmbeddings, config: EmbeddingConfig) -> Result<String, RetrievalError> {
        p.wire_body(&["x".into()], &config)
            .map(|b| serde_json::to_string(&b).unwrap())
    }

    #[test]
    fn input_type_maps_to_prompt_name_and_absence_stays_symmetric() {
        let p = provider();
        let q = EmbeddingConfig::new().input_type("query").dimensions(4);
        assert_eq!(
            body(&p, q).unwrap(),
            r#"{"inputs":["x"],"prompt_name":"query","dimensions":4}"#
        );
        let d = EmbeddingConfig::new().input_type("document");
        assert_eq!(
            body(&p, d).unwrap(),
            r#"{"inputs":["x"],"prompt_name":"passage"}"#
        );
        assert_eq!(
            body(&p, EmbeddingConfig::new()).unwrap(),
            r#"{"inputs":["x"]}"#
        );
    }

    #[test]
    fn prefixes_are_the_fallback_without_a_prompt_name() {
        let p = TeiEmbeddings::builder("m")
            .prefixes("query: ", "passage: ")
            .build()
            .unwrap();
        let q = EmbeddingConfig::new().input_type("query");
        assert_eq!(body(&p, q).unwrap(), r#"{"inputs":["query: x"]}"#);
    }

    #[test]
    fn truncate_is_managed_and_never_sent() {
        let p = provider();
        let same = EmbeddingConfig::new().extra("truncate", json!(false));
        assert_eq!(body(&p, same).unwrap(), r#"{"inputs":["x"]}"#);
        let flip = EmbeddingConfig::new().extra("truncate", json!(true));
        assert_eq!(
            body(&p, flip).unwrap_err().category(),
            RetrievalCategory::InvalidRequest
        );
        let clash = EmbeddingConfig::new()
            .input_type("query")
            .extra("prompt_name", json!("other"));
        assert!(body(&p, clash).is_err());
        assert!(TeiEmbeddings::builder("m").chunk_size(0).build().is_err());
    }
}
