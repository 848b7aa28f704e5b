//! Spec: observability §5.5.8 / §5.5.9 (embedding span from the typed embedding
//! events) and §5.5.13 / §5.5.14 (rerank span from the typed rerank events).
//!
//! One `openarmature.embedding.complete` / `openarmature.rerank.complete` span per
//! call, made from its terminal event and parented under the calling node's span
//! (lineage-resolved, with the orphan fallback). The GenAI subset is gated by
//! `disable_genai_semconv`, the payload attributes by `disable_provider_payload`
//! (and truncated to the payload cap); usage attributes appear only when reported.
//! A failure carries `openarmature.error.category`, `error.type` (the category), an
//! `exception` event (the vendor error type, else the category, and the message) and
//! an ERROR status. `disable_llm_spans` does not apply.

use std::time::SystemTime;

use openarmature_core::vocab::llm::LlmFailure;
use openarmature_core::vocab::retrieval::{
    EmbeddingEvent, EmbeddingFailedEvent, EmbeddingRequestSummary, RerankEvent, RerankFailedEvent,
    RerankRequestSummary,
};
use openarmature_graph::CallSite;
use opentelemetry::trace::{Span, Status};
use opentelemetry::KeyValue;
use serde_json::Value;

use super::call_span::{fail_span, FinishedCall};
use super::{InvState, TracerDyn};
use crate::attributes as attr;
use crate::otel::Config;
use crate::payload::{canonical_json, truncate};

/// Private attribute the Langfuse capture renders the vectors through (§8.4.5
/// `embedding.output`); never set on a caller's OTel observer.
pub(crate) const LANGFUSE_EMBEDDING_OUTPUT: &str = "openarmature.embedding.output.vectors";

/// What one finished retrieval call renders.
struct CallSpan<'a> {
    name: &'static str,
    site: &'a CallSite,
    latency_ms: Option<f64>,
    at: SystemTime,
    attrs: Vec<KeyValue>,
    failure: Option<&'a LlmFailure>,
}

fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn int64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn json_attr(key: &'static str, value: &Value, config: &Config) -> KeyValue {
    KeyValue::new(
        key,
        truncate(canonical_json(value), config.payload_byte_cap),
    )
}

/// The GenAI subset shared by both span kinds.
fn genai(
    provider: &str,
    model: &str,
    response_model: Option<&String>,
    response_id: Option<&String>,
    input_tokens: Option<u64>,
    config: &Config,
) -> Vec<KeyValue> {
    if config.disable_genai_semconv {
        return Vec::new();
    }
    let mut attrs = vec![
        KeyValue::new(attr::GEN_AI_SYSTEM, provider.to_owned()),
        KeyValue::new(attr::GEN_AI_REQUEST_MODEL, model.to_owned()),
    ];
    if let Some(m) = response_model {
        attrs.push(KeyValue::new(attr::GEN_AI_RESPONSE_MODEL, m.clone()));
    }
    if let Some(id) = response_id {
        attrs.push(KeyValue::new(attr::GEN_AI_RESPONSE_ID, id.clone()));
    }
    if let Some(n) = input_tokens {
        attrs.push(KeyValue::new(attr::GEN_AI_USAGE_INPUT_TOKENS, int64(n)));
    }
    attrs
}

fn embedding_request(r: &EmbeddingRequestSummary, config: &Config) -> Vec<KeyValue> {
    let mut attrs = vec![KeyValue::new(
        attr::EMBEDDING_INPUT_COUNT,
        int(r.input_count()),
    )];
    if let Some(t) = r.request_params.get("input_type").and_then(Value::as_str) {
        attrs.push(KeyValue::new(attr::EMBEDDING_INPUT_TYPE, t.to_owned()));
    }
    if !config.disable_provider_payload {
        let strings = Value::from(r.input_strings.to_vec());
        attrs.push(json_attr(attr::EMBEDDING_INPUT_STRINGS, &strings, config));
        if !r.request_extras.is_empty() {
            let extras = Value::Object(r.request_extras.clone());
            attrs.push(json_attr(attr::EMBEDDING_REQUEST_EXTRAS, &extras, config));
        }
    }
    attrs
}

fn rerank_request(r: &RerankRequestSummary, config: &Config) -> Vec<KeyValue> {
    let mut attrs = vec![
        KeyValue::new(attr::RERANK_QUERY_LENGTH, int(r.query_length())),
        KeyValue::new(attr::RERANK_DOCUMENT_COUNT, int(r.document_count())),
    ];
    if let Some(k) = r.top_k {
        attrs.push(KeyValue::new(attr::RERANK_TOP_K, i64::from(k)));
    }
    if !config.disable_provider_payload {
        attrs.push(KeyValue::new(
            attr::RERANK_QUERY,
            truncate(r.query.clone(), config.payload_byte_cap),
        ));
        let documents = Value::from(r.documents.to_vec());
        attrs.push(json_attr(attr::RERANK_DOCUMENTS, &documents, config));
    }
    attrs
}

