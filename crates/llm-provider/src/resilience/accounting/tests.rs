#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmRequestSummary, LlmResponseSummary, LlmUsage,
};
use openarmature_graph::{
    state, CategorizedError, Category, GraphBuilder, InvokeOptions, NodeCtx, NodeError,
    ObserverEvent, Registration, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::RetryMiddleware;
use serde_json::{json, Map, Value};

use super::*;
use crate::error::StructuredOutputInvalid;
use crate::message::{AssistantMessage, Message};
use crate::provider::{CompletionRequest, Provider};
use crate::response::{FinishReason, Response, Usage};
use crate::retry::LlmRetryConfig;
use crate::testing::ScriptedProvider;
use crate::LlmError;

state! {
    /// Test state.
    #[derive(Default)]
    pub struct S => SUpdate {
        /// Unused.
        pub out: String,
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        prompt_tokens: Some(input),
        completion_tokens: Some(output),
        total_tokens: Some(input + output),
        ..Usage::default()
    }
}

fn ok(input: u64, output: u64) -> Result<Response, LlmError> {
    let mut response = Response::of(AssistantMessage::from_text("{}"));
    response.usage = usage(input, output);
    Ok(response)
}

fn invalid(input: u64, output: u64) -> Result<Response, LlmError> {
    Err(LlmError::StructuredOutputInvalid(Box::new(
        StructuredOutputInvalid {
            response_schema: json!({"type": "object"}),
            output_content: "nope".into(),
            error_message: "not JSON".into(),
            finish_reason: FinishReason::Stop,
            usage: usage(input, output),
            response_id: None,
            response_model: None,
            raw: json!({}),
        },
    )))
}

fn down() -> Result<Response, LlmError> {
    Err(LlmError::unavailable("down"))
}

/// Answers from a script, one entry per send.
fn scripted(script: Vec<Result<Response, LlmError>>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(script))
}

fn zero() -> RetryConfig {
    RetryConfig::default().backoff(Constant(std::time::Duration::ZERO))
}

fn reask_retry(n: u32) -> LlmRetryConfig {
    LlmRetryConfig::from(zero().max_attempts(n)).reask(|_: &StructuredOutputInvalid| "fix".into())
}

/// A graph whose node `ask` makes `calls` calls (each with `retry`), under an
/// optional node-level retry.
async fn run_graph(
    provider: Arc<ScriptedProvider>,
    calls: usize,
    retry: Option<LlmRetryConfig>,
    node_retry: Option<u32>,
) -> (UsageAggregator, String) {
    let usage = UsageAggregator::new();
    let mut builder = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, ctx: NodeCtx| {
            let (p, retry) = (Arc::clone(&provider), retry.clone());
            async move {
                for _ in 0..calls {
                    let mut request =
                        CompletionRequest::new(vec![Message::user("hi")]).in_node(&ctx);
                    if let Some(r) = &retry {
                        request = request.retry(r.clone());
                    }
                    p.complete(&request).await?;
                }
                Ok::<SUpdate, NodeError>(SUpdate::default())
            }
        })
        .add_edge("ask", END)
        .entry("ask");
    if let Some(n) = node_retry {
        builder = builder.node_middleware(
            "ask",
            Arc::new(RetryMiddleware::new(zero().max_attempts(n))),
        );
    }
    let graph = builder.compile().unwrap();
    let done = graph
        .invoke_with(
            S::default(),
            InvokeOptions::default().observer(Registration::new("usage", usage.clone())),
        )
        .await;
    graph.drain(None).await;
    let id = match done {
        Ok(c) => c.invocation_id,
        Err(_) => usage
            .report()
            .first()
            .map(|i| i.invocation_id.clone())
            .unwrap(),
    };
    (usage, id)
}

fn t(input: u64, output: u64) -> TokenCounts {
    TokenCounts {
        input,
        output,
        total: input + output,
    }
}

#[tokio::test]
async fn final_and_billed_for_the_issue_example() {
    let p = scripted(vec![invalid(500, 0), ok(500, 1200)]);
    let (usage, id) = run_graph(p, 1, Some(reask_retry(2)), None).await;
    let inv = usage.invocation(&id).unwrap();
    assert_eq!(inv.calls.len(), 1);
    let call = &inv.calls[0];
    assert_eq!(call.final_usage(), Some(t(500, 1200)));
    assert_eq!(call.billed(), t(1000, 1200));
    assert_eq!(
        (inv.final_usage(), inv.billed()),
        (t(500, 1200), t(1000, 1200))
    );
    assert!(
        call.logical_call_id.starts_with(&format!("{id}:ask@")),
        "{}",
        call.logical_call_id
    );
}

