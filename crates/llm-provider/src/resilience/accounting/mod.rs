//! Extension 0001 (spec/extensions/0001-attempt-accounting.md): attempt accounting.
//!
//! Every wire attempt is reported with its `call_id` (one per `complete()` call),
//! its call-level `attempt_index`, and — inside a graph — the node-level attempt
//! index and the calling node's lineage. [`UsageAggregator`] groups attempts into
//! **logical calls** that survive both retry lanes and reports, per call and per
//! invocation, `final` usage (the successful attempt) and `billed` usage (every
//! attempt that reported usage, failed and reask attempts included).
//!
//! # The logical call id
//!
//! `"<invocation_id>:<node path>[<fan-out / branch lineage>]@<step>#<ordinal>"`:
//! the node execution (the engine's `step`, shared by all node-level attempts) and
//! the call's ordinal among the calls that node attempt issued
//! (claimed by every call, observed or not, in an entry of the node's
//! [`openarmature_graph::NodeCtx::extensions`]). A node-level retry that
//! re-issues the same calls in the same order maps each onto the same logical call.
//! Calls outside a graph (reported through [`crate::CompletionRequest::on_attempt`])
//! are their own logical call: `":<call_id>"` under invocation `""`.
//!
//! The call loop mints it when `complete()` starts and puts it on every typed event
//! (`LlmRequestSummary::logical_call_id`) and [`crate::AttemptRecord`]; the
//! aggregator uses it, and derives it from the event stream by the same rule (node
//! `started` events, ordinals by first-attempt arrival) only for events without one.
//!
//! Attempts whose event carries no call id are kept under
//! [`InvocationUsage::unattributed`] and billed — never dropped.
//!
//! Register the aggregator as an observer for both phases (it reads node `started`
//! events for the step). Use one path per call: the observer for calls made in a
//! node ([`crate::CompletionRequest::in_node`]), `on_attempt` for calls outside a
//! graph; an attempt reported twice on one path is counted once.

mod ledger;
mod ordinal;
mod report;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use openarmature_core::vocab::llm::{LlmAttemptOutcome, LlmRequestSummary, LlmResponseSummary};
use openarmature_graph::{BoxError, CallSite, Observer, ObserverEvent, Phase};

pub use report::{AttemptUsage, CallUsage, InvocationUsage, TokenCounts};

pub(crate) use self::ledger::logical_call_id;
pub(crate) use self::ordinal::next_call_ordinal;

use self::ledger::{Invocation, Origin};
use crate::call::{AttemptObserver, AttemptRecord};

/// Aggregates LLM usage per logical call and per invocation. Cheap to clone
/// (clones share the ledger): register one clone as an observer and keep another
/// to read the report.
///
/// # Examples
/// ```
/// use openarmature_graph::Registration;
/// use openarmature_llm::resilience::UsageAggregator;
/// let usage = UsageAggregator::new();
/// let registration = Registration::new("usage", usage.clone());
/// // graph.attach_observer(registration); graph.invoke(...).await; graph.drain(None).await;
/// // let report = usage.invocation(&invocation_id);
/// # let _ = registration;
/// ```
#[derive(Clone, Default)]
pub struct UsageAggregator {
    ledger: Arc<Mutex<BTreeMap<String, Invocation>>>,
}

impl std::fmt::Debug for UsageAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageAggregator")
            .field("invocations", &self.lock().len())
            .finish()
    }
}

fn counts(r: &LlmResponseSummary) -> Option<TokenCounts> {
    TokenCounts::of(&r.usage)
}

/// An attempt's outcome: succeeded, its error category, its usage.
type Outcome = (bool, Option<String>, Option<TokenCounts>);

/// The origin and the attempt an event at `site` for `request` reports.
fn reported<'a>(
    site: &'a CallSite,
    request: &'a LlmRequestSummary,
    attempt_index: u32,
    (succeeded, error_category, usage): Outcome,
) -> (Origin<'a>, AttemptUsage) {
    let origin = Origin {
        lineage: Some(&site.lineage),
        node_name: Some(&site.node_name),
        logical: request.logical_call_id.as_deref(),
    };
    let attempt = AttemptUsage {
        call_id: request.call_id.to_string(),
        node_attempt_index: Some(site.lineage.attempt_index),
        attempt_index,
        succeeded,
        error_category,
        usage,
    };
    (origin, attempt)
}

