//! prompt-management §12 / observability §5.5.15 through the public API: an LLM call
//! made inside a prompt-context binding carries the `openarmature.prompt.*` identity,
//! the group name and the token-budget signal on its span; outside, none of them.

use std::sync::Arc;

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmRequestSummary, LlmResponseSummary, LlmUsage,
};
use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, ObserverEvent, END};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_prompt::prompt_context::{
    self, scope_prompt, scope_prompt_group, PromptGroupIdentity, PromptIdentity, TokenBudget,
};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

state! {
    /// The test state.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// Unused.
        pub done: bool,
    }
}

/// Reports one completed attempt with `usage` from inside the node.
fn report(ctx: &NodeCtx, usage: LlmUsage) {
    let request = LlmRequestSummary::new(
        "openai",
        "gpt-test",
        "call-1",
        Vec::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    )
    .with_prompt_context(prompt_context::current());
    let response = LlmResponseSummary::new(None, None, usage, Some("stop".into()), None, None);
    ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
        ctx.call_site(),
        request,
        0,
        None,
        LlmAttemptOutcome::Completed(Arc::new(response)),
        Some(1.0),
    )));
}

fn usage(prompt: u64, completion: u64) -> LlmUsage {
    LlmUsage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        total_tokens: Some(prompt + completion),
        ..LlmUsage::default()
    }
}

async fn llm_spans(budget: Option<TokenBudget>, bound: bool) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("ask", move |_s: Arc<Doc>, ctx: NodeCtx| async move {
            if bound {
                let id = PromptIdentity::new("classify", "v7", "production", "t-hash", "r-hash");
                let group = PromptGroupIdentity::new("pipeline");
                scope_prompt_group(
                    group,
                    scope_prompt(id, budget, async {
                        report(&ctx, usage(20, 5));
                    }),
                )
                .await;
            } else {
                report(&ctx, usage(20, 5));
            }
            Ok(DocUpdate::default())
        })
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();
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

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
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
