//! Spec: retrieval-provider §8.4 `/v2/embed` (the Cohere embedding provider) and §8
//! *Batch chunking*.
//!
//! `POST {base_url}/v2/embed` with `{"model", "input_type", "texts": [..],
//! "embedding_types", "truncate": "NONE", "output_dimension"?}` plus the extras bag.
//! `input_type` is a mandatory wire field: `query` → `search_query`, `document` or
//! absent → `search_document`, `classification` / `clustering` identity, anything
//! else `provider_invalid_request` before sending. The mapping manages three wire
//! keys: `embedding_types` (merged: `"float"` first, then the caller's precisions,
//! de-duplicated; a malformed extras value is treated as absent), `truncate` (a
//! conflicting extras value is rejected) and the realizations of declared fields
//! (`input_type`, and `output_dimension` while `dimensions` is set). The answer
//! `{id, embeddings: {float: [[..]]}, meta: {billed_units: {input_tokens}}}` gives
//! the vectors (`embeddings.float`, in input order), the usage record and the
//! response id; Cohere echoes no model, so the response model is the bound one.
//! Calls over Cohere's 96-input cap are chunked and stitched.

use serde_json::{Map, Value};

use super::DEFAULT_ORIGIN;
use crate::builder::{Chunked, ProviderBuilder};
use crate::embedding::EmbeddingConfig;
use crate::endpoint::Endpoint;
use crate::error::RetrievalError;
use crate::mapping::{EmbeddingWire, Wire};
use crate::stitch::Chunk;
use crate::{extras, vectors, wire};

/// Cohere `/v2/embed`'s per-request input cap.
pub const MAX_TEXTS_PER_REQUEST: usize = 96;

/// The precision the mapping always requests (its response consumer reads it).
const FLOAT: &str = "float";

/// The fail-loud truncation value the mapping manages.
const TRUNCATE_NONE: &str = "NONE";

/// Builds a [`CohereEmbeddings`] provider: the shared [`ProviderBuilder`] setters (key,
/// base URL, transport) plus `chunk_size`.
pub type CohereEmbeddingsBuilder = ProviderBuilder<CohereEmbeddings>;

impl ProviderBuilder<CohereEmbeddings> {
    /// Builds the provider.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty model, a base URL that is not
    /// `http(s)`, a chunk size outside `1..=96`, or a client that cannot be built.
    pub fn build(self) -> Result<CohereEmbeddings, RetrievalError> {
        let chunk_size = self.checked_chunk_size(MAX_TEXTS_PER_REQUEST)?;
        Ok(CohereEmbeddings {
            endpoint: self.conn.open()?,
            chunk_size,
        })
    }
}

/// A Cohere embedding provider (`gen_ai.system` `cohere`).
#[derive(Debug, Clone)]
pub struct CohereEmbeddings {
    endpoint: Endpoint,
    chunk_size: usize,
}

impl Chunked for CohereEmbeddings {}

/// The wire `input_type` for an OA `input_type` (absent: the bulk-indexing default).
fn wire_input_type(input_type: Option<&str>) -> Result<&'static str, RetrievalError> {
    match input_type {
        None | Some("document") => Ok("search_document"),
        Some("query") => Ok("search_query"),
        Some("classification") => Ok("classification"),
        Some("clustering") => Ok("clustering"),
        Some(other) => Err(RetrievalError::invalid_request(format!(
            "the Cohere mapping recognizes input_type `query`, `document`, `classification` \
             or `clustering`, not `{other}`"
        ))),
    }
}

/// `["float"]` merged with a well-formed extras `embedding_types` (a list of
/// strings): `"float"` first, then the caller's precisions in order, first
/// occurrence winning. A malformed value (not a list, or a non-string element) is
/// treated as absent.
fn embedding_types(extra: Option<&Value>) -> Value {
    let mut merged = vec![FLOAT.to_owned()];
    let caller: Option<Vec<&str>> = extra
        .and_then(Value::as_array)
        .and_then(|list| list.iter().map(Value::as_str).collect());
    for precision in caller.unwrap_or_default() {
        if !merged.iter().any(|p| p == precision) {
            merged.push(precision.to_owned());
        }
    }
    Value::Array(merged.into_iter().map(Value::String).collect())
}

impl CohereEmbeddings {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> CohereEmbeddingsBuilder {
        ProviderBuilder::<Self>::new(model, DEFAULT_ORIGIN).chunk_size(MAX_TEXTS_PER_REQUEST)
    }

