//! `report::RunReport`: the waterfall of a scripted run (nodes that report scripted
//! LLM wire attempts, a node-level retry, a degradation), checked as data and in the
//! rendered HTML's row attributes.

use std::sync::Arc;
use std::time::Duration;

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent, LlmFailure, LlmRequestSummary,
    LlmResponseSummary, LlmUsage, RetryReason,
};
use openarmature_graph::{
    CategorizedError, Category, CompiledGraph, GraphBuilder, NodeCtx, NodeError, ObserverEvent, END,
};
use openarmature_observability::report::{
    Row, RowKind, RunReport, WAIT_BACKOFF, WAIT_NODE_RETRY, WAIT_RETRY_AFTER,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{FailureIsolationMiddleware, RetryMiddleware};
use serde_json::json;

use crate::fan_support::{fan_graph, run_items, Batch, Item, ItemUpdate};

fn usage(total: u64) -> LlmUsage {
    LlmUsage {
        total_tokens: Some(total),
        ..LlmUsage::default()
    }
}

fn reply(total: u64) -> LlmResponseSummary {
    LlmResponseSummary::new(
        None,
        None,
        usage(total),
        Some("stop".into()),
        Some("{}".into()),
        None,
    )
}

/// Reports one wire attempt of call `call` (1 ms latency) from inside `ctx`'s node.
fn request(call: &str) -> LlmRequestSummary {
    LlmRequestSummary::new(
        "openai",
        "m",
        call,
        Vec::new(),
        Default::default(),
        Default::default(),
    )
}

fn attempt(
    ctx: &NodeCtx,
    call: &str,
    index: u32,
    reason: Option<RetryReason>,
    outcome: LlmAttemptOutcome,
) {
    let request = request(call);
    ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
        ctx.call_site(),
        request,
        index,
        reason,
        outcome,
        Some(1.0),
    )));
}

fn completed(ctx: &NodeCtx, call: &str, total: u64) {
    let request = request(call);
    ctx.dispatch_event(ObserverEvent::LlmCompletion(LlmCompletionEvent::new(
        ctx.call_site(),
        request,
        reply(total),
        Some(3.0),
    )));
}

/// Item 0: one call, one attempt (10 tokens). Item 1: a 429 with `Retry-After:
/// 30ms`, then a reply that fails validation (7 tokens), then a reask that succeeds
/// (12 tokens). Item 2: a failed attempt per node attempt, two node attempts, then
/// failure isolation degrades it. The 30 ms wait is slept, so it is at least that.
async fn extract(s: Arc<Item>, ctx: NodeCtx) -> Result<ItemUpdate, NodeError> {
    let call = format!("call-{}-{}", s.item, ctx.attempt_index());
    match s.item {
        0 => {
            attempt(
                &ctx,
                &call,
                0,
                None,
                LlmAttemptOutcome::Completed(Arc::new(reply(10))),
            );
            completed(&ctx, &call, 10);
        }
        1 => {
            let limited = LlmFailure::new("provider_rate_limit", None, "429 <slow down>")
                .with_retry_after(Some(Duration::from_millis(30)));
            attempt(
                &ctx,
                &call,
                0,
                None,
                LlmAttemptOutcome::Failed {
                    failure: limited,
                    response: None,
                },
            );
            tokio::time::sleep(Duration::from_millis(30)).await;
            let invalid = LlmFailure::new("structured_output_invalid", None, "not the schema");
            attempt(
                &ctx,
                &call,
                1,
                Some(RetryReason::Transient),
                LlmAttemptOutcome::Failed {
                    failure: invalid,
                    response: Some(reply(7)),
                },
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
            attempt(
                &ctx,
                &call,
                2,
                Some(RetryReason::Reask),
                LlmAttemptOutcome::Completed(Arc::new(reply(12))),
            );
            completed(&ctx, &call, 12);
        }
        _ => {
            let down = LlmFailure::new("provider_unavailable", None, "503");
            attempt(
                &ctx,
                &call,
                0,
                None,
                LlmAttemptOutcome::Failed {
                    failure: down,
                    response: None,
                },
            );
            return Err(NodeError::new(CategorizedError::new(
                Category::PROVIDER_UNAVAILABLE,
                "503",
            )));
        }
    }
    Ok(ItemUpdate::default().result(json!(s.item)))
}

fn graph() -> CompiledGraph<Batch> {
    let per_item = GraphBuilder::new(Item::default())
        .add_node("extract", extract)
        .node_middleware(
            "extract",
            Arc::new(FailureIsolationMiddleware::<Item>::new(
                "extract_degraded",
                |_s: &Item| ItemUpdate::default().result(json!({"degraded": true})),
            )),
        )
        .node_middleware(
            "extract",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(2)
                    .backoff(Constant(Duration::from_millis(5))),
            )),
        )
        .add_edge("extract", END)
        .entry("extract")
        .compile()
        .unwrap();
    fan_graph(per_item, 3)
}

async fn run() -> RunReport {
    let graph = graph();
    let report = RunReport::new();
    run_items(&graph, vec![0, 1, 2], report.registration()).await;
    report
}

fn nodes_of(rows: &[Row], kind: RowKind) -> Vec<(&str, u32)> {
    rows.iter()
        .filter(|r| r.kind == kind)
        .map(|r| (r.node.as_str(), r.attempt))
        .collect()
}

