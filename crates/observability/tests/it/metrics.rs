//! observability §11 / §5.5.15 through the public API and the real
//! `openarmature-llm` call loop (an in-process scripted provider): the GenAI metric
//! instruments an `OtelObserver` records with `enable_metrics`, read back from an
//! in-memory metric exporter on a private meter provider.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{NodeCtx, NodeError};
use openarmature_llm::{
    CompletionRequest, LlmError, LlmRetryConfig, Message, Provider, Response, Usage,
};
use openarmature_observability::attributes as a;
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_prompt::prompt_context::{scope_prompt, PromptIdentity, TokenBudget};

use crate::metrics_support::{dims, drive, of, Doc, DocUpdate, Point};
use crate::support::single_node;
use crate::support::{ok_response, usage, ScriptedProvider};

fn response(usage: Usage) -> Result<Response, LlmError> {
    Ok(ok_response(usage))
}

struct Setup {
    enable: bool,
    llm_spans: bool,
    budget: Option<TokenBudget>,
    attempts: u32,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            enable: true,
            llm_spans: true,
            budget: None,
            attempts: 1,
        }
    }
}

/// One node making one LLM call against `script`; returns the exported points.
async fn run(setup: Setup, script: Vec<Result<Response, LlmError>>) -> Vec<Point> {
    let llm = Arc::new(ScriptedProvider::new(script));
    let Setup {
        enable,
        llm_spans,
        budget,
        attempts,
    } = setup;
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let llm = Arc::clone(&llm);
        async move {
            let retry = RetryConfig::default()
                .backoff(Constant(Duration::ZERO))
                .max_attempts(attempts);
            let request = CompletionRequest::new(vec![Message::user("hi")])
                .in_node(&ctx)
                .retry(LlmRetryConfig::from(retry));
            let id = PromptIdentity::new("classify", "v7", "production", "t", "r");
            let result = scope_prompt(id, budget, llm.complete(&request)).await;
            result?;
            Ok::<DocUpdate, NodeError>(DocUpdate::default().done(true))
        }
    });
    drive(graph, enable, llm_spans).await
}

#[tokio::test]
async fn a_retried_call_records_one_duration_per_attempt_and_tokens_of_the_reply() {
    let script = vec![
        Err(LlmError::unavailable("down")),
        response(usage(Some(5), Some(1), Some(6))),
    ];
    let all = run(
        Setup {
            attempts: 2,
            ..Setup::default()
        },
        script,
    )
    .await;

    let mut durations: Vec<(BTreeMap<String, String>, u64)> =
        of(&all, a::METRIC_OPERATION_DURATION)
            .into_iter()
            .map(|p| (p.dims.clone(), p.count))
            .collect();
    durations.sort();
    assert_eq!(
        durations,
        [
            (
                dims(&[(a::ERROR_TYPE, "provider_unavailable")], "m", "test"),
                1
            ),
            (dims(&[], "m", "test"), 1),
        ]
    );
    let d = of(&all, a::METRIC_OPERATION_DURATION)[0];
    assert_eq!(d.unit, "s");
    assert_eq!(d.bounds, a::OPERATION_DURATION_BUCKETS);

    // Only the attempt that got a reply reports tokens; never a total.
    let mut tokens: Vec<(String, u64, f64)> = of(&all, a::METRIC_TOKEN_USAGE)
        .into_iter()
        .map(|p| (p.dims[a::METRIC_TOKEN_TYPE].clone(), p.count, p.sum))
        .collect();
    tokens.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        tokens,
        [("input".to_owned(), 1, 5.0), ("output".to_owned(), 1, 1.0)]
    );
    let t = of(&all, a::METRIC_TOKEN_USAGE)[0];
    assert_eq!(t.unit, "{token}");
    assert_eq!(t.bounds, a::TOKEN_USAGE_BUCKETS);
    assert_eq!(t.dims.len(), 4, "no attempt index or other dimension");
    // No budget declared: no budget instruments.
    assert!(of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION).is_empty());
    assert!(of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED).is_empty());
}

