//! observability §11 / §5.5.15 from typed LLM events dispatched the way the call loop
//! dispatches them (a `structured_output_invalid` failure is built by the provider
//! itself, so it cannot be scripted through the public API): token usage and duration
//! per attempt, the token budget once per call on its terminal event.

use std::sync::Arc;

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent, LlmFailedEvent, LlmFailure, RetryReason,
};
use openarmature_graph::{NodeCtx, ObserverEvent};
use openarmature_observability::attributes as a;
use openarmature_prompt::prompt_context::{self, scope_prompt, PromptIdentity, TokenBudget};

use crate::metrics_support::{drive, of, Doc, DocUpdate, Point};
use crate::support::single_node;
use crate::support::{reply, request, usage};

/// Dispatches what the call loop dispatches for a reasked call: attempt 0 fails
/// `structured_output_invalid` with a response, attempt 1 completes (or, with
/// `fail_final`, the single attempt's failure is terminal).
fn structured_output_events(ctx: &NodeCtx, fail_final: bool) {
    let request = || request("c1").with_prompt_context(prompt_context::current());
    let reply = |p, c| reply(usage(Some(p), Some(c), Some(p + c)), "length");
    let failure = LlmFailure::new("structured_output_invalid", None, "not JSON");
    let site = ctx.call_site();
    let attempt = |i, reason, outcome| {
        ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
            site.clone(),
            request(),
            i,
            reason,
            outcome,
            Some(2.0),
        ))
    };
    ctx.dispatch_event(attempt(
        0,
        None,
        LlmAttemptOutcome::Failed {
            failure: failure.clone(),
            response: Some(reply(20, 16)),
        },
    ));
    if fail_final {
        ctx.dispatch_event(ObserverEvent::LlmFailed(LlmFailedEvent::new(
            site.clone(),
            request(),
            failure,
            Some(reply(20, 16)),
            Some(2.0),
        )));
        return;
    }
    ctx.dispatch_event(attempt(
        1,
        Some(RetryReason::Reask),
        LlmAttemptOutcome::Completed(Arc::new(reply(30, 4))),
    ));
    ctx.dispatch_event(ObserverEvent::LlmCompletion(LlmCompletionEvent::new(
        site.clone(),
        request(),
        reply(30, 4),
        Some(4.0),
    )));
}

async fn run_events(fail_final: bool) -> Vec<Point> {
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| async move {
        let id = PromptIdentity::new("classify", "v7", "production", "t", "r");
        let budget = Some(TokenBudget::new(Some(10), None));
        scope_prompt(id, budget, async {
            structured_output_events(&ctx, fail_final)
        })
        .await;
        Ok(DocUpdate::default())
    });
    drive(graph, true, true).await
}

#[tokio::test]
async fn a_structured_output_failure_records_tokens_error_type_and_its_budget() {
    let all = run_events(true).await;
    let mut tokens: Vec<(String, f64)> = of(&all, a::METRIC_TOKEN_USAGE)
        .into_iter()
        .map(|p| (p.dims[a::METRIC_TOKEN_TYPE].clone(), p.sum))
        .collect();
    tokens.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        tokens,
        [("input".to_owned(), 20.0), ("output".to_owned(), 16.0)]
    );
    let d = of(&all, a::METRIC_OPERATION_DURATION);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].dims[a::ERROR_TYPE], "structured_output_invalid");
    assert!(
        (d[0].sum - 0.002).abs() < 1e-12,
        "milliseconds become seconds"
    );
    let util = of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION);
    assert_eq!((util.len(), util[0].count, util[0].sum), (1, 1, 2.0));
    assert_eq!(of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED)[0].sum, 1.0);
}

#[tokio::test]
async fn a_reasked_call_records_tokens_per_attempt_and_its_budget_once() {
    let all = run_events(false).await;
    // Token usage and duration per attempt: 20 + 30 input over two observations.
    let input = of(&all, a::METRIC_TOKEN_USAGE)
        .into_iter()
        .find(|p| p.dims[a::METRIC_TOKEN_TYPE] == "input")
        .unwrap();
    assert_eq!((input.count, input.sum), (2, 50.0));
    let durations: u64 = of(&all, a::METRIC_OPERATION_DURATION)
        .iter()
        .map(|p| p.count)
        .sum();
    assert_eq!(durations, 2);
    // The budget is evaluated once, on the terminal event (30 / 10).
    let util = of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION);
    assert_eq!((util.len(), util[0].count, util[0].sum), (1, 1, 3.0));
    assert_eq!(of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED)[0].sum, 1.0);
}