impl InvState {
    /// The span of one successful `embed()` call.
    pub(crate) fn on_embedding(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        e: &EmbeddingEvent,
    ) {
        let o = &e.outcome;
        let r = &e.request;
        let mut attrs = genai(
            &r.provider,
            &r.model,
            o.response_model.as_ref(),
            o.response_id.as_ref(),
            o.usage.map(|u| u.input_tokens),
            config,
        );
        attrs.extend(embedding_request(r, config));
        if let Some(d) = o.dimensions {
            attrs.push(KeyValue::new(attr::EMBEDDING_DIMENSIONS, int64(d)));
        }
        if config.langfuse_outputs && !config.disable_provider_payload {
            let vectors = serde_json::to_value(&*o.output_vectors).unwrap_or(Value::Null);
            attrs.push(json_attr(LANGFUSE_EMBEDDING_OUTPUT, &vectors, config));
        }
        self.retrieval_span(
            tracer,
            config,
            CallSpan {
                name: attr::EMBEDDING_SPAN,
                site: &e.site,
                latency_ms: e.latency_ms,
                at: e.at,
                attrs,
                failure: None,
            },
        );
    }

    /// The span of one failed `embed()` call.
    pub(crate) fn on_embedding_failed(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        e: &EmbeddingFailedEvent,
    ) {
        let r = &e.request;
        let mut attrs = genai(&r.provider, &r.model, None, None, None, config);
        attrs.extend(embedding_request(r, config));
        self.retrieval_span(
            tracer,
            config,
            CallSpan {
                name: attr::EMBEDDING_SPAN,
                site: &e.site,
                latency_ms: e.latency_ms,
                at: e.at,
                attrs,
                failure: Some(&e.failure),
            },
        );
    }

    /// The span of one successful `rerank()` call.
    pub(crate) fn on_rerank(&mut self, tracer: &dyn TracerDyn, config: &Config, e: &RerankEvent) {
        let o = &e.outcome;
        let r = &e.request;
        let mut attrs = genai(
            &r.provider,
            &r.model,
            o.response_model.as_ref(),
            o.response_id.as_ref(),
            o.usage.and_then(|u| u.input_tokens),
            config,
        );
        attrs.extend(rerank_request(r, config));
        attrs.push(KeyValue::new(
            attr::RERANK_RESULT_COUNT,
            int(o.result_count()),
        ));
        if let Some(n) = o.usage.and_then(|u| u.search_units) {
            attrs.push(KeyValue::new(attr::RERANK_SEARCH_UNITS, int64(n)));
        }
        if !config.disable_provider_payload {
            let results = serde_json::to_value(&o.output_results).unwrap_or(Value::Null);
            attrs.push(json_attr(attr::RERANK_RESULTS, &results, config));
        }
        self.retrieval_span(
            tracer,
            config,
            CallSpan {
                name: attr::RERANK_SPAN,
                site: &e.site,
                latency_ms: e.latency_ms,
                at: e.at,
                attrs,
                failure: None,
            },
        );
    }

    /// The span of one failed `rerank()` call.
    pub(crate) fn on_rerank_failed(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        e: &RerankFailedEvent,
    ) {
        let r = &e.request;
        let mut attrs = genai(&r.provider, &r.model, None, None, None, config);
        attrs.extend(rerank_request(r, config));
        self.retrieval_span(
            tracer,
            config,
            CallSpan {
                name: attr::RERANK_SPAN,
                site: &e.site,
                latency_ms: e.latency_ms,
                at: e.at,
                attrs,
                failure: Some(&e.failure),
            },
        );
    }

    fn retrieval_span(&mut self, tracer: &dyn TracerDyn, config: &Config, call: CallSpan<'_>) {
        let now = SystemTime::now();
        let unit = self.enter_call(tracer, config, call.site, now);
        let mut attrs = call.attrs;
        if let Some(f) = call.failure {
            attrs.push(KeyValue::new(
                attr::ERROR_CATEGORY,
                f.error_category.clone(),
            ));
            attrs.push(KeyValue::new(attr::ERROR_TYPE, f.error_category.clone()));
        }
        let finished = FinishedCall {
            site: call.site,
            latency_ms: call.latency_ms,
            at: call.at,
        };
        let (mut open, end) = self.start_call_span(tracer, call.name, &unit, &finished, attrs, now);
        match call.failure {
            None => open.span.set_status(Status::Ok),
            Some(f) => {
                let error_type = f
                    .error_type
                    .clone()
                    .unwrap_or_else(|| f.error_category.clone());
                fail_span(&mut open, error_type, &f.error_message, end);
            }
        }
        open.span.end_with_timestamp(end);
    }
}
