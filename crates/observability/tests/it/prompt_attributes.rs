//! prompt-management §12 / observability §5.5.15 through the public API: an LLM call
//! made inside a prompt-context binding carries the `openarmature.prompt.*` identity,
//! the group name and the token-budget signal on its span; outside, none of them.

use std::sync::Arc;

use openarmature_core::vocab::llm::LlmUsage;
use openarmature_graph::{InvokeOptions, NodeCtx};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_prompt::prompt_context::{
    self, scope_prompt, scope_prompt_group, PromptGroupIdentity, PromptIdentity, TokenBudget,
};
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;

use crate::support::single_node;
use crate::support::{attr, reply, report_completed, request, span_capture, usage, Doc, DocUpdate};

/// Reports one completed attempt with `usage` from inside the node.
fn report(ctx: &NodeCtx, usage: LlmUsage) {
    let request = request("call-1").with_prompt_context(prompt_context::current());
    report_completed(ctx, request, reply(usage, "stop"), 1.0);
}

async fn llm_spans(budget: Option<TokenBudget>, bound: bool) -> Vec<SpanData> {
    let (exporter, provider) = span_capture();
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| async move {
        if bound {
            let id = PromptIdentity::new("classify", "v7", "production", "t-hash", "r-hash");
            let group = PromptGroupIdentity::new("pipeline");
            scope_prompt_group(
                group,
                scope_prompt(id, budget, async {
                    report(&ctx, usage(Some(20), Some(5), Some(25)));
                }),
            )
            .await;
        } else {
            report(&ctx, usage(Some(20), Some(5), Some(25)));
        }
        Ok(DocUpdate::default())
    });
    let otel = OtelObserver::builder(&provider).build();
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.name == a::LLM_SPAN)
        .collect()
}

#[tokio::test]
async fn bound_prompt_and_group_reach_the_llm_span() {
    let spans = llm_spans(None, true).await;
    assert_eq!(spans.len(), 1);
    let s = &spans[0];
    for (key, want) in [
        (a::PROMPT_NAME, "classify"),
        (a::PROMPT_VERSION, "v7"),
        (a::PROMPT_LABEL, "production"),
        (a::PROMPT_TEMPLATE_HASH, "t-hash"),
        (a::PROMPT_RENDERED_HASH, "r-hash"),
        (a::PROMPT_GROUP_NAME, "pipeline"),
    ] {
        assert_eq!(attr(s, key), Some(Value::from(want)), "{key}");
    }
    // No budget declared: no budget attributes at all.
    assert_eq!(attr(s, a::PROMPT_TOKEN_BUDGET_INPUT_MAX), None);
    assert_eq!(attr(s, a::LLM_TOKEN_BUDGET_EXCEEDED), None);
}

#[tokio::test]
async fn token_budget_bounds_and_verdict_are_rendered() {
    let over = llm_spans(Some(TokenBudget::new(Some(10), None)), true).await;
    assert_eq!(
        attr(&over[0], a::PROMPT_TOKEN_BUDGET_INPUT_MAX),
        Some(Value::I64(10))
    );
    assert_eq!(attr(&over[0], a::PROMPT_TOKEN_BUDGET_TOTAL_MAX), None);
    assert_eq!(
        attr(&over[0], a::LLM_TOKEN_BUDGET_EXCEEDED),
        Some(Value::Bool(true))
    );
    let under = llm_spans(Some(TokenBudget::new(None, Some(100))), true).await;
    assert_eq!(
        attr(&under[0], a::PROMPT_TOKEN_BUDGET_TOTAL_MAX),
        Some(Value::I64(100))
    );
    assert_eq!(
        attr(&under[0], a::LLM_TOKEN_BUDGET_EXCEEDED),
        Some(Value::Bool(false))
    );
}

#[tokio::test]
async fn unbound_calls_carry_no_prompt_attributes() {
    let spans = llm_spans(None, false).await;
    assert_eq!(spans.len(), 1);
    assert!(!spans[0]
        .attributes
        .iter()
        .any(|kv| kv.key.as_str().starts_with("openarmature.prompt.")));
}