#[tokio::test]
async fn a_failed_call_records_duration_with_error_type_and_no_tokens() {
    let all = run(Setup::default(), vec![Err(LlmError::unavailable("down"))]).await;
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, [a::METRIC_OPERATION_DURATION]);
    assert_eq!(
        all[0].dims,
        dims(&[(a::ERROR_TYPE, "provider_unavailable")], "m", "test")
    );
}

#[tokio::test]
async fn metrics_are_recorded_with_llm_spans_disabled() {
    let all = run(
        Setup {
            llm_spans: false,
            ..Setup::default()
        },
        vec![response(usage(Some(5), Some(1), Some(6)))],
    )
    .await;
    assert_eq!(of(&all, a::METRIC_OPERATION_DURATION).len(), 1);
    assert_eq!(of(&all, a::METRIC_TOKEN_USAGE).len(), 2);
}

#[tokio::test]
async fn nothing_is_recorded_with_metrics_off() {
    let all = run(
        Setup {
            enable: false,
            budget: Some(TokenBudget::new(Some(1), Some(1))),
            ..Setup::default()
        },
        vec![response(usage(Some(5), Some(1), Some(6)))],
    )
    .await;
    assert_eq!(all, []);
}

#[tokio::test]
async fn a_null_prompt_count_records_no_input_observation_and_skips_its_bound() {
    let all = run(
        Setup {
            budget: Some(TokenBudget::new(Some(10), Some(8))),
            ..Setup::default()
        },
        vec![response(usage(None, Some(5), Some(12)))],
    )
    .await;
    let tokens: Vec<&str> = of(&all, a::METRIC_TOKEN_USAGE)
        .iter()
        .map(|p| p.dims[a::METRIC_TOKEN_TYPE].as_str())
        .collect();
    assert_eq!(tokens, ["output"]);
    // Only the total bound is evaluated: 12 / 8.
    let util = of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION);
    assert_eq!(util.len(), 1);
    assert_eq!(util[0].dims[a::METRIC_TOKEN_BUDGET_KIND], "total");
    assert!((util[0].sum - 1.5).abs() < 1e-9);
    let exceeded = of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED);
    assert_eq!(exceeded.len(), 1);
    assert_eq!(
        exceeded[0].dims,
        dims(&[(a::METRIC_TOKEN_BUDGET_KIND, "total")], "m", "test")
    );
    assert_eq!(exceeded[0].sum, 1.0);
}

#[tokio::test]
async fn budgets_record_utilization_always_and_exceeded_only_when_strictly_over() {
    // input 20 / 10 is over; total 21 / 21 is at the bound, not over it.
    let all = run(
        Setup {
            budget: Some(TokenBudget::new(Some(10), Some(21))),
            ..Setup::default()
        },
        vec![response(usage(Some(20), Some(1), Some(21)))],
    )
    .await;
    let mut util: Vec<(String, f64)> = of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION)
        .into_iter()
        .map(|p| (p.dims[a::METRIC_TOKEN_BUDGET_KIND].clone(), p.sum))
        .collect();
    util.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(util, [("input".to_owned(), 2.0), ("total".to_owned(), 1.0)]);
    let u = of(&all, a::METRIC_TOKEN_BUDGET_UTILIZATION)[0];
    assert_eq!(
        (u.unit.as_str(), u.bounds.as_slice()),
        ("1", &a::TOKEN_BUDGET_UTILIZATION_BUCKETS[..])
    );
    let exceeded: Vec<(String, f64)> = of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED)
        .into_iter()
        .map(|p| (p.dims[a::METRIC_TOKEN_BUDGET_KIND].clone(), p.sum))
        .collect();
    assert_eq!(exceeded, [("input".to_owned(), 1.0)]);
    assert_eq!(of(&all, a::METRIC_TOKEN_BUDGET_EXCEEDED)[0].unit, "{call}");
}