#[tokio::test]
async fn the_same_example_outside_a_graph() {
    let p = scripted(vec![invalid(500, 0), ok(500, 1200)]);
    let usage = UsageAggregator::new();
    let request = CompletionRequest::new(vec![Message::user("hi")])
        .retry(reask_retry(2))
        .on_attempt(usage.clone());
    p.complete(&request).await.unwrap();
    let inv = usage.invocation("").unwrap();
    assert_eq!(inv.calls.len(), 1);
    assert_eq!(
        (inv.final_usage(), inv.billed()),
        (t(500, 1200), t(1000, 1200))
    );
}

#[tokio::test]
async fn call_ordinals_restart_with_every_attempt_of_a_node_execution() {
    // Each attempt claims two call ordinals; attempts 0 and 1 fail. Every attempt
    // counts from 0 (a node-level retry re-issues the same calls), and the next node
    // execution counts from 0 again.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let graph = GraphBuilder::new(S::default())
        .add_node("calls", move |_s: Arc<S>, ctx: NodeCtx| {
            let ordinals = [next_call_ordinal(&ctx), next_call_ordinal(&ctx)];
            sink.lock().unwrap().push((ctx.attempt_index(), ordinals));
            futures::future::ready(if ctx.attempt_index() < 2 {
                Err::<SUpdate, NodeError>(
                    CategorizedError::new(Category::PROVIDER_UNAVAILABLE, "again").into(),
                )
            } else {
                Ok(SUpdate::default())
            })
        })
        .add_node("next", |_s: Arc<S>, ctx: NodeCtx| {
            futures::future::ready(if next_call_ordinal(&ctx) == 0 {
                Ok(SUpdate::default().out("fresh".to_owned()))
            } else {
                Err::<SUpdate, NodeError>("a new node execution counts from 0".into())
            })
        })
        .add_edge("calls", "next")
        .add_edge("next", END)
        .entry("calls")
        .node_middleware(
            "calls",
            Arc::new(RetryMiddleware::new(zero().max_attempts(3))),
        )
        .compile()
        .unwrap();
    let out = graph.invoke(S::default()).await.unwrap();
    assert_eq!(out.out, "fresh");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(0, [0, 1]), (1, [0, 1]), (2, [0, 1])]
    );
}