#[tokio::test]
async fn the_waterfall_has_a_row_per_attempt_wait_and_degradation() {
    let w = run().await.waterfall();
    let mut nodes = nodes_of(&w.rows, RowKind::Node);
    nodes.sort();
    assert_eq!(
        nodes,
        [
            ("fan", 0),
            ("fan[0]/extract", 0),
            ("fan[1]/extract", 0),
            ("fan[2]/extract", 0),
            ("fan[2]/extract", 1)
        ]
    );
    type LlmRow<'r> = (&'r str, u32, Option<&'r str>, &'r str, Option<u64>);
    let llm: Vec<LlmRow<'_>> = w
        .rows_of(RowKind::Llm)
        .filter(|r| r.node == "fan[1]/extract")
        .map(|r| {
            (
                r.node.as_str(),
                r.attempt,
                r.reason.as_deref(),
                r.status.as_str(),
                r.tokens,
            )
        })
        .collect();
    assert_eq!(
        llm,
        [
            ("fan[1]/extract", 0, None, "provider_rate_limit", None),
            (
                "fan[1]/extract",
                1,
                Some("transient"),
                "structured_output_invalid",
                Some(7)
            ),
            ("fan[1]/extract", 2, Some("reask"), "ok", Some(12)),
        ]
    );
    assert_eq!(w.rows_of(RowKind::Llm).count(), 6);

    let waits: Vec<(&str, Option<&str>, u32)> = w
        .rows_of(RowKind::Wait)
        .map(|r| (r.node.as_str(), r.reason.as_deref(), r.attempt))
        .collect();
    assert_eq!(
        waits,
        [
            ("fan[1]/extract", Some(WAIT_RETRY_AFTER), 1),
            ("fan[1]/extract", Some(WAIT_BACKOFF), 2),
            ("fan[2]/extract", Some(WAIT_NODE_RETRY), 1),
        ]
    );
    let retry_after = w.rows_of(RowKind::Wait).next().unwrap();
    assert!(
        retry_after.duration >= Duration::from_millis(29),
        "{retry_after:?}"
    );
    assert!(
        retry_after.detail.contains("Retry-After 30 ms asked"),
        "{}",
        retry_after.detail
    );

    let degraded: Vec<&Row> = w.rows_of(RowKind::Degraded).collect();
    assert_eq!(degraded.len(), 1);
    assert_eq!(
        (
            degraded[0].node.as_str(),
            degraded[0].attempt,
            degraded[0].reason.as_deref(),
            degraded[0].status.as_str()
        ),
        (
            "fan[2]/extract",
            1,
            Some("extract_degraded"),
            "provider_unavailable"
        )
    );

    // Each row inside a node attempt follows that attempt's row.
    let mut owner: Option<&Row> = None;
    for row in &w.rows {
        if row.kind == RowKind::Node {
            owner = Some(row);
            continue;
        }
        let owner = owner.expect("a node row first");
        assert_eq!(
            (owner.node.as_str(), owner.attempt),
            (row.node.as_str(), row.node_attempt),
            "{row:?}"
        );
    }
    // Rows are placed in time within the run.
    for row in &w.rows {
        assert!(row.start + row.duration <= w.summary.duration, "{row:?}");
    }

    let s = &w.summary;
    assert_eq!(
        (
            s.invocations,
            s.node_attempts,
            s.llm_calls,
            s.llm_attempts,
            s.llm_retries,
            s.reasks
        ),
        (1, 5, 4, 6, 2, 1)
    );
    assert_eq!((s.retry_after_waits, s.degraded), (1, 1));
    assert_eq!((s.tokens_billed, s.tokens_final), (29, 22));
    let top = &w.tokens[0];
    assert_eq!(
        (
            top.node.as_str(),
            top.llm_attempts,
            top.billed,
            top.final_tokens
        ),
        ("fan[1]/extract", 3, 19, 12)
    );
}

/// The `data-*` value of `attr` on each row element of `html`, for rows of `kind`.
fn rows_attr(html: &str, kind: &str, attr: &str) -> Vec<String> {
    html.split("<div class=\"row ")
        .skip(1)
        .filter(|r| r.contains(&format!("data-kind=\"{kind}\"")))
        .map(|r| {
            let key = format!("{attr}=\"");
            let start = r.find(&key).unwrap() + key.len();
            r[start..start + r[start..].find('"').unwrap()].to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_html_is_self_contained_and_its_rows_carry_the_data() {
    let report = run().await;
    let html = report.render_html("scripted <run>");
    assert!(html.starts_with("<!doctype html>"));
    assert!(
        !html.contains("src=") && !html.contains("href=") && !html.contains("<script"),
        "no external asset"
    );
    assert!(html.contains("<title>scripted &lt;run&gt;</title>"));
    // The error text is escaped, in the text and in the title attribute.
    assert!(html.contains("429 &lt;slow down&gt;") && !html.contains("<slow down>"));

    let w = report.waterfall();
    assert_eq!(
        rows_attr(&html, "node", "data-node").len(),
        w.summary.node_attempts
    );
    let mut reasons = rows_attr(&html, "llm", "data-reason");
    reasons.retain(|r| !r.is_empty());
    reasons.sort();
    assert_eq!(reasons, ["reask", "transient"]);
    assert_eq!(
        rows_attr(&html, "degraded", "data-node"),
        ["fan[2]/extract"]
    );
    let mut waits = rows_attr(&html, "wait", "data-reason");
    waits.sort();
    assert_eq!(waits, [WAIT_BACKOFF, WAIT_NODE_RETRY, WAIT_RETRY_AFTER]);
    assert!(html.contains("data-tokens-billed=\"29\""));
}

#[test]
fn an_empty_report_renders_an_empty_waterfall() {
    let report = RunReport::new();
    let w = report.waterfall();
    assert!(w.rows.is_empty());
    assert!(report.render_html("nothing").contains("id=\"rows\"></div>"));
}
