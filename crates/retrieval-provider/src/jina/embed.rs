//! Spec: retrieval-provider §8.2 `/v1/embeddings` (the Jina embedding provider).
//!
//! `POST {base_url}/v1/embeddings` with `{"model", "input": [..], "task"?,
//! "dimensions"?, "truncate": false}` plus the extras bag. `input_type` is a closed
//! set: `query` → `task: "retrieval.query"`, `document` → `"retrieval.passage"`, any
//! other value `provider_invalid_request`; absent, no `task` is produced and an
//! extras `task` rides untouched (the route to Jina's model-specific tasks). The
//! answer `{model, usage: {total_tokens}, data: [{index, embedding}]}` gives the
//! vectors, the usage record (`total_tokens`: embedding has no output tokens) and
//! the model.

use serde_json::{Map, Value};

use super::{DEFAULT_ORIGIN, SYSTEM};
use crate::builder::ProviderBuilder;
use crate::embedding::EmbeddingConfig;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{EmbeddingWire, Ready, Wire};
use crate::stitch::Chunk;
use crate::{extras, wire};

/// Builds a [`JinaEmbeddings`] provider: the shared [`ProviderBuilder`] setters (key,
/// base URL, transport).
pub type JinaEmbeddingsBuilder = ProviderBuilder<JinaEmbeddings>;

impl ProviderBuilder<JinaEmbeddings> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, or a client that cannot be built.
    pub fn build(self) -> Result<JinaEmbeddings, RetrievalError> {
        Ok(JinaEmbeddings {
            endpoint: self.conn.open()?,
        })
    }
}

/// A Jina embedding provider (`gen_ai.system` `jina`).
#[derive(Debug, Clone)]
pub struct JinaEmbeddings {
    endpoint: Endpoint,
}

impl JinaEmbeddings {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> JinaEmbeddingsBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN)
    }

    /// The wire body (key order: model, input, task, dimensions, truncate, then the
    /// extras in the caller's order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an `input_type` outside `query` / `document`,
    /// an extras `truncate` other than `false`, or an extras `task` / `dimensions`
    /// conflicting with the value the mapping produces.
    pub fn wire_body(
        &self,
        input: &[String],
        config: &EmbeddingConfig,
    ) -> Result<Value, RetrievalError> {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.endpoint.model.clone()));
        body.insert("input".into(), wire::strings(input, None));
        if let Some(input_type) = config.input_type.as_deref() {
            let task = match input_type {
                "query" => "retrieval.query",
                "document" => "retrieval.passage",
                other => {
                    return Err(RetrievalError::invalid_request(format!(
                    "the Jina mapping recognizes input_type `query` or `document`, not `{other}` \
                         (other tasks ride the extras bag as `task`)"
                )))
                }
            };
            extras::insert_managed(&mut body, &config.extras, "task", Value::from(task))?;
        }
        if let Some(d) = config.dimensions {
            extras::insert_managed(&mut body, &config.extras, "dimensions", Value::from(d))?;
        }
        extras::insert_managed(&mut body, &config.extras, "truncate", Value::Bool(false))?;
        extras::append(&mut body, &config.extras, &[]);
        Ok(Value::Object(body))
    }
}

// Jina batches server-side: one request, never chunked (no `chunk_cap`).
impl EmbeddingWire for JinaEmbeddings {
    const WIRE: Wire = Wire::new(SYSTEM, "/v1/embeddings").ready(Ready::Call);

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn body(&self, input: &[String], config: &EmbeddingConfig) -> Result<Value, RetrievalError> {
        self.wire_body(input, config)
    }

    fn decode(&self, raw: Value) -> Result<Chunk, RetrievalError> {
        Chunk::from_data(raw, "total_tokens")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn body(config: EmbeddingConfig) -> Result<String, RetrievalError> {
        let p = JinaEmbeddings::builder("jina-embed").build().unwrap();
        p.wire_body(&["x".into()], &config)
            .map(|b| serde_json::to_string(&b).unwrap())
    }

    #[test]
    fn input_type_maps_to_task_from_a_closed_set() {
        assert_eq!(
            body(EmbeddingConfig::new().input_type("query").dimensions(8)).unwrap(),
            r#"{"model":"jina-embed","input":["x"],"task":"retrieval.query","dimensions":8,"truncate":false}"#
        );
        assert_eq!(
            body(EmbeddingConfig::new().input_type("document")).unwrap(),
            r#"{"model":"jina-embed","input":["x"],"task":"retrieval.passage","truncate":false}"#
        );
        assert!(body(EmbeddingConfig::new().input_type("clustering")).is_err());
    }

    #[test]
    fn task_is_managed_only_while_input_type_is_set() {
        let free = EmbeddingConfig::new().extra("task", json!("text-matching"));
        assert_eq!(
            body(free).unwrap(),
            r#"{"model":"jina-embed","input":["x"],"truncate":false,"task":"text-matching"}"#
        );
        let clash = EmbeddingConfig::new()
            .input_type("query")
            .extra("task", json!("text-matching"));
        assert!(body(clash).is_err());
        let same = EmbeddingConfig::new()
            .input_type("query")
            .extra("task", json!("retrieval.query"));
        assert!(body(same).is_ok());
        assert!(body(EmbeddingConfig::new().extra("truncate", json!(true))).is_err());
    }
}
