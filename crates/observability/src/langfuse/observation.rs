//! Spec: observability §8.4.2 (observation-level mapping), §8.4.3 (Generation fields,
//! failed Generation, token-budget WARNING), §8.4.4 (prompt identity metadata), §8.7
//! (payload rendering and truncation fallthrough), §8.4.6 (Tool observations), §8.4.5 /
//! §8.4.7 (Embedding / Retriever, in `retrieval.rs`) — one
//! OA span as one Langfuse observation (without its children).

use std::collections::HashMap;

use openarmature_core::vocab::llm::LlmUsage;
use openarmature_core::vocab::prompt::TokenBudget;
use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};

use super::attrs::{count, get, string};
use super::ids::hex;
use super::model::{Level, Observation, ObservationType, Usage};
use crate::attributes as a;

/// §8.4.2: OA attribute → top-level `observation.metadata` key.
const OBSERVATION_KEYS: &[(&str, &str)] = &[
    (a::NODE_NAMESPACE, "namespace"),
    (a::NODE_STEP, "step"),
    (a::NODE_ATTEMPT_INDEX, "attempt_index"),
    (a::NODE_FAN_OUT_INDEX, "fan_out_index"),
    (a::NODE_BRANCH_NAME, "branch_name"),
    (a::SUBGRAPH_NAME, "subgraph_name"),
    (a::FAN_OUT_ITEM_COUNT, "fan_out_item_count"),
    (a::FAN_OUT_CONCURRENCY, "fan_out_concurrency"),
    (a::FAN_OUT_ERROR_POLICY, "fan_out_error_policy"),
    (a::FAN_OUT_PARENT_NODE_NAME, "fan_out_parent_node_name"),
    (
        a::PARALLEL_BRANCHES_BRANCH_COUNT,
        "parallel_branches_branch_count",
    ),
    (
        a::PARALLEL_BRANCHES_ERROR_POLICY,
        "parallel_branches_error_policy",
    ),
    (
        a::PARALLEL_BRANCHES_PARENT_NODE_NAME,
        "parallel_branches_parent_node_name",
    ),
    (a::CORRELATION_ID, "correlation_id"),
    (a::PROMPT_GROUP_NAME, "prompt_group_name"),
];

/// §8.4.3: LLM span attribute → top-level `generation.metadata` key.
const GENERATION_KEYS: &[(&str, &str)] = &[
    (a::LLM_FINISH_REASON, "finish_reason"),
    (a::GEN_AI_SYSTEM, "system"),
    (a::GEN_AI_RESPONSE_MODEL, "response_model"),
    (a::GEN_AI_RESPONSE_ID, "response_id"),
    (a::LLM_TOKEN_BUDGET_EXCEEDED, "token_budget_exceeded"),
];

/// §8.4.6: tool span attribute → top-level `tool.metadata` key.
const TOOL_KEYS: &[(&str, &str)] = &[
    (a::TOOL_NAME, "openarmature_tool_name"),
    (a::TOOL_CALL_ID, "openarmature_tool_call_id"),
];

/// §8.4.4: prompt-management §11 attribute → `generation.metadata.prompt.<key>`.
const PROMPT_KEYS: &[(&str, &str)] = &[
    (a::PROMPT_NAME, "name"),
    (a::PROMPT_VERSION, "version"),
    (a::PROMPT_LABEL, "label"),
    (a::PROMPT_TEMPLATE_HASH, "template_hash"),
    (a::PROMPT_RENDERED_HASH, "rendered_hash"),
];

/// §8.4.3: budget attribute → `generation.metadata.token_budget.<key>`.
const BUDGET_KEYS: &[(&str, &str)] = &[
    (a::PROMPT_TOKEN_BUDGET_INPUT_MAX, "input_max_tokens"),
    (a::PROMPT_TOKEN_BUDGET_TOTAL_MAX, "total_max_tokens"),
];

/// Maps one span. `trace_ids` gives the Langfuse id of every trace a link can point
/// at (the detached children, §8.5).
pub(crate) fn observation_of(span: &SpanData, trace_ids: &HashMap<TraceId, String>) -> Observation {
    let kind = match &*span.name {
        a::LLM_SPAN => ObservationType::Generation,
        a::TOOL_SPAN => ObservationType::Tool,
        a::EMBEDDING_SPAN => ObservationType::Embedding,
        a::RERANK_SPAN => ObservationType::Retriever,
        _ => ObservationType::Span,
    };
    let mut o = Observation::new(
        kind,
        hex(&span.span_context.span_id().to_bytes()),
        span.name.to_string(),
        span.start_time,
    );
    o.end_time = span.end_time;
    copy_keys(span, OBSERVATION_KEYS, &mut o.metadata);
    caller_metadata(span, &mut o.metadata);
    // §8.4.2 / §8.5: a dispatching observation marks itself and lists its detached
    // children's traces.
    let children: Vec<Value> = span
        .links
        .iter()
        .filter_map(|l| trace_ids.get(&l.span_context.trace_id()))
        .map(|id| Value::String(id.clone()))
        .collect();
    if !children.is_empty() {
        o.metadata.insert("detached".into(), Value::Bool(true));
        o.metadata
            .insert("detached_child_trace_ids".into(), Value::Array(children));
    }
    if let Some(category) = string(span, a::ERROR_CATEGORY) {
        o.level = Level::Error;
        o.status_message = Some(category);
    }
    match kind {
        ObservationType::Generation => generation(span, &mut o),
        ObservationType::Tool => tool(span, &mut o),
        ObservationType::Embedding => super::retrieval::embedding(span, &mut o),
        ObservationType::Retriever => super::retrieval::retriever(span, &mut o),
        _ => {}
    }
    o
}

