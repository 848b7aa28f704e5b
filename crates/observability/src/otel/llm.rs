//! Spec: observability §5.5 (baseline LLM span attributes), §5.5.1 (payload,
//! default-off), §5.5.2 (request parameters), §5.5.3 / §5.5.3.1 (GenAI response and
//! cache attributes), §5.5.4 (opt-out flags), §5.5.5 (truncation, image redaction),
//! §5.5.10 (tool-call identity projections); llm-provider §7.1 (one span per wire
//! attempt, `openarmature.llm.attempt_index`, `openarmature.llm.retry_reason`) and
//! extension 0001 (`openarmature.llm.logical_call_id`).
//!
//! Everything is rendered from the per-attempt [`LlmAttemptEvent`]: its request side
//! is the attempt's own transcript and effective config, its outcome the attempt's
//! response or error. Inline image bytes never reach this module: the event's
//! `input_messages` carry the §5.5.5 placeholder already.

use openarmature_core::vocab::llm::{LlmAttemptEvent, LlmAttemptOutcome, LlmResponseSummary};
use opentelemetry::{Array, KeyValue, StringValue, Value as OtelValue};
use serde_json::Value;

use super::state::Failure;
use super::Config;
use crate::attributes as attr;
use crate::payload::{canonical_json, truncate};