    /// The wire body for one chunk (key order: model, input_type, texts,
    /// embedding_types, truncate, output_dimension, then the extras in the caller's
    /// order).
    ///
    /// # Errors
    /// `provider_invalid_request` for an `input_type` outside the recognized set, or
    /// an extras `truncate` / `input_type` / `output_dimension` conflicting with the
    /// value the mapping produces.
    pub fn wire_body(
        &self,
        input: &[String],
        config: &EmbeddingConfig,
    ) -> Result<Value, RetrievalError> {
        let bag = &config.extras;
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.endpoint.model.clone()));
        let input_type = wire_input_type(config.input_type.as_deref())?;
        extras::insert_managed(&mut body, bag, "input_type", Value::from(input_type))?;
        body.insert("texts".into(), wire::strings(input, None));
        body.insert(
            "embedding_types".into(),
            embedding_types(bag.get("embedding_types")),
        );
        extras::insert_managed(&mut body, bag, "truncate", Value::from(TRUNCATE_NONE))?;
        if let Some(d) = config.dimensions {
            extras::insert_managed(&mut body, bag, "output_dimension", Value::from(d))?;
        }
        extras::append(&mut body, bag, &[]);
        Ok(Value::Object(body))
    }
}

impl EmbeddingWire for CohereEmbeddings {
    const WIRE: Wire = Wire::new("cohere", "/v2/embed");

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
        let floats = raw
            .get("embeddings")
            .and_then(|e| e.get(FLOAT))
            .ok_or_else(|| {
                RetrievalError::invalid_response("the response has no `embeddings.float` list")
            })?;
        let billed = raw.get("meta").and_then(|m| m.get("billed_units"));
        Ok(Chunk {
            vectors: vectors::decode_bare(floats)?,
            input_tokens: wire::count(billed.and_then(|b| b.get("input_tokens"))),
            response_id: wire::identifier(raw.get("id")),
            model: wire::model(raw.get("model")),
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

    fn body(config: EmbeddingConfig) -> Result<Value, RetrievalError> {
        let p = CohereEmbeddings::builder("cohere-embed-test")
            .build()
            .unwrap();
        p.wire_body(&["x".into()], &config)
    }

    #[test]
    fn input_type_is_mandatory_on_the_wire_from_a_recognized_set() {
        let plain = body(EmbeddingConfig::new()).unwrap();
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"model":"cohere-embed-test","input_type":"search_document","texts":["x"],"embedding_types":["float"],"truncate":"NONE"}"#
        );
        for (oa, wire) in [
            ("query", "search_query"),
            ("document", "search_document"),
            ("classification", "classification"),
            ("clustering", "clustering"),
        ] {
            let b = body(EmbeddingConfig::new().input_type(oa)).unwrap();
            assert_eq!(b["input_type"], json!(wire), "{oa}");
        }
        let image = body(EmbeddingConfig::new().input_type("image")).unwrap_err();
        assert_eq!(image.category(), RetrievalCategory::InvalidRequest);
    }

    #[test]
    fn embedding_types_merge_with_float_and_malformed_values_are_absent() {
        let merged = |extra: Value| {
            body(EmbeddingConfig::new().extra("embedding_types", extra)).unwrap()["embedding_types"]
                .clone()
        };
        assert_eq!(merged(json!(["int8"])), json!(["float", "int8"]));
        assert_eq!(
            merged(json!(["int8", "float", "int8", "uint8"])),
            json!(["float", "int8", "uint8"])
        );
        assert_eq!(merged(json!(["int8", {"x": 1}])), json!(["float"]));
        assert_eq!(merged(json!(5)), json!(["float"]));
    }

    #[test]
    fn truncate_and_declared_realizations_are_managed() {
        let clash = body(EmbeddingConfig::new().extra("truncate", json!("END")));
        assert_eq!(
            clash.unwrap_err().category(),
            RetrievalCategory::InvalidRequest
        );
        let same = body(EmbeddingConfig::new().extra("truncate", json!("NONE"))).unwrap();
        assert_eq!(same["truncate"], json!("NONE"));
        let dims = body(EmbeddingConfig::new().dimensions(8)).unwrap();
        assert_eq!(dims["output_dimension"], json!(8));
        let dims_clash = EmbeddingConfig::new()
            .dimensions(8)
            .extra("output_dimension", json!(16));
        assert!(body(dims_clash).is_err());
        // Without the declared field the extras key rides untouched (§10 escape hatch).
        let free = body(EmbeddingConfig::new().extra("output_dimension", json!(16))).unwrap();
        assert_eq!(free["output_dimension"], json!(16));
        let type_clash = EmbeddingConfig::new().extra("input_type", json!("search_query"));
        assert!(body(type_clash).is_err());
        assert!(CohereEmbeddings::builder("m")
            .chunk_size(97)
            .build()
            .is_err());
    }
}
