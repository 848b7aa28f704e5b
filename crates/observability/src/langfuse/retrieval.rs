//! Spec: observability §8.4.5 (Embedding observations) and §8.4.7 (Retriever
//! observations), sourced from the §5.5.8 / §5.5.13 span attributes.
//!
//! `model` is the response model, else the request model; `usageDetails` carries only
//! the reported figures (`input`, and `searchUnits` for rerank); identity metadata
//! under the `openarmature_*` keys; `input` / `output` only when the payload
//! attributes are on the span (provider payload enabled). A failed call (its span
//! carries `openarmature.error.category`) is at ERROR with the category as the status
//! message (set by the generic mapping), `error_type` / `error_message` from the
//! span's exception event, and no `output`.

use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};

use super::attrs::{count, string};
use super::model::{Level, Observation};
use super::observation::{copy_keys, parse_or_raw};
use crate::attributes as a;
use crate::otel::LANGFUSE_EMBEDDING_OUTPUT;

/// §8.4.5: embedding span attribute → `embedding.metadata` key.
const EMBEDDING_KEYS: &[(&str, &str)] = &[
    (a::EMBEDDING_INPUT_COUNT, "openarmature_input_count"),
    (a::EMBEDDING_DIMENSIONS, "openarmature_dimensions"),
    (a::GEN_AI_RESPONSE_ID, "openarmature_response_id"),
];

/// §8.4.7: rerank span attribute → `retriever.metadata` key.
const RERANK_KEYS: &[(&str, &str)] = &[
    (a::RERANK_QUERY_LENGTH, "openarmature_query_length"),
    (a::RERANK_DOCUMENT_COUNT, "openarmature_document_count"),
    (a::RERANK_TOP_K, "openarmature_top_k"),
    (a::RERANK_RESULT_COUNT, "openarmature_result_count"),
    (a::GEN_AI_RESPONSE_ID, "openarmature_response_id"),
];

fn model(span: &SpanData, o: &mut Observation) {
    o.model =
        string(span, a::GEN_AI_RESPONSE_MODEL).or_else(|| string(span, a::GEN_AI_REQUEST_MODEL));
}

/// A failed call: its exception event's type and message in metadata.
fn failure(span: &SpanData, o: &mut Observation) -> bool {
    if o.level != Level::Error {
        return false;
    }
    let event = span.events.iter().find(|e| e.name == a::EXCEPTION_EVENT);
    let field = |key: &str| {
        event
            .and_then(|e| e.attributes.iter().find(|kv| kv.key.as_str() == key))
            .map(|kv| match &kv.value {
                OtelValue::String(s) => Value::String(s.to_string()),
                other => Value::String(other.to_string()),
            })
            .unwrap_or(Value::Null)
    };
    o.metadata
        .insert("error_type".into(), field(a::EXCEPTION_TYPE));
    o.metadata
        .insert("error_message".into(), field(a::EXCEPTION_MESSAGE));
    true
}

/// §8.4.5: one `embed()` call.
pub(crate) fn embedding(span: &SpanData, o: &mut Observation) {
    model(span, o);
    copy_keys(span, EMBEDDING_KEYS, &mut o.metadata);
    let mut details = Map::new();
    if let Some(n) = count(span, a::GEN_AI_USAGE_INPUT_TOKENS) {
        details.insert("input".into(), Value::from(n));
    }
    o.usage_details = Some(details);
    if let Some(text) = string(span, a::EMBEDDING_INPUT_STRINGS) {
        o.input = Some(parse_or_raw(text));
    }
    if !failure(span, o) {
        if let Some(text) = string(span, LANGFUSE_EMBEDDING_OUTPUT) {
            o.output = Some(parse_or_raw(text));
        }
    }
}

/// §8.4.7: one `rerank()` call.
pub(crate) fn retriever(span: &SpanData, o: &mut Observation) {
    model(span, o);
    copy_keys(span, RERANK_KEYS, &mut o.metadata);
    let mut details = Map::new();
    if let Some(n) = count(span, a::GEN_AI_USAGE_INPUT_TOKENS) {
        details.insert("input".into(), Value::from(n));
    }
    if let Some(n) = count(span, a::RERANK_SEARCH_UNITS) {
        details.insert("searchUnits".into(), Value::from(n));
    }
    o.usage_details = Some(details);
    if let Some(query) = string(span, a::RERANK_QUERY) {
        let documents = string(span, a::RERANK_DOCUMENTS).map_or(Value::Null, parse_or_raw);
        let mut input = Map::new();
        input.insert("query".into(), Value::String(query));
        input.insert("documents".into(), documents);
        o.input = Some(Value::Object(input));
    }
    if !failure(span, o) {
        if let Some(text) = string(span, a::RERANK_RESULTS) {
            o.output = Some(parse_or_raw(text));
        }
    }
}
