//! Builds a [`Waterfall`] from the events a [`super::RunReport`] collected.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use openarmature_core::vocab::llm::{LlmAttemptEvent, LlmAttemptOutcome, LlmUsage};
use openarmature_graph::{NodeEvent, ObserverEvent, Phase};

use crate::node_path::node_path;

use super::model::{
    NodeTokens, Row, RowKind, Summary, Waterfall, WAIT_BACKOFF, WAIT_NODE_RETRY, WAIT_RETRY_AFTER,
};

/// One collected event and when the report received it (for events without a time).
pub(super) struct Seen {
    pub(super) received: SystemTime,
    pub(super) event: Arc<ObserverEvent>,
}

/// The node's own label, `extract_all[3]/extract`.
fn label(namespace: &[String], chain: &[Option<usize>]) -> String {
    node_path(namespace, chain, namespace.len())
}

fn tokens(usage: &LlmUsage) -> u64 {
    usage
        .total_tokens
        .unwrap_or(usage.prompt_tokens.unwrap_or(0) + usage.completion_tokens.unwrap_or(0))
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

/// A row still being built: absolute times, and the node attempt it belongs to.
struct Draft {
    row: Row,
    begin: SystemTime,
    end: Option<SystemTime>,
    /// Index of the owning node attempt in `nodes` (`None` for node rows).
    parent: Option<usize>,
}

/// The previous wire attempt of a call: when it ended, and the wait it asked for.
struct LastAttempt {
    end: SystemTime,
    retry_after: Option<Duration>,
    parent: Option<usize>,
}

#[derive(Default)]
struct Builder {
    drafts: Vec<Draft>,
    /// Draft index per node attempt, in the order they started.
    nodes: Vec<usize>,
    /// (invocation, label, node attempt) → the latest such node attempt (index into
    /// `nodes`): where LLM and isolation events of that attempt belong.
    current: HashMap<(Arc<str>, String, u32), usize>,
    /// (invocation, label, step) → the last attempt of that node execution.
    last_of_step: HashMap<(Arc<str>, String, u64), usize>,
    calls: HashMap<String, LastAttempt>,
    call_tokens: HashMap<String, String>,
    tokens: BTreeMap<String, NodeTokens>,
    invocations: usize,
    first: Option<SystemTime>,
    last: Option<SystemTime>,
    summary: Summary,
}

impl Builder {
    fn saw(&mut self, at: SystemTime) {
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    fn row(kind: RowKind, node: &str, depth: usize, node_attempt: u32) -> Row {
        Row {
            kind,
            node: node.to_owned(),
            depth,
            node_attempt,
            attempt: node_attempt,
            reason: None,
            status: String::new(),
            start: Duration::ZERO,
            duration: Duration::ZERO,
            tokens: None,
            call_id: None,
            detail: String::new(),
        }
    }

    fn node(&mut self, e: &NodeEvent) {
        self.saw(e.at);
        let node = label(&e.namespace, &e.fan_out_index_chain);
        let key = (Arc::clone(&e.invocation_id), node.clone(), e.attempt_index);
        match e.phase {
            Phase::Started => {
                let depth = e.namespace.len().saturating_sub(1);
                let mut row = Self::row(RowKind::Node, &node, depth, e.attempt_index);
                row.status = "running".into();
                if let Some(config) = &e.fan_out_config {
                    row.detail = format!("fan-out over {} items", config.item_count);
                }
                let step_key = (Arc::clone(&e.invocation_id), node.clone(), e.step);
                let index = self.nodes.len();
                if let Some(&previous) = self.last_of_step.get(&step_key) {
                    // A node-level retry: the wait between the two attempts.
                    let prev = &self.drafts[self.nodes[previous]];
                    if let Some(end) = prev.end {
                        let mut wait =
                            Self::row(RowKind::Wait, &node, depth + 1, prev.row.node_attempt);
                        wait.attempt = e.attempt_index;
                        wait.reason = Some(WAIT_NODE_RETRY.into());
                        wait.status = prev.row.status.clone();
                        wait.detail = format!(
                            "node-level backoff after {}, before node attempt {}",
                            prev.row.status, e.attempt_index
                        );
                        self.drafts.push(Draft {
                            row: wait,
                            begin: end,
                            end: Some(e.at.max(end)),
                            parent: Some(previous),
                        });
                    }
                }
                self.last_of_step.insert(step_key, index);
                self.current.insert(key, index);
                self.nodes.push(self.drafts.len());
                self.drafts.push(Draft {
                    row,
                    begin: e.at,
                    end: None,
                    parent: None,
                });
                self.summary.node_attempts += 1;
            }
            _ => {
                let Some(&index) = self.current.get(&key) else {
                    return;
                };
                let draft = &mut self.drafts[self.nodes[index]];
                draft.end = Some(e.at);
                draft.row.status = match (&e.error, e.phase) {
                    (Some(err), _) => {
                        draft.row.detail = clip(&err.message, 120);
                        err.derived_category()
                            .unwrap_or_else(|| err.category.clone())
                    }
                    (None, Phase::Suspended) => "suspended".into(),
                    (None, _) => "ok".into(),
                };
            }
        }
    }

    fn llm_attempt(&mut self, e: &LlmAttemptEvent) {
        let lineage = &e.site.lineage;
        let node = label(&lineage.namespace, &lineage.fan_out_index_chain);
        let depth = lineage.namespace.len();
        let key = (
            Arc::clone(&e.site.invocation_id),
            node.clone(),
            lineage.attempt_index,
        );
        let parent = self.current.get(&key).copied();
        let latency = e
            .latency_ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map_or(Duration::ZERO, |ms| Duration::from_secs_f64(ms / 1000.0));
        let end = e.at;
        let begin = end.checked_sub(latency).unwrap_or(end);
        self.saw(begin);
        self.saw(end);
        let call_id = e.request.call_id.to_string();

        if let Some(prev) = self.calls.get(&call_id) {
            let mut wait = Self::row(RowKind::Wait, &node, depth, lineage.attempt_index);
            wait.attempt = e.attempt_index;
            wait.call_id = Some(call_id.clone());
            let waited = begin.duration_since(prev.end).unwrap_or_default();
            let before = match e.retry_reason {
                Some(reason) => format!(", before a {} retry", reason.as_str()),
                None => String::new(),
            };
            match prev.retry_after {
                Some(asked) => {
                    wait.reason = Some(WAIT_RETRY_AFTER.into());
                    wait.detail = format!(
                        "Retry-After {} asked, {} waited{before}",
                        super::html::duration(asked),
                        super::html::duration(waited)
                    );
                    self.summary.retry_after_waits += 1;
                }
                None => {
                    wait.reason = Some(WAIT_BACKOFF.into());
                    wait.detail = format!("backoff{before}");
                }
            }
            wait.status = e.retry_reason.map_or("retry", |r| r.as_str()).to_owned();
            self.drafts.push(Draft {
                row: wait,
                begin: prev.end.min(begin),
                end: Some(begin),
                parent: prev.parent.or(parent),
            });
        }

        let mut row = Self::row(RowKind::Llm, &node, depth, lineage.attempt_index);
        row.attempt = e.attempt_index;
        row.reason = e.retry_reason.map(|r| r.as_str().to_owned());
        row.call_id = Some(call_id.clone());
        let (status, billed, retry_after) = match &e.outcome {
            LlmAttemptOutcome::Completed(r) => ("ok".to_owned(), Some(tokens(&r.usage)), None),
            LlmAttemptOutcome::Failed { failure, response } => {
                row.detail = clip(&failure.error_message, 120);
                (
                    failure.error_category.clone(),
                    response.as_ref().map(|r| tokens(&r.usage)),
                    failure.retry_after,
                )
            }
            _ => ("unknown".to_owned(), None, None),
        };
        row.status = status;
        row.tokens = billed;
        if e.retry_reason.is_some() {
            self.summary.llm_retries += 1;
        }
        if e.retry_reason == Some(openarmature_core::vocab::llm::RetryReason::Reask) {
            self.summary.reasks += 1;
        }
        self.summary.llm_attempts += 1;
        self.summary.tokens_billed += billed.unwrap_or(0);
        let entry = self
            .tokens
            .entry(node.clone())
            .or_insert_with(|| NodeTokens {
                node: node.clone(),
                ..NodeTokens::default()
            });
        entry.llm_attempts += 1;
        entry.billed += billed.unwrap_or(0);
        self.call_tokens.insert(call_id.clone(), node);
        self.calls.insert(
            call_id,
            LastAttempt {
                end,
                retry_after,
                parent,
            },
        );
        self.drafts.push(Draft {
            row,
            begin,
            end: Some(end),
            parent,
        });
    }

    fn observe(&mut self, seen: &Seen) {
        match &*seen.event {
            ObserverEvent::Node(e) => self.node(e),
            ObserverEvent::LlmAttempt(e) => self.llm_attempt(e),
            ObserverEvent::LlmCompletion(e) => {
                let t = tokens(&e.response.usage);
                self.summary.tokens_final += t;
                if let Some(node) = self.call_tokens.get(&*e.request.call_id) {
                    if let Some(entry) = self.tokens.get_mut(node) {
                        entry.final_tokens += t;
                    }
                }
            }
            ObserverEvent::FailureIsolation(e) => {
                let lineage = &e.lineage;
                let node = label(&lineage.namespace, &lineage.fan_out_index_chain);
                let key = (
                    Arc::clone(&e.invocation_id),
                    node.clone(),
                    lineage.attempt_index,
                );
                let parent = self.current.get(&key).copied();
                // The mark sits where the caught attempt ended (delivery comes later).
                let at = parent
                    .and_then(|p| self.drafts[self.nodes[p]].end)
                    .unwrap_or(seen.received);
                self.saw(at);
                let depth = lineage.namespace.len();
                let mut row = Self::row(RowKind::Degraded, &node, depth, lineage.attempt_index);
                row.reason = Some(e.event_name.clone());
                let caught = &e.caught_exception;
                row.status = caught
                    .category
                    .clone()
                    .unwrap_or_else(|| "uncategorised".into());
                row.detail = format!(
                    "{} → degraded update {}",
                    clip(&caught.message, 80),
                    clip(&e.post_state.to_string(), 80)
                );
                self.summary.degraded += 1;
                self.drafts.push(Draft {
                    row,
                    begin: at,
                    end: Some(at),
                    parent,
                });
            }
            ObserverEvent::InvocationStarted(e) => {
                self.invocations += 1;
                self.saw(e.at);
            }
            ObserverEvent::InvocationCompleted(e) => self.saw(e.at),
            _ => {}
        }
    }

    fn finish(mut self) -> Waterfall {
        let zero = self.first.unwrap_or(SystemTime::UNIX_EPOCH);
        let last = self.last.unwrap_or(zero);
        let offset = |t: SystemTime| t.duration_since(zero).unwrap_or_default();
        for draft in &mut self.drafts {
            draft.row.start = offset(draft.begin);
            let end = draft.end.unwrap_or(last);
            draft.row.duration = end.duration_since(draft.begin).unwrap_or_default();
        }
        // Each node attempt (in start order), then what belongs to it, in time order.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let mut orphans = Vec::new();
        for (i, draft) in self.drafts.iter().enumerate() {
            match draft.parent {
                Some(p) => children[p].push(i),
                None if draft.row.kind != RowKind::Node => orphans.push(i),
                None => {}
            }
        }
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_key(|&n| (self.drafts[self.nodes[n]].begin, n));
        let mut rows = Vec::with_capacity(self.drafts.len());
        let by_time = |list: &mut Vec<usize>, drafts: &[Draft]| {
            list.sort_by_key(|&i| (drafts[i].begin, drafts[i].row.kind == RowKind::Wait, i));
        };
        for n in order {
            rows.push(self.drafts[self.nodes[n]].row.clone());
            let mut list = std::mem::take(&mut children[n]);
            by_time(&mut list, &self.drafts);
            rows.extend(list.iter().map(|&i| self.drafts[i].row.clone()));
        }
        by_time(&mut orphans, &self.drafts);
        rows.extend(orphans.iter().map(|&i| self.drafts[i].row.clone()));

        let mut summary = self.summary;
        summary.duration = offset(last);
        summary.invocations = self.invocations;
        summary.llm_calls = self.calls.len();
        summary.waited = rows
            .iter()
            .filter(|r| r.kind == RowKind::Wait)
            .map(|r| r.duration)
            .sum();
        let mut tokens: Vec<NodeTokens> = self.tokens.into_values().collect();
        tokens.sort_by(|a, b| b.billed.cmp(&a.billed).then_with(|| a.node.cmp(&b.node)));
        Waterfall {
            rows,
            tokens,
            summary,
        }
    }
}

/// The waterfall of `events`, in delivery order.
pub(super) fn waterfall(events: &[Seen]) -> Waterfall {
    let mut builder = Builder::default();
    for seen in events {
        builder.observe(seen);
    }
    builder.finish()
}
