//! The run report. Every figure comes from the events an observer collected during
//! the run — node events, typed LLM events (one per wire attempt, then one per
//! call), failure-isolation events — plus the retry loop's recorded backoff
//! decisions (the delay is not on the events).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use openarmature::graph::{observer_fn, ObserverEvent, Phase, Registration};
use openarmature::llm::resilience::accounting::InvocationUsage;
use openarmature::llm::{LlmAttemptEvent, LlmAttemptOutcome, LlmUsage, RetryReason};
use serde_json::Value;

use crate::pipeline::Waits;

/// One collected event and when the observer received it.
struct Seen {
    at: Instant,
    event: Arc<ObserverEvent>,
}

/// Collects every event of a run (observers never change control flow: this one
/// only records).
#[derive(Clone, Default)]
pub struct Collector(Arc<Mutex<Vec<Seen>>>);

impl Collector {
    /// A registration for `InvokeOptions::observer`.
    pub fn registration(&self) -> Registration {
        let sink = Arc::clone(&self.0);
        Registration::new(
            "run-report",
            observer_fn(move |event: Arc<ObserverEvent>| {
                let sink = Arc::clone(&sink);
                async move {
                    let seen = Seen {
                        at: Instant::now(),
                        event,
                    };
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(seen);
                    Ok(())
                }
            }),
        )
    }
}

/// `extract_all[3]/extract`: namespace segments with their fan-out indices.
fn label(namespace: &[String], chain: &[Option<usize>]) -> String {
    let parts: Vec<String> = namespace
        .iter()
        .enumerate()
        .map(|(i, name)| match chain.get(i).copied().flatten() {
            Some(k) => format!("{name}[{k}]"),
            None => name.clone(),
        })
        .collect();
    parts.join("/")
}

fn secs(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    } else if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

