//! Spec: graph-engine §6 (typed embedding and rerank events) — the fixture-facing
//! records of `EmbeddingEvent` / `EmbeddingFailedEvent` / `RerankEvent` /
//! `RerankFailedEvent`, under the spec's field names.

use openarmature_core::vocab::prompt::PromptContext;
use openarmature_core::vocab::retrieval::{EmbeddingRequestSummary, RerankRequestSummary};
use openarmature_graph::ObserverEvent;
use serde_json::{json, Map, Value};

use super::typed::site_fields;

fn prompt_fields(m: &mut Map<String, Value>, p: &PromptContext) {
    m.insert(
        "active_prompt".into(),
        p.prompt().map_or(Value::Null, |p| {
            json!({
                "name": p.name,
                "version": p.version,
                "label": p.label,
                "template_hash": p.template_hash,
                "rendered_hash": p.rendered_hash,
            })
        }),
    );
    m.insert(
        "active_prompt_group".into(),
        p.group()
            .map_or(Value::Null, |g| json!({"group_name": g.group_name})),
    );
}

fn embedding_request(m: &mut Map<String, Value>, r: &EmbeddingRequestSummary) {
    m.insert("provider".into(), json!(r.provider));
    m.insert("model".into(), json!(r.model));
    m.insert("call_id".into(), json!(r.call_id));
    m.insert("input_strings".into(), json!(&*r.input_strings));
    m.insert("input_count".into(), json!(r.input_count()));
    m.insert(
        "request_params".into(),
        Value::Object(r.request_params.clone()),
    );
    m.insert(
        "request_extras".into(),
        Value::Object(r.request_extras.clone()),
    );
    prompt_fields(m, &r.prompt_context);
}

fn rerank_request(m: &mut Map<String, Value>, r: &RerankRequestSummary) {
    m.insert("provider".into(), json!(r.provider));
    m.insert("model".into(), json!(r.model));
    m.insert("call_id".into(), json!(r.call_id));
    m.insert("query".into(), json!(r.query));
    m.insert("documents".into(), json!(&*r.documents));
    m.insert("document_count".into(), json!(r.document_count()));
    m.insert("top_k".into(), json!(r.top_k));
    m.insert(
        "request_params".into(),
        Value::Object(r.request_params.clone()),
    );
    m.insert(
        "request_extras".into(),
        Value::Object(r.request_extras.clone()),
    );
    prompt_fields(m, &r.prompt_context);
}

fn failure_fields(m: &mut Map<String, Value>, f: &openarmature_core::vocab::llm::LlmFailure) {
    m.insert("error_category".into(), json!(f.error_category));
    m.insert("error_type".into(), json!(f.error_type));
    m.insert("error_message".into(), json!(f.error_message));
}

/// The record of a retrieval event (`None` for any other event).
pub(crate) fn record(event: &ObserverEvent, caller_metadata: Value) -> Option<Value> {
    let mut m = Map::new();
    match event {
        ObserverEvent::Embedding(e) => {
            m.insert("event_type".into(), json!("EmbeddingEvent"));
            site_fields(&mut m, &e.site);
            embedding_request(&mut m, &e.request);
            let o = &e.outcome;
            m.insert("response_model".into(), json!(o.response_model));
            m.insert("response_id".into(), json!(o.response_id));
            m.insert("usage".into(), json!(o.usage));
            m.insert("dimensions".into(), json!(o.dimensions));
            m.insert("output_vectors".into(), json!(&*o.output_vectors));
            m.insert("latency_ms".into(), json!(e.latency_ms));
        }
        ObserverEvent::EmbeddingFailed(e) => {
            m.insert("event_type".into(), json!("EmbeddingFailedEvent"));
            site_fields(&mut m, &e.site);
            embedding_request(&mut m, &e.request);
            failure_fields(&mut m, &e.failure);
            m.insert("latency_ms".into(), json!(e.latency_ms));
        }
        ObserverEvent::Rerank(e) => {
            m.insert("event_type".into(), json!("RerankEvent"));
            site_fields(&mut m, &e.site);
            rerank_request(&mut m, &e.request);
            let o = &e.outcome;
            m.insert("response_model".into(), json!(o.response_model));
            m.insert("response_id".into(), json!(o.response_id));
            m.insert("usage".into(), json!(o.usage));
            m.insert("result_count".into(), json!(o.result_count()));
            m.insert("output_results".into(), json!(o.output_results));
            m.insert("latency_ms".into(), json!(e.latency_ms));
        }
        ObserverEvent::RerankFailed(e) => {
            m.insert("event_type".into(), json!("RerankFailedEvent"));
            site_fields(&mut m, &e.site);
            rerank_request(&mut m, &e.request);
            failure_fields(&mut m, &e.failure);
            m.insert("latency_ms".into(), json!(e.latency_ms));
        }
        _ => return None,
    }
    m.insert("caller_invocation_metadata".into(), caller_metadata);
    Some(Value::Object(m))
}
