//! Spec: retrieval-provider §8 *Batch chunking* (embedding side): consecutive chunks
//! of at most the provider's cap, one request each with every other field identical,
//! vectors concatenated in input order, usage summed only when every chunk reported
//! a well-formed figure, the first chunk's response id, and `raw` the list of the
//! per-chunk responses (a single request's `raw` is that response).

use std::future::Future;

use crate::embedding::{EmbeddingResponse, EmbeddingUsage};
use crate::error::RetrievalError;
use crate::wire;

/// What one chunk's request returned, read by its mapping.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The chunk's vectors, in the chunk's input order.
    pub(crate) vectors: Vec<Vec<f64>>,
    /// The chunk's input tokens (`None`: not reported, or malformed).
    pub(crate) input_tokens: Option<u64>,
    /// The chunk's response id.
    pub(crate) response_id: Option<String>,
    /// The model the chunk's response names.
    pub(crate) model: Option<String>,
    /// The chunk's response verbatim.
    pub(crate) raw: serde_json::Value,
}

impl Chunk {
    /// A `{data: [{index, embedding}], usage: {<tokens>}, id?, model?}` answer (the
    /// OpenAI-compatible and Jina shape), `tokens` naming the usage figure.
    ///
    /// # Errors
    /// `provider_invalid_response` when `data` cannot be decoded.
    pub(crate) fn from_data(raw: serde_json::Value, tokens: &str) -> Result<Self, RetrievalError> {
        Ok(Chunk {
            vectors: crate::vectors::decode_data(&raw)?,
            input_tokens: wire::count(raw.get("usage").and_then(|u| u.get(tokens))),
            response_id: wire::identifier(raw.get("id")),
            model: wire::model(raw.get("model")),
            raw,
        })
    }
}

/// Embeds `input` in chunks of at most `chunk_size`, `send` making one request per
/// chunk, and stitches the answers (the response model falls back to `bound_model`).
///
/// # Errors
/// The first chunk's error; `provider_invalid_response` when a chunk's vector count
/// differs from its input count or the stitched vectors break §4.
pub(crate) async fn embed_in_chunks<'a, F, Fut>(
    input: &'a [String],
    chunk_size: usize,
    bound_model: &str,
    mut send: F,
) -> Result<EmbeddingResponse, RetrievalError>
where
    F: FnMut(&'a [String]) -> Fut,
    Fut: Future<Output = Result<Chunk, RetrievalError>>,
{
    let mut vectors = Vec::with_capacity(input.len());
    let mut raws = Vec::new();
    let mut usage_sum: Option<u64> = Some(0);
    let mut first: Option<(Option<String>, Option<String>)> = None;
    for chunk in input.chunks(chunk_size.max(1)) {
        let reply = send(chunk).await?;
        if reply.vectors.len() != chunk.len() {
            return Err(RetrievalError::invalid_response(format!(
                "the provider returned {} vectors for {} inputs",
                reply.vectors.len(),
                chunk.len()
            )));
        }
        vectors.extend(reply.vectors);
        usage_sum = usage_sum
            .zip(reply.input_tokens)
            .map(|(a, b)| a.saturating_add(b));
        first.get_or_insert((reply.response_id, reply.model));
        raws.push(reply.raw);
    }
    let (response_id, model) = first.unwrap_or_default();
    EmbeddingResponse::checked(
        vectors,
        input.len(),
        model.unwrap_or_else(|| bound_model.to_owned()),
        usage_sum.map(|input_tokens| EmbeddingUsage { input_tokens }),
        response_id,
        wire::stitch_raw(raws),
    )
}