/// The attributes of one attempt's span, and its failure (if it failed).
pub(crate) fn attempt_attributes(
    e: &LlmAttemptEvent,
    config: &Config,
) -> (Vec<KeyValue>, Option<Failure>) {
    let mut attrs = vec![
        KeyValue::new(attr::LLM_MODEL, e.request.model.clone()),
        KeyValue::new(attr::LLM_ATTEMPT_INDEX, i64::from(e.attempt_index)),
    ];
    // Extension 0001: the logical call (an emitter that derived none: the call is its
    // own logical call).
    match &e.request.logical_call_id {
        Some(id) => attrs.push(KeyValue::new(attr::LLM_LOGICAL_CALL_ID, id.clone())),
        None if !e.request.call_id.is_empty() => attrs.push(KeyValue::new(
            attr::LLM_LOGICAL_CALL_ID,
            format!("{}:{}", e.site.invocation_id, e.request.call_id),
        )),
        None => {}
    }
    if e.attempt_index > 0 {
        if let Some(reason) = e.retry_reason {
            attrs.push(KeyValue::new(attr::LLM_RETRY_REASON, reason.as_str()));
        }
    }
    let genai = !config.disable_genai_semconv;
    if genai {
        attrs.push(KeyValue::new(
            attr::GEN_AI_SYSTEM,
            e.request.provider.clone(),
        ));
        attrs.push(KeyValue::new(
            attr::GEN_AI_REQUEST_MODEL,
            e.request.model.clone(),
        ));
        for (name, value) in e.request.request_params.iter() {
            if let Some(v) = param_value(value) {
                attrs.push(KeyValue::new(
                    format!("{}{name}", attr::GEN_AI_REQUEST_PREFIX),
                    v,
                ));
            }
        }
    }
    let payload = !config.disable_provider_payload;
    if payload {
        let cap = config.payload_byte_cap;
        let messages = Value::Array(e.request.input_messages.to_vec());
        attrs.push(KeyValue::new(
            attr::LLM_INPUT_MESSAGES,
            truncate(canonical_json(&messages), cap),
        ));
        if !e.request.request_extras.is_empty() {
            let extras = Value::Object(e.request.request_extras.clone());
            attrs.push(KeyValue::new(
                attr::LLM_REQUEST_EXTRAS,
                truncate(canonical_json(&extras), cap),
            ));
        }
    }
    let (response, failure) = match &e.outcome {
        LlmAttemptOutcome::Completed(r) => (Some(&**r), None),
        LlmAttemptOutcome::Failed { failure, response } => (
            response.as_ref(),
            Some(Failure {
                category: failure.error_category.clone(),
                message: failure.error_message.clone(),
            }),
        ),
        _ => (None, None),
    };
    super::prompt::prompt_attributes(&e.request, response, &mut attrs);
    if config.langfuse_prompt_reference {
        if let Some(reference) = e
            .request
            .prompt_context
            .prompt()
            .and_then(|p| p.langfuse_prompt.clone())
        {
            attrs.push(KeyValue::new(
                crate::langfuse::PROMPT_REFERENCE_ATTR,
                reference,
            ));
        }
    }
    if let Some(r) = response {
        response_attributes(r, genai, &mut attrs);
        tool_call_identity(r, &mut attrs);
        if payload {
            output_payload(r, config.payload_byte_cap, &mut attrs);
        }
    }
    (attrs, failure)
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn strings(items: Vec<String>) -> OtelValue {
    OtelValue::Array(Array::String(
        items.into_iter().map(StringValue::from).collect(),
    ))
}

fn response_attributes(r: &LlmResponseSummary, genai: bool, attrs: &mut Vec<KeyValue>) {
    if let Some(reason) = &r.finish_reason {
        attrs.push(KeyValue::new(attr::LLM_FINISH_REASON, reason.clone()));
    }
    let u = &r.usage;
    for (key, v) in [
        (attr::LLM_USAGE_PROMPT_TOKENS, u.prompt_tokens),
        (attr::LLM_USAGE_COMPLETION_TOKENS, u.completion_tokens),
        (attr::LLM_USAGE_TOTAL_TOKENS, u.total_tokens),
    ] {
        if let Some(v) = v {
            attrs.push(KeyValue::new(key, int(v)));
        }
    }
    if !genai {
        return;
    }
    if let Some(m) = &r.response_model {
        attrs.push(KeyValue::new(attr::GEN_AI_RESPONSE_MODEL, m.clone()));
    }
    if let Some(id) = &r.response_id {
        attrs.push(KeyValue::new(attr::GEN_AI_RESPONSE_ID, id.clone()));
    }
    if let Some(reason) = &r.finish_reason {
        attrs.push(KeyValue::new(
            attr::GEN_AI_RESPONSE_FINISH_REASONS,
            strings(vec![reason.to_string()]),
        ));
    }
    for (key, v) in [
        (attr::GEN_AI_USAGE_INPUT_TOKENS, u.prompt_tokens),
        (attr::GEN_AI_USAGE_OUTPUT_TOKENS, u.completion_tokens),
        (attr::LLM_CACHE_READ_INPUT_TOKENS, u.cached_tokens),
        (
            attr::LLM_CACHE_CREATION_INPUT_TOKENS,
            u.cache_creation_tokens,
        ),
    ] {
        if let Some(v) = v {
            attrs.push(KeyValue::new(key, int(v)));
        }
    }
}

/// §5.5.10: count / names / ids of the requested tool calls (ungated identifiers).
fn tool_call_identity(r: &LlmResponseSummary, attrs: &mut Vec<KeyValue>) {
    let Some(calls) = r.output_tool_calls.as_ref().filter(|c| !c.is_empty()) else {
        return;
    };
    let field = |c: &Value, k: &str| {
        c.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    attrs.push(KeyValue::new(
        attr::LLM_OUTPUT_TOOL_CALLS_COUNT,
        int(calls.len() as u64),
    ));
    attrs.push(KeyValue::new(
        attr::LLM_OUTPUT_TOOL_CALLS_NAMES,
        strings(calls.iter().map(|c| field(c, "name")).collect()),
    ));
    attrs.push(KeyValue::new(
        attr::LLM_OUTPUT_TOOL_CALLS_IDS,
        strings(calls.iter().map(|c| field(c, "id")).collect()),
    ));
}

/// §5.5.1 output side: the content (when non-empty) and the tool calls (when any).
fn output_payload(r: &LlmResponseSummary, cap: usize, attrs: &mut Vec<KeyValue>) {
    if let Some(content) = r.output_content.as_ref().filter(|c| !c.is_empty()) {
        attrs.push(KeyValue::new(
            attr::LLM_OUTPUT_CONTENT,
            truncate(content.clone(), cap),
        ));
    }
    if let Some(calls) = r.output_tool_calls.as_ref().filter(|c| !c.is_empty()) {
        attrs.push(KeyValue::new(
            attr::LLM_OUTPUT_TOOL_CALLS,
            truncate(canonical_json(&Value::Array(calls.clone())), cap),
        ));
    }
}

/// A request parameter as an attribute value (scalars and string arrays, §5.5.2).
fn param_value(v: &Value) -> Option<OtelValue> {
    match v {
        Value::Bool(b) => Some(OtelValue::Bool(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(OtelValue::I64)
            .or_else(|| n.as_f64().map(OtelValue::F64)),
        Value::String(s) => Some(OtelValue::from(s.clone())),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(|s| StringValue::from(s.to_owned())))
            .collect::<Option<Vec<_>>>()
            .map(|v| OtelValue::Array(Array::String(v))),
        _ => None,
    }
}
