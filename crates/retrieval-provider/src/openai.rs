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

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::embedding::{EmbeddingConfig, EmbeddingProvider, EmbeddingResponse, EmbeddingUsage};
use crate::error::RetrievalError;
use crate::{http, wire};

/// OpenAI's per-request input cap.
pub const MAX_INPUTS_PER_REQUEST: usize = 2048;

/// Builds an [`OpenAiEmbeddings`] provider.
#[derive(Debug, Clone)]
#[must_use]
pub struct OpenAiEmbeddingsBuilder {
    model: String,
    api_key: Option<String>,
    base_url: String,
    chunk_size: usize,
    query_prefix: Option<String>,
    document_prefix: Option<String>,
    timeout: Duration,
    client: Option<reqwest::Client>,
}

impl OpenAiEmbeddingsBuilder {
    /// The API key, sent as `Authorization: Bearer <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The server origin (default `https://api.openai.com`; `/v1` stays in the route).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The per-request input cap (default and maximum 2048; lower for servers with a
    /// smaller batch limit).
    pub fn chunk_size(mut self, inputs: usize) -> Self {
        self.chunk_size = inputs;
        self
    }

    /// Client-side prefixes for an asymmetric model behind the endpoint: prepended to
    /// every input when `input_type` is `query` / `document` (§8.3 *`input_type`*).
    pub fn prefixes(mut self, query: impl Into<String>, document: impl Into<String>) -> Self {
        self.query_prefix = Some(query.into());
        self.document_prefix = Some(document.into());
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
    /// `http(s)`, a chunk size outside `1..=2048`, or a client that cannot be built.
    pub fn build(self) -> Result<OpenAiEmbeddings, RetrievalError> {
        if self.model.is_empty() {
            return Err(RetrievalError::invalid_request("the bound model is empty"));
        }
        if !(1..=MAX_INPUTS_PER_REQUEST).contains(&self.chunk_size) {
            return Err(RetrievalError::invalid_request(format!(
                "chunk_size must be within 1..={MAX_INPUTS_PER_REQUEST}"
            )));
        }
        let base = http::base_url(&self.base_url)?;
        let client = match self.client {
            Some(c) => c,
            None => http::client(self.timeout)?,
        };
        Ok(OpenAiEmbeddings {
            model: self.model,
            api_key: self.api_key,
            base,
            chunk_size: self.chunk_size,
            query_prefix: self.query_prefix,
            document_prefix: self.document_prefix,
            client,
        })
    }
}

/// An OpenAI-compatible embedding provider (`gen_ai.system` `openai`).
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    model: String,
    api_key: Option<String>,
    base: String,
    chunk_size: usize,
    query_prefix: Option<String>,
    document_prefix: Option<String>,
    client: reqwest::Client,
}

impl OpenAiEmbeddings {
    /// Starts a builder bound to `model`.
    pub fn builder(model: impl Into<String>) -> OpenAiEmbeddingsBuilder {
        OpenAiEmbeddingsBuilder {
            model: model.into(),
            api_key: None,
            base_url: "https://api.openai.com".into(),
            chunk_size: MAX_INPUTS_PER_REQUEST,
            query_prefix: None,
            document_prefix: None,
            timeout: Duration::from_secs(300),
            client: None,
        }
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
        let input: Vec<Value> = input
            .iter()
            .map(|s| Value::String(format!("{}{s}", prefix.unwrap_or(""))))
            .collect();
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert("input".into(), Value::Array(input));
        if let Some(d) = config.dimensions {
            if let Some(extra) = config.extras.get("dimensions") {
                if extra.as_u64() != Some(u64::from(d)) {
                    return Err(RetrievalError::invalid_request(format!(
                        "extras `dimensions` ({extra}) conflicts with the declared dimensions ({d})"
                    )));
                }
            }
            body.insert("dimensions".into(), Value::from(d));
        }
        for (k, v) in &config.extras {
            if !body.contains_key(k) {
                body.insert(k.clone(), v.clone());
            }
        }
        Ok(Value::Object(body))
    }