fn clip(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn tokens(usage: &LlmUsage) -> u64 {
    usage
        .total_tokens
        .unwrap_or(usage.prompt_tokens.unwrap_or(0) + usage.completion_tokens.unwrap_or(0))
}

/// Tokens an attempt was billed for: its response's usage (a successful reply, or a
/// reply that failed schema validation); errors without a reply bill nothing.
fn attempt_tokens(attempt: &LlmAttemptEvent) -> Option<u64> {
    match &attempt.outcome {
        LlmAttemptOutcome::Completed(r) => Some(tokens(&r.usage)),
        LlmAttemptOutcome::Failed { response, .. } => response.as_ref().map(|r| tokens(&r.usage)),
        _ => None,
    }
}

#[derive(Default)]
struct NodeRow {
    label: String,
    /// (attempt index, started at, completed at, error "category: message").
    attempts: Vec<(u32, SystemTime, Option<SystemTime>, Option<String>)>,
    instances: Option<usize>,
    degraded: bool,
}

struct CallRow {
    label: String,
    fan_out_index: Option<usize>,
    node_attempt: u32,
    attempts: Vec<(Instant, LlmAttemptEvent)>,
    /// `Ok(final tokens)` or `Err(category)`.
    outcome: Option<Result<u64, String>>,
}

/// What the checks count.
#[derive(Debug, Default)]
pub struct Tally {
    /// Calls that needed more than one attempt.
    pub retried_calls: usize,
    /// Attempts scheduled by a reask.
    pub reasks: usize,
    /// Retries whose wait met the provider's `Retry-After`.
    pub retry_after_honoured: usize,
    /// Failure-isolation catches.
    pub degraded: usize,
}

/// Renders the report; returns it with the tally. `usage` is the library's own
/// aggregation of the same events (`UsageAggregator`, extension 0001), which groups
/// a node-level retry's calls into one logical call.
pub fn render(collector: &Collector, waits: &Waits, usage: &[InvocationUsage]) -> (String, Tally) {
    let seen = collector.0.lock().unwrap_or_else(PoisonError::into_inner);
    let mut nodes: Vec<NodeRow> = Vec::new();
    let mut calls: Vec<CallRow> = Vec::new();
    let mut call_index: BTreeMap<String, usize> = BTreeMap::new();
    let mut degraded_lines: Vec<String> = Vec::new();
    let mut tally = Tally::default();

    for Seen { at, event } in seen.iter() {
        match &**event {
            ObserverEvent::Node(e) => {
                let key = label(&e.namespace, &e.fan_out_index_chain);
                let row = match nodes.iter().position(|n| n.label == key) {
                    Some(i) => &mut nodes[i],
                    None => {
                        nodes.push(NodeRow {
                            label: key,
                            ..NodeRow::default()
                        });
                        let last = nodes.len() - 1;
                        &mut nodes[last]
                    }
                };
                if let Some(config) = &e.fan_out_config {
                    row.instances = Some(config.item_count);
                }
                match e.phase {
                    Phase::Started => row.attempts.push((e.attempt_index, e.at, None, None)),
                    _ => {
                        let error = e.error.as_ref().map(|err| {
                            let category = err
                                .derived_category()
                                .unwrap_or_else(|| err.category.clone());
                            format!("{category}: {}", clip(&err.message, 60))
                        });
                        if let Some(a) = row
                            .attempts
                            .iter_mut()
                            .rev()
                            .find(|a| a.0 == e.attempt_index)
                        {
                            a.2 = Some(e.at);
                            a.3 = error;
                        }
                    }
                }
            }
            ObserverEvent::LlmAttempt(e) => {
                let i = *call_index
                    .entry(e.request.call_id.to_string())
                    .or_insert_with(|| {
                        calls.push(CallRow {
                            label: label(
                                &e.site.lineage.namespace,
                                &e.site.lineage.fan_out_index_chain,
                            ),
                            fan_out_index: e.site.lineage.fan_out_index,
                            node_attempt: e.site.lineage.attempt_index,
                            attempts: Vec::new(),
                            outcome: None,
                        });
                        calls.len() - 1
                    });
                calls[i].attempts.push((*at, e.clone()));
            }
            ObserverEvent::LlmCompletion(e) => {
                if let Some(&i) = call_index.get(&*e.request.call_id) {
                    calls[i].outcome = Some(Ok(tokens(&e.response.usage)));
                }
            }
            ObserverEvent::LlmFailed(e) => {
                if let Some(&i) = call_index.get(&*e.request.call_id) {
                    calls[i].outcome = Some(Err(e.failure.error_category.clone()));
                }
            }
            ObserverEvent::FailureIsolation(e) => {
                tally.degraded += 1;
                let where_ = label(&e.lineage.namespace, &e.lineage.fan_out_index_chain);
                if let Some(row) = nodes.iter_mut().find(|n| n.label == where_) {
                    row.degraded = true;
                }
                let caught = &e.caught_exception;
                degraded_lines.push(format!(
                    "  {where_}  event `{}` after node attempt {}\n      caught: {}: {}\n      degraded update: {}",
                    e.event_name,
                    e.lineage.attempt_index,
                    caught.category.as_deref().unwrap_or("uncategorised"),
                    clip(&caught.message, 70),
                    clip(&e.post_state.to_string(), 80),
                ));
            }
            _ => {}
        }
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Nodes (node events: one started/completed pair per attempt)"
    );
    for n in &nodes {
        let first = n.attempts.first().map(|a| a.1);
        let last = n.attempts.iter().rev().find_map(|a| a.2);
        let took = match (first, last) {
            (Some(a), Some(b)) => b.duration_since(a).map(secs).unwrap_or_default(),
            _ => String::new(),
        };
        let failed = n.attempts.last().is_some_and(|a| a.3.is_some());
        let outcome = match (n.degraded, failed, n.instances) {
            (true, _, _) => "DEGRADED".to_owned(),
            (false, true, _) => "failed".to_owned(),
            (false, false, Some(k)) => format!("ok, {k} instances"),
            (false, false, None) => "ok".to_owned(),
        };
        let tries = match n.attempts.len() {
            1 => "1 attempt ".to_owned(),
            k => format!("{k} attempts"),
        };
        let _ = writeln!(out, "  {:<24} {tries}  {outcome:<17} {took:>9}", n.label);
        if n.attempts.len() > 1 || n.degraded {
            for (k, (index, _, _, error)) in n.attempts.iter().enumerate() {
                let what = error.as_deref().unwrap_or("ok");
                let then = if k + 1 < n.attempts.len() {
                    " → re-run by RetryMiddleware"
                } else if n.degraded {
                    " → caught by FailureIsolationMiddleware"
                } else {
                    ""
                };
                let _ = writeln!(out, "      attempt {index}: {what}{then}");
            }
        }
    }

    // Group a node's calls together (node retries issue a fresh call each).
    calls.sort_by_key(|c| (c.fan_out_index, c.label.clone(), c.node_attempt));
    let _ = writeln!(
        out,
        "\nLLM calls (typed LLM events: one per wire attempt, then one per call)"
    );
    // The prompt context each call ran in (`active_prompt` on its events).
    let prompt = seen.iter().find_map(|s| match &*s.event {
        ObserverEvent::LlmCompletion(e) => e.request.active_prompt().cloned(),
        _ => None,
    });
    if let Some(p) = prompt {
        let _ = writeln!(
            out,
            "  prompt {} {} ({}), template {}",
            p.name,
            p.version,
            p.label,
            clip(&p.template_hash, 19)
        );
    }
    let (mut attempts_total, mut final_total, mut billed_total) = (0usize, 0u64, 0u64);
    for call in &calls {
        let billed: u64 = call
            .attempts
            .iter()
            .filter_map(|(_, a)| attempt_tokens(a))
            .sum();
        let (status, final_tokens) = match &call.outcome {
            Some(Ok(t)) => ("ok".to_owned(), *t),
            Some(Err(category)) => (format!("FAILED {category}"), 0),
            None => ("no terminal event".to_owned(), 0),
        };
        attempts_total += call.attempts.len();
        final_total += final_tokens;
        billed_total += billed;
        if call.attempts.len() > 1 {
            tally.retried_calls += 1;
        }
        let id: String = call
            .attempts
            .first()
            .map(|(_, a)| a.request.call_id.chars().take(8).collect())
            .unwrap_or_default();
        let tries = match call.attempts.len() {
            1 => "1 attempt ".to_owned(),
            k => format!("{k} attempts"),
        };
        let _ = writeln!(
            out,
            "  {:<24} call {id}  node attempt {}  {tries}  tokens final {final_tokens:>3} / billed {billed:>3}  → {status}",
            call.label, call.node_attempt,
        );
        if call.attempts.len() == 1 && call.outcome.as_ref().is_some_and(Result::is_ok) {
            continue;
        }
        for (k, (at, attempt)) in call.attempts.iter().enumerate() {
            let took = attempt
                .latency_ms
                .map(|ms| secs(Duration::from_secs_f64(ms / 1000.0)))
                .unwrap_or_default();
            let billed =
                attempt_tokens(attempt).map_or_else(String::new, |t| format!(", {t} tokens"));
            let what = match &attempt.outcome {
                LlmAttemptOutcome::Completed(_) => "ok".to_owned(),
                LlmAttemptOutcome::Failed { failure, .. } => format!(
                    "{}{}: {}",
                    failure.error_category,
                    failure
                        .error_type
                        .as_deref()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default(),
                    clip(&failure.error_message, 64)
                ),
                _ => "?".to_owned(),
            };
            let _ = writeln!(
                out,
                "      #{} {what}  [{took}{billed}]",
                attempt.attempt_index
            );
            let Some((next_at, next)) = call.attempts.get(k + 1) else {
                continue;
            };
            let reason = match next.retry_reason {
                Some(RetryReason::Reask) => {
                    tally.reasks += 1;
                    "reask: bad output + correction appended"
                }
                Some(RetryReason::Transient) => "transient",
                _ => "unknown",
            };
            let wait = waits.get(call.fan_out_index, call.node_attempt, attempt.attempt_index);
            let waited = match wait {
                Some(w) => match w.retry_after {
                    Some(asked) => {
                        // The gap between the two attempt events, minus the next attempt's own latency.
                        let next_latency =
                            Duration::from_secs_f64(next.latency_ms.unwrap_or(0.0) / 1000.0);
                        let observed = next_at
                            .saturating_duration_since(*at)
                            .saturating_sub(next_latency);
                        // Generous slack on the observed gap: event delivery runs on its own task.
                        let honoured =
                            w.delay >= asked && observed + Duration::from_millis(100) >= asked;
                        if honoured {
                            tally.retry_after_honoured += 1;
                        }
                        format!(
                            "waited {}: Retry-After {} {} ({} between the attempt events)",
                            secs(w.delay),
                            secs(asked),
                            if honoured { "honoured" } else { "NOT honoured" },
                            secs(observed)
                        )
                    }
                    None => format!("waited {} (backoff)", secs(w.delay)),
                },
                None => "wait not recorded".to_owned(),
            };
            let _ = writeln!(out, "         ↳ retried ({reason}); {waited}");
        }
    }

    let _ = writeln!(out, "\nDegraded (failure-isolation events)");
    if degraded_lines.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for line in &degraded_lines {
        let _ = writeln!(out, "{line}");
    }

    let _ = writeln!(
        out,
        "\nTotals: {} calls, {attempts_total} wire attempts, tokens final {final_total} / billed {billed_total}\n        \
         {} retried call(s), {} reask(s), {} Retry-After honoured, {} degraded node(s)",
        calls.len(),
        tally.retried_calls,
        tally.reasks,
        tally.retry_after_honoured,
        tally.degraded,
    );
    let (mut logical, mut final_usage, mut billed_usage) = (0usize, 0u64, 0u64);
    for invocation in usage {
        logical += invocation.calls.len();
        final_usage += invocation.final_usage().total;
        billed_usage += invocation.billed().total;
    }
    let _ = writeln!(
        out,
        "        UsageAggregator: {logical} logical calls (a node retry's calls count once), tokens final {final_usage} / billed {billed_usage}"
    );
    (out, tally)
}

/// The final state's per-chunk results, one line each.
pub fn results(results: &[Value]) -> String {
    let mut out = String::new();
    for (i, r) in results.iter().enumerate() {
        let _ = writeln!(out, "  [{i}] {}", clip(&r.to_string(), 100));
    }
    out
}
