//! observability §5.5.15 / §7: a call whose usage crosses its prompt's token budget
//! makes one WARNING log record naming the prompt, in the calling node's span context;
//! a call within budget makes none.

use std::sync::Arc;

use openarmature_core::vocab::llm::LlmCompletionEvent;
use openarmature_graph::{InvokeOptions, NodeCtx, ObserverEvent};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_prompt::prompt_context::{self, scope_prompt, PromptIdentity, TokenBudget};
use opentelemetry::logs::Severity;
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};

use crate::support::single_node;
use crate::support::{reply, request, span_capture, usage, Doc, DocUpdate};

/// Runs one call with `prompt_tokens` against an input budget of 10; returns the
/// emitted log records (severity, body, prompt-name attribute, span matches node).
async fn run(prompt_tokens: u64) -> Vec<(Option<Severity>, String, bool, bool)> {
    let (spans, provider) = span_capture();
    let logs = InMemoryLogExporter::default();
    let logger_provider = SdkLoggerProvider::builder()
        .with_simple_exporter(logs.clone())
        .build();
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| async move {
        let id = PromptIdentity::new("classify", "v7", "production", "t", "r");
        let budget = TokenBudget::new(Some(10), None);
        scope_prompt(id, Some(budget), async {
            let request = request("call-1").with_prompt_context(prompt_context::current());
            let usage = usage(Some(prompt_tokens), Some(1), Some(prompt_tokens + 1));
            let response = reply(usage, "stop");
            ctx.dispatch_event(ObserverEvent::LlmCompletion(LlmCompletionEvent::new(
                ctx.call_site(),
                request,
                response,
                Some(1.0),
            )));
        })
        .await;
        Ok(DocUpdate::default().done(true))
    });
    let otel = OtelObserver::builder(&provider)
        .logger_provider(&logger_provider)
        .build();
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let finished = spans.get_finished_spans().unwrap();
    let node = finished.iter().find(|s| s.name == "ask").unwrap();
    logs.get_emitted_logs()
        .unwrap()
        .iter()
        .map(|l| {
            let r = &l.record;
            let body = r.body().map(|b| format!("{b:?}")).unwrap_or_default();
            let named = r.attributes_iter().any(|(k, v)| {
                k.as_str() == a::PROMPT_NAME && format!("{v:?}").contains("classify")
            });
            let in_node = r
                .trace_context()
                .is_some_and(|c| c.span_id == node.span_context.span_id());
            (r.severity_number(), body, named, in_node)
        })
        .collect()
}

#[tokio::test]
async fn an_exceeded_budget_logs_one_warning_naming_the_prompt() {
    let records = run(20).await;
    assert_eq!(records.len(), 1, "{records:?}");
    let (severity, body, named, in_node) = &records[0];
    assert_eq!(*severity, Some(Severity::Warn));
    assert!(
        body.contains("token budget exceeded: input 20 > 10"),
        "{body}"
    );
    assert!(*named && *in_node);
}

#[tokio::test]
async fn a_call_within_budget_logs_nothing() {
    assert!(run(10).await.is_empty());
}