    async fn embed_all(
        &self,
        input: &[String],
        config: &EmbeddingConfig,
    ) -> Result<EmbeddingResponse, RetrievalError> {
        let url = format!("{}/v1/embeddings", self.base);
        let chunks: Vec<&[String]> = input.chunks(self.chunk_size).collect();
        let mut vectors = Vec::with_capacity(input.len());
        let mut raws = Vec::with_capacity(chunks.len());
        let mut usage_sum: Option<u64> = Some(0);
        let mut response_id = None;
        let mut model = None;
        for (i, chunk) in chunks.iter().enumerate() {
            let body = self.wire_body(chunk, config)?;
            let raw = http::post_json(&self.client, &url, self.api_key.as_deref(), &body).await?;
            let chunk_vectors = decode_data(&raw)?;
            if chunk_vectors.len() != chunk.len() {
                return Err(RetrievalError::invalid_response(format!(
                    "the provider returned {} vectors for {} inputs",
                    chunk_vectors.len(),
                    chunk.len()
                )));
            }
            vectors.extend(chunk_vectors);
            let tokens = wire::count(raw.get("usage").and_then(|u| u.get("prompt_tokens")));
            usage_sum = usage_sum.zip(tokens).map(|(a, b)| a.saturating_add(b));
            if i == 0 {
                response_id = wire::identifier(raw.get("id"));
                model = wire::model(raw.get("model"));
            }
            raws.push(raw);
        }
        let raw = if raws.len() == 1 {
            raws.pop().unwrap_or(Value::Null)
        } else {
            Value::Array(raws)
        };
        EmbeddingResponse::checked(
            vectors,
            input.len(),
            model.unwrap_or_else(|| self.model.clone()),
            usage_sum.map(|input_tokens| EmbeddingUsage { input_tokens }),
            response_id,
            raw,
        )
    }
}

impl EmbeddingProvider for OpenAiEmbeddings {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        "openai"
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
        input: &'a [String],
        config: &'a EmbeddingConfig,
    ) -> BoxFuture<'a, Result<EmbeddingResponse, RetrievalError>> {
        Box::pin(self.embed_all(input, config))
    }
}

/// The vectors of one response's `data`, in input order (by `index` when every entry
/// carries a distinct one, else as listed).
fn decode_data(raw: &Value) -> Result<Vec<Vec<f64>>, RetrievalError> {
    let data = raw
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| RetrievalError::invalid_response("the response has no `data` list"))?;
    let mut entries = Vec::with_capacity(data.len());
    for (pos, item) in data.iter().enumerate() {
        let vector = decode_embedding(item.get("embedding"))
            .map_err(|why| RetrievalError::invalid_response(format!("data[{pos}]: {why}")))?;
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok());
        entries.push((index, vector));
    }
    let mut indices: Vec<usize> = entries.iter().filter_map(|(i, _)| *i).collect();
    indices.sort_unstable();
    let keyed = indices.len() == entries.len() && indices.iter().copied().eq(0..entries.len());
    if keyed {
        entries.sort_by_key(|(i, _)| *i);
    }
    Ok(entries.into_iter().map(|(_, v)| v).collect())
}

/// One `embedding` by its wire shape.
fn decode_embedding(v: Option<&Value>) -> Result<Vec<f64>, String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|x| x.as_f64().filter(|_| x.is_number()))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| "the embedding array holds a non-number".to_owned()),
        Some(Value::String(text)) => {
            let bytes = crate::base64::decode(text).ok_or("the embedding is not valid base64")?;
            if bytes.len() % 4 != 0 {
                return Err(format!(
                    "the base64 embedding decodes to {} bytes, not a whole number of float32s",
                    bytes.len()
                ));
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect())
        }
        Some(other) => Err(format!(
            "the embedding is neither a number array nor base64: {other}"
        )),
        None => Err("the entry has no embedding".to_owned()),
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

    #[test]
    fn data_is_decoded_by_shape_and_ordered_by_index() {
        // 1.0f32 and 2.0f32, little-endian: 0000803f 00000040.
        let raw = json!({"data": [
            {"index": 1, "embedding": "AACAPwAAAEA="},
            {"index": 0, "embedding": [0.5, 0.25]},
        ]});
        assert_eq!(
            decode_data(&raw).unwrap(),
            vec![vec![0.5, 0.25], vec![1.0, 2.0]]
        );
        for bad in [
            json!(null),
            json!(3),
            json!(["x"]),
            json!("@@@"),
            json!("AAA="),
        ] {
            let raw = json!({"data": [{"index": 0, "embedding": bad}]});
            assert!(decode_data(&raw).is_err(), "{bad}");
        }
    }
}
