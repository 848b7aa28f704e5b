//! Spec: graph-engine §6 (typed embedding and rerank events) — the fixture-facing
//! records of `EmbeddingEvent` / `EmbeddingFailedEvent` / `RerankEvent` /
//! `RerankFailedEvent`, under the spec's field names.

use openarmature_core::vocab::prompt::PromptContext;
use openarmature_core::vocab::retrieval::{EmbeddingRequestSummary, RerankRequestSummary};
use openarmature_graph::{CallSite, ObserverEvent};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::typed::{request_context, request_identity, site_fields};

fn embedding_request(m: &mut Map<String, Value>, r: &EmbeddingRequestSummary) {
    request_identity(m, json!(r.provider), json!(r.model), json!(r.call_id));
    m.insert("input_strings".into(), json!(&*r.input_strings));
    m.insert("input_count".into(), json!(r.input_count()));
    context(m, &r.request_params, &r.request_extras, &r.prompt_context);
}

fn rerank_request(m: &mut Map<String, Value>, r: &RerankRequestSummary) {
    request_identity(m, json!(r.provider), json!(r.model), json!(r.call_id));
    m.insert("query".into(), json!(r.query));
    m.insert("documents".into(), json!(&*r.documents));
    m.insert("document_count".into(), json!(r.document_count()));
    m.insert("top_k".into(), json!(r.top_k));
    context(m, &r.request_params, &r.request_extras, &r.prompt_context);
}

fn context(
    m: &mut Map<String, Value>,
    params: &Map<String, Value>,
    extras: &Map<String, Value>,
    p: &PromptContext,
) {
    request_context(m, params, extras, p.prompt(), p.group());
}

/// The outcome fields both successful retrieval events open with:
/// `[response_model, response_id, usage]`.
fn outcome_identity(
    m: &mut Map<String, Value>,
    model: impl Serialize,
    id: impl Serialize,
    usage: impl Serialize,
) {
    m.insert("response_model".into(), json!(model));
    m.insert("response_id".into(), json!(id));
    m.insert("usage".into(), json!(usage));
}

/// The fields every retrieval record opens with.
fn opening(m: &mut Map<String, Value>, event_type: &str, site: &CallSite) {
    m.insert("event_type".into(), json!(event_type));
    site_fields(m, site);
}

fn failure_fields(m: &mut Map<String, Value>, f: &openarmature_core::vocab::llm::LlmFailure) {
    m.insert("error_category".into(), json!(f.error_category));
    m.insert("error_type".into(), json!(f.error_type));
    m.insert("error_message".into(), json!(f.error_message));
}

/// The record of a retrieval event (`None` for any other event).
pub(crate) fn record(event: &ObserverEvent, caller_metadata: Value) -> Option<Value> {
    let mut m = Map::new();
    let latency_ms = match event {
        ObserverEvent::Embedding(e) => {
            opening(&mut m, "EmbeddingEvent", &e.site);
            embedding_request(&mut m, &e.request);
            let o = &e.outcome;
            outcome_identity(&mut m, &o.response_model, &o.response_id, o.usage);
            m.insert("dimensions".into(), json!(o.dimensions));
            m.insert("output_vectors".into(), json!(&*o.output_vectors));
            e.latency_ms
        }
        ObserverEvent::EmbeddingFailed(e) => {
            opening(&mut m, "EmbeddingFailedEvent", &e.site);
            embedding_request(&mut m, &e.request);
            failure_fields(&mut m, &e.failure);
            e.latency_ms
        }
        ObserverEvent::Rerank(e) => {
            opening(&mut m, "RerankEvent", &e.site);
            rerank_request(&mut m, &e.request);
            let o = &e.outcome;
            outcome_identity(&mut m, &o.response_model, &o.response_id, o.usage);
            m.insert("result_count".into(), json!(o.result_count()));
            m.insert("output_results".into(), json!(o.output_results));
            e.latency_ms
        }
        ObserverEvent::RerankFailed(e) => {
            opening(&mut m, "RerankFailedEvent", &e.site);
            rerank_request(&mut m, &e.request);
            failure_fields(&mut m, &e.failure);
            e.latency_ms
        }
        _ => return None,
    };
    m.insert("latency_ms".into(), json!(latency_ms));
    m.insert("caller_invocation_metadata".into(), caller_metadata);
    Some(Value::Object(m))
}