/// §8.4.6: the tool's identity in metadata; arguments / result as input / output
/// (present on the span only with provider payload on); a failure at ERROR with its
/// type and message in metadata and the message as the status message.
fn tool(span: &SpanData, o: &mut Observation) {
    copy_keys(span, TOOL_KEYS, &mut o.metadata);
    if let Some(text) = string(span, a::TOOL_CALL_ARGUMENTS) {
        o.input = Some(parse_or_raw(text));
    }
    if let Some(text) = string(span, a::TOOL_CALL_RESULT) {
        o.output = Some(parse_or_raw(text));
    }
    if let opentelemetry::trace::Status::Error { description } = &span.status {
        o.level = Level::Error;
        o.metadata.insert(
            "error_type".into(),
            get(span, a::ERROR_TYPE).unwrap_or(Value::Null),
        );
        o.metadata.insert(
            "error_message".into(),
            Value::String(description.to_string()),
        );
        o.status_message = Some(description.to_string());
    }
}

pub(crate) fn copy_keys(span: &SpanData, keys: &[(&str, &str)], into: &mut Map<String, Value>) {
    for (attr, key) in keys {
        if let Some(v) = get(span, attr) {
            into.insert((*key).to_owned(), v);
        }
    }
}

/// §8.4.1 / §8.4.2: each caller metadata entry as a top-level key.
pub(crate) fn caller_metadata(span: &SpanData, into: &mut Map<String, Value>) {
    for kv in &span.attributes {
        if let Some(key) = kv.key.as_str().strip_prefix(a::USER_PREFIX) {
            into.insert(key.to_owned(), super::attrs::json_of(&kv.value));
        }
    }
}

fn generation(span: &SpanData, o: &mut Observation) {
    o.model = string(span, a::LLM_MODEL).or_else(|| string(span, a::GEN_AI_REQUEST_MODEL));
    for kv in &span.attributes {
        if let Some(param) = kv.key.as_str().strip_prefix(a::GEN_AI_REQUEST_PREFIX) {
            if param != "model" {
                o.model_parameters
                    .insert(param.to_owned(), super::attrs::json_of(&kv.value));
            }
        }
    }
    copy_keys(span, GENERATION_KEYS, &mut o.metadata);
    let mut prompt = Map::new();
    copy_keys(span, PROMPT_KEYS, &mut prompt);
    if !prompt.is_empty() {
        o.metadata.insert("prompt".into(), Value::Object(prompt));
    }
    let mut budget = Map::new();
    copy_keys(span, BUDGET_KEYS, &mut budget);
    if !budget.is_empty() {
        o.metadata
            .insert("token_budget".into(), Value::Object(budget));
    }
    // §8.7: payload attributes are present only when the payload flag is off; a
    // truncated (unparseable) JSON payload stays the raw string, marker included.
    if let Some(text) = string(span, a::LLM_INPUT_MESSAGES) {
        o.input = Some(parse_or_raw(text));
    }
    if let Some(text) = string(span, a::LLM_OUTPUT_CONTENT) {
        o.output = Some(Value::String(text));
    }
    // §8.4.4 case 1: the prompt's source exposed a Langfuse Prompt reference.
    if let Some(text) = string(span, super::PROMPT_REFERENCE_ATTR) {
        o.prompt_link = Some(parse_or_raw(text));
    }
    if let Some(text) = string(span, a::LLM_REQUEST_EXTRAS) {
        o.metadata
            .insert("request_extras".into(), parse_or_raw(text));
    }
    let usage = LlmUsage {
        prompt_tokens: count(span, a::LLM_USAGE_PROMPT_TOKENS),
        completion_tokens: count(span, a::LLM_USAGE_COMPLETION_TOKENS),
        total_tokens: count(span, a::LLM_USAGE_TOTAL_TOKENS),
        ..LlmUsage::default()
    };
    if usage.prompt_tokens.is_some()
        || usage.completion_tokens.is_some()
        || usage.total_tokens.is_some()
    {
        o.usage = Some(Usage {
            input: usage.prompt_tokens,
            output: usage.completion_tokens,
            total: usage.total_tokens,
        });
    }
    // §8.4.3: an exceeded budget is a WARNING naming the bound, unless the call failed.
    if o.level != Level::Error {
        let budget = TokenBudget::new(
            count(span, a::PROMPT_TOKEN_BUDGET_INPUT_MAX),
            count(span, a::PROMPT_TOKEN_BUDGET_TOTAL_MAX),
        );
        let exceeded: Vec<String> = budget
            .bounds(&usage)
            .into_iter()
            .filter(|b| b.exceeded())
            .map(|b| format!("{} {} > {}", b.kind.as_str(), b.actual, b.max))
            .collect();
        if !exceeded.is_empty() {
            o.level = Level::Warning;
            o.status_message = Some(format!("token budget exceeded: {}", exceeded.join("; ")));
        }
    }
}

pub(crate) fn parse_or_raw(text: String) -> Value {
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}