/// A terminal event's call, accounted as its attempt 0 unless its attempts were
/// reported.
fn terminal(
    ledger: &mut BTreeMap<String, Invocation>,
    site: &CallSite,
    request: &LlmRequestSummary,
    outcome: Outcome,
) {
    let id = site.invocation_id.to_string();
    let inv = ledger.entry(id.clone()).or_default();
    if request.call_id.is_empty() || !inv.knows_call(&request.call_id) {
        let (origin, attempt) = reported(site, request, 0, outcome);
        inv.attempt(&id, &origin, attempt);
    }
}

impl UsageAggregator {
    /// An empty aggregator.
    pub fn new() -> Self {
        UsageAggregator::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Invocation>> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The usage of invocation `invocation_id` (`""`: calls outside a graph).
    pub fn invocation(&self, invocation_id: &str) -> Option<InvocationUsage> {
        self.lock()
            .get(invocation_id)
            .map(|i| i.report(invocation_id))
    }

    /// Every invocation's usage, by invocation id.
    pub fn report(&self) -> Vec<InvocationUsage> {
        self.lock().iter().map(|(id, i)| i.report(id)).collect()
    }

    /// Removes and returns an invocation's usage (so long-running processes stay
    /// bounded).
    pub fn take(&self, invocation_id: &str) -> Option<InvocationUsage> {
        self.lock()
            .remove(invocation_id)
            .map(|i| i.report(invocation_id))
    }

    /// Accounts one engine event.
    pub fn record_event(&self, event: &ObserverEvent) {
        let mut ledger = self.lock();
        match event {
            ObserverEvent::Node(e) if e.phase == Phase::Started => {
                let unit = ledger::unit(&e.namespace, &e.fan_out_index_chain, &e.branch_name_chain);
                ledger
                    .entry(e.invocation_id.to_string())
                    .or_default()
                    .node_started(unit, e.attempt_index, e.step);
            }
            ObserverEvent::LlmAttempt(e) => {
                let outcome = match &e.outcome {
                    LlmAttemptOutcome::Completed(r) => (true, None, counts(r)),
                    LlmAttemptOutcome::Failed { failure, response } => (
                        false,
                        Some(failure.error_category.clone()),
                        response.as_ref().and_then(counts),
                    ),
                    _ => (false, None, None),
                };
                let id = e.site.invocation_id.to_string();
                let (origin, attempt) = reported(&e.site, &e.request, e.attempt_index, outcome);
                ledger
                    .entry(id.clone())
                    .or_default()
                    .attempt(&id, &origin, attempt);
            }
            // A terminal event of a call whose attempts were never reported (an
            // emitter without per-attempt events): account it as the call's attempt.
            ObserverEvent::LlmCompletion(e) => {
                let outcome = (true, None, counts(&e.response));
                terminal(&mut ledger, &e.site, &e.request, outcome);
            }
            ObserverEvent::LlmFailed(e) => {
                let category = Some(e.failure.error_category.clone());
                let outcome = (false, category, e.response.as_ref().and_then(counts));
                terminal(&mut ledger, &e.site, &e.request, outcome);
            }
            _ => {}
        }
    }
}

impl Observer for UsageAggregator {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.record_event(&event);
        Box::pin(std::future::ready(Ok(())))
    }
}

impl AttemptObserver for UsageAggregator {
    fn on_attempt(&self, record: &AttemptRecord<'_>) {
        let (succeeded, category, usage) = match record.outcome {
            Ok(r) => (true, None, TokenCounts::of(&r.usage)),
            Err(e) => (
                false,
                Some(e.category().as_str().to_owned()),
                e.structured_output()
                    .and_then(|s| TokenCounts::of(&s.usage)),
            ),
        };
        let attempt = AttemptUsage {
            call_id: record.call_id.to_owned(),
            node_attempt_index: None,
            attempt_index: record.attempt_index,
            succeeded,
            error_category: category,
            usage,
        };
        let origin = Origin {
            lineage: None,
            node_name: None,
            logical: Some(record.logical_call_id),
        };
        let mut ledger = self.lock();
        let inv = ledger.entry(String::new()).or_default();
        if !inv.has(record.call_id, record.attempt_index) {
            inv.attempt("", &origin, attempt);
        }
    }
}

#[cfg(test)]
mod tests;
