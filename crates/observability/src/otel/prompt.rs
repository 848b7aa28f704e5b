//! Spec: prompt-management §12 (the `openarmature.prompt.*` identity attributes on the
//! LLM span), observability §5.5.15 (token-budget signal).
//!
//! Rendered from the prompt context the request summary captured at call time
//! (`openarmature_core::vocab::prompt`, bound by `openarmature-prompt`). None of these are payload: they are
//! identifiers and bounds, so `disable_provider_payload` does not gate them.

use openarmature_core::vocab::llm::{LlmRequestSummary, LlmResponseSummary};
use opentelemetry::KeyValue;

use crate::attributes as attr;

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Appends the prompt identity, group and token-budget attributes of one attempt.
/// `response` is the attempt's response, when it has one (a completion, or a
/// `structured_output_invalid` failure): the budget is evaluated against its usage.
pub(crate) fn prompt_attributes(
    request: &LlmRequestSummary,
    response: Option<&LlmResponseSummary>,
    attrs: &mut Vec<KeyValue>,
) {
    let ctx = &request.prompt_context;
    if let Some(p) = ctx.prompt() {
        for (key, value) in [
            (attr::PROMPT_NAME, &p.name),
            (attr::PROMPT_VERSION, &p.version),
            (attr::PROMPT_LABEL, &p.label),
            (attr::PROMPT_TEMPLATE_HASH, &p.template_hash),
            (attr::PROMPT_RENDERED_HASH, &p.rendered_hash),
        ] {
            attrs.push(KeyValue::new(key, value.clone()));
        }
    }
    if let Some(g) = ctx.group() {
        attrs.push(KeyValue::new(attr::PROMPT_GROUP_NAME, g.group_name.clone()));
    }
    let Some(budget) = ctx.token_budget() else {
        return;
    };
    if let Some(max) = budget.input_max_tokens {
        attrs.push(KeyValue::new(attr::PROMPT_TOKEN_BUDGET_INPUT_MAX, int(max)));
    }
    if let Some(max) = budget.total_max_tokens {
        attrs.push(KeyValue::new(attr::PROMPT_TOKEN_BUDGET_TOTAL_MAX, int(max)));
    }
    if let Some(verdict) = response.and_then(|r| budget.evaluate(&r.usage)) {
        attrs.push(KeyValue::new(
            attr::LLM_TOKEN_BUDGET_EXCEEDED,
            verdict.exceeded(),
        ));
    }
}