#[tokio::test]
async fn node_retries_map_onto_the_same_logical_calls_by_ordinal() {
    // Node attempt 0: call #0 succeeds (10/1), call #1 fails; node attempt 1: both
    // succeed. Two logical calls, each with one call id per node attempt.
    let p = scripted(vec![ok(10, 1), down(), ok(20, 2), ok(30, 3)]);
    let (usage, id) = run_graph(p, 2, None, Some(2)).await;
    let inv = usage.invocation(&id).unwrap();
    assert_eq!(inv.calls.len(), 2, "{inv:#?}");
    let (first, second) = (&inv.calls[0], &inv.calls[1]);
    assert!(first.logical_call_id.ends_with("#0") && second.logical_call_id.ends_with("#1"));
    assert_eq!(first.call_ids.len(), 2);
    assert_eq!(first.final_usage(), Some(t(20, 2)));
    assert_eq!(
        first.billed(),
        t(30, 3),
        "both node attempts' successes were billed"
    );
    assert_eq!(second.final_usage(), Some(t(30, 3)));
    assert_eq!(
        second
            .attempts
            .iter()
            .map(|a| a.node_attempt_index)
            .collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert_eq!(inv.final_usage(), t(50, 5));
    assert_eq!(inv.billed(), t(60, 6));
}

#[tokio::test]
async fn events_carry_the_logical_call_id_the_aggregator_reports() {
    // Node attempt 0: call #0 fails once and is retried at call level (succeeds),
    // call #1 fails (no call-level retry) and fails the node; node attempt 1: both
    // succeed. Every event carries its call's logical id, minted at the call site.
    let p = scripted(vec![down(), ok(1, 1), down(), ok(2, 2), ok(3, 3)]);
    let usage = UsageAggregator::new();
    // (call id, logical call id, node attempt, call attempt) per attempt event.
    type Seen = Vec<(String, Option<String>, u32, u32)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let sink = Arc::clone(&seen);
    let graph = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, ctx: NodeCtx| {
            let p = Arc::clone(&p);
            async move {
                let first = CompletionRequest::new(vec![Message::user("a")])
                    .in_node(&ctx)
                    .retry(LlmRetryConfig::from(zero().max_attempts(2)));
                p.complete(&first).await?;
                let second = CompletionRequest::new(vec![Message::user("b")]).in_node(&ctx);
                p.complete(&second).await?;
                Ok::<SUpdate, NodeError>(SUpdate::default())
            }
        })
        .node_middleware(
            "ask",
            Arc::new(RetryMiddleware::new(zero().max_attempts(2))),
        )
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();
    let recorder = openarmature_graph::observer_fn(move |e: Arc<ObserverEvent>| {
        if let ObserverEvent::LlmAttempt(a) = &*e {
            sink.lock().unwrap().push((
                a.request.call_id.to_string(),
                a.request.logical_call_id.as_deref().map(str::to_owned),
                a.site.lineage.attempt_index,
                a.attempt_index,
            ));
        }
        async { Ok(()) }
    });
    let done = graph
        .invoke_with(
            S::default(),
            InvokeOptions::default()
                .observer(Registration::new("usage", usage.clone()))
                .observer(Registration::new("events", recorder)),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let inv = usage.invocation(&done.invocation_id).unwrap();
    assert_eq!(inv.calls.len(), 2, "{inv:#?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5);
    for (call_id, logical, _, _) in &seen {
        let call = inv.call(call_id).unwrap();
        assert_eq!(logical.as_deref(), Some(call.logical_call_id.as_str()));
    }
    let prefix = format!("{}:ask@0#", done.invocation_id);
    assert_eq!(inv.calls[0].logical_call_id, format!("{prefix}0"));
    assert_eq!(inv.calls[1].logical_call_id, format!("{prefix}1"));
    // (node attempt, call attempt) per logical call: both lanes in one id.
    let lanes = |logical: &str| -> Vec<(u32, u32)> {
        seen.iter()
            .filter(|s| s.1.as_deref() == Some(logical))
            .map(|s| (s.2, s.3))
            .collect()
    };
    assert_eq!(
        lanes(&inv.calls[0].logical_call_id),
        [(0, 0), (0, 1), (1, 0)]
    );
    assert_eq!(lanes(&inv.calls[1].logical_call_id), [(0, 0), (1, 0)]);
    assert_eq!(inv.calls[0].call_ids.len(), 2);
}

#[tokio::test]
async fn calls_outside_a_graph_report_their_own_logical_call() {
    let p = scripted(vec![down(), ok(1, 1)]);
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let request = CompletionRequest::new(vec![Message::user("a")])
        .retry(LlmRetryConfig::from(zero().max_attempts(2)))
        .on_attempt(move |r: &crate::AttemptRecord<'_>| {
            sink.lock()
                .unwrap()
                .push((r.call_id.to_owned(), r.logical_call_id.to_owned()));
        });
    p.complete(&request).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (call_id, logical) in &seen {
        assert_eq!(logical, &format!(":{call_id}"));
    }
}

#[tokio::test]
async fn events_without_a_call_id_are_billed_not_dropped() {
    let usage = UsageAggregator::new();
    let graph = GraphBuilder::new(S::default())
        .add_node("emit", |_s: Arc<S>, ctx: NodeCtx| async move {
            let summary = LlmResponseSummary::new(None, None, usage_of(7, 3), None, None, None);
            let request = LlmRequestSummary::new(
                "x",
                "m",
                "",
                Vec::new(),
                Map::new(),
                Map::<String, Value>::new(),
            );
            ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
                ctx.call_site(),
                request,
                0,
                None,
                LlmAttemptOutcome::Completed(Arc::new(summary)),
                None,
            )));
            Ok::<SUpdate, NodeError>(SUpdate::default())
        })
        .add_edge("emit", END)
        .entry("emit")
        .compile()
        .unwrap();
    let done = graph
        .invoke_with(
            S::default(),
            InvokeOptions::default().observer(Registration::new("usage", usage.clone())),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let inv = usage.invocation(&done.invocation_id).unwrap();
    assert!(inv.calls.is_empty());
    assert_eq!(inv.unattributed.len(), 1);
    assert_eq!(inv.billed(), t(7, 3));
    assert_eq!(inv.final_usage(), TokenCounts::default());
}

fn usage_of(input: u64, output: u64) -> LlmUsage {
    usage(input, output)
}

#[test]
fn token_counts_of_unreported_usage_is_none() {
    assert_eq!(TokenCounts::of(&LlmUsage::default()), None);
    let partial = LlmUsage {
        prompt_tokens: Some(5),
        ..LlmUsage::default()
    };
    assert_eq!(TokenCounts::of(&partial), Some(t(5, 0)));
}
