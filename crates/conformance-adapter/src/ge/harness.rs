//! Spec: conformance-adapter §6.1 (in-memory observers), §6.6 (drain wiring) and the
//! §5.1 scripted node behaviours used by the graph-engine suite.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    CategorizedError, CompiledGraph, DrainSummary, DynState, DynUpdate, Node, NodeCtx, NodeError,
    NodeFuture, Observer, ObserverEvent, Phase, State,
};
use serde_json::Value;

pub(crate) use crate::shared::lock;

/// One delivery, as `delivery_order` asserts it.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) observer: String,
    pub(crate) invocation_id: String,
    pub(crate) step: u64,
    pub(crate) phase: Phase,
}

/// A drain call and how long it took (virtual time).
#[derive(Debug, Clone)]
pub(crate) struct DrainCall {
    pub(crate) timeout: Option<Duration>,
    pub(crate) elapsed: Duration,
}

/// What a node's `invoke_drain_events_for` saw.
#[derive(Debug, Clone)]
pub(crate) struct NodeDrain {
    pub(crate) node: String,
    pub(crate) invocation_id: String,
    pub(crate) summary: DrainSummary,
    pub(crate) snapshot_observer: Option<String>,
    pub(crate) snapshot: Vec<Arc<ObserverEvent>>,
}

/// Per-case recorders shared by scripted nodes and observers.
#[derive(Default)]
pub(crate) struct Harness {
    /// `(invocation_id, node)` in run order.
    pub(crate) order: Mutex<Vec<(String, String)>>,
    pub(crate) deliveries: Arc<Mutex<Vec<Delivery>>>,
    pub(crate) observers: Mutex<HashMap<String, Arc<HarnessObserver>>>,
    pub(crate) node_drains: Mutex<Vec<NodeDrain>>,
    pub(crate) drains: Mutex<Vec<DrainCall>>,
    pub(crate) outer: OnceLock<CompiledGraph<DynState>>,
    pub(crate) observer_errors: Mutex<Vec<String>>,
    /// `trace_recorder` dispatches, in order.
    pub(crate) trace_records: Mutex<Vec<TraceRecord>>,
    /// `timing` middleware records, in order.
    pub(crate) timing_records: Mutex<Vec<openarmature_pipeline::TimingRecord>>,
    /// Every retry backoff sleep requested.
    pub(crate) sleeps: Mutex<Vec<Duration>>,
    /// `on_caught: record_to_state_side_channel` writes, overlaid on `final_state`.
    pub(crate) side_channel: Mutex<serde_json::Map<String, Value>>,
    /// Harness-detected contract violations (e.g. a mutated input state).
    pub(crate) violations: Mutex<Vec<String>>,
    /// Body executions per scripted failure node.
    pub(crate) flaky_calls: Mutex<HashMap<String, u64>>,
    /// Parent fields named as fan-out / parallel-branches `errors_field` (their
    /// records are matched as subsets, adapter register R7).
    pub(crate) errors_fields: Mutex<Vec<String>>,
    /// `clock_stub: {advance_ms_per_call}` for timing middleware.
    pub(crate) clock_step_ms: Option<u64>,
}

/// One `trace_recorder` dispatch.
#[derive(Debug, Clone)]
pub(crate) struct TraceRecord {
    pub(crate) recorder: String,
    pub(crate) state_in: Value,
    pub(crate) pre_seen: bool,
    pub(crate) post_seen: bool,
    pub(crate) partial_update_returned: Option<Value>,
}

/// One scripted failure: category (`None` = uncategorised), message, cause chain.
#[derive(Debug, Clone)]
pub(crate) struct FailSpec {
    pub(crate) category: Option<String>,
    pub(crate) message: String,
    pub(crate) transient: bool,
    pub(crate) cause: Option<Box<FailSpec>>,
}

impl FailSpec {
    /// Builds the chained error (proposal 0070 `cause:`), outermost first.
    pub(crate) fn error(&self) -> CategorizedError {
        let err = CategorizedError::with_category(
            self.category
                .as_deref()
                .map(openarmature_graph::Category::from_name),
            self.message.clone(),
        )
        .transient(self.transient);
        match &self.cause {
            Some(cause) => err.with_source(cause.error()),
            None => err,
        }
    }
}

/// How a `flaky` node decides to fail.
#[derive(Debug, Clone)]
pub(crate) enum FlakyMode {
    /// Entry *i* fails call *i*; `None` or running off the end succeeds.
    Sequence(Vec<Option<FailSpec>>),
    /// Fails only in the first invocation that reaches it.
    FirstInvocation(FailSpec),
    /// `flaky_resume_aware`: the first `first` calls of the first invocation that
    /// reaches it fail, then the first `resumed` calls of every later invocation.
    ResumeAware {
        first: usize,
        resumed: usize,
        failure: FailSpec,
    },
}

/// When an instance-keyed failure mock fails.
#[derive(Debug, Clone)]
pub(crate) enum IndexedMode {
    /// `fail_when_idx: v`: fail whenever the state's `idx` equals `v`.
    WhenIdx(Value),
    /// `fail_count_per_idx` / `fail_count_per_instance: n`: the first `n` calls of
    /// each fan-out instance fail (counted across whole-instance re-runs).
    FirstCallsPerInstance(usize),
    /// `flaky_per_index: {fail_first_run_indices}`: these instances fail in the first
    /// invocation that reaches the node, never afterwards (a resume succeeds).
    FirstRunIndices(Vec<usize>),
    /// `flaky_per_index: {always_fail_indices}`: these instances always fail.
    AlwaysIndices(Vec<usize>),
}

/// `flaky_by_index` / `flaky_instance_only`.
#[derive(Debug)]
pub(crate) struct IndexedFlaky {
    pub(crate) mode: IndexedMode,
    pub(crate) failure: FailSpec,
    pub(crate) success: Vec<(String, Value)>,
    pub(crate) calls: Mutex<HashMap<Option<usize>, usize>>,
    /// The first invocation that reached the node (`FirstRunIndices`).
    pub(crate) first_invocation: Mutex<Option<String>>,
}

/// A scripted failure node's state: its call counter survives retries,
/// re-runs and invocations of one case.
#[derive(Debug)]
pub(crate) struct FlakyScript {
    pub(crate) mode: FlakyMode,
    pub(crate) success: Vec<(String, Value)>,
    pub(crate) calls: std::sync::atomic::AtomicUsize,
    pub(crate) first_invocation: Mutex<Option<String>>,
    /// Calls per invocation id (`ResumeAware`).
    pub(crate) per_invocation: Mutex<HashMap<String, usize>>,
}

impl FlakyScript {
    pub(crate) fn new(mode: FlakyMode, success: Vec<(String, Value)>) -> Self {
        FlakyScript {
            mode,
            success,
            calls: std::sync::atomic::AtomicUsize::new(0),
            first_invocation: Mutex::new(None),
            per_invocation: Mutex::new(HashMap::new()),
        }
    }

    /// Whether this call (of `invocation_id`) fails, and how.
    fn failure(&self, invocation_id: &str) -> Option<FailSpec> {
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut first = lock(&self.first_invocation);
        let first = first.get_or_insert_with(|| invocation_id.to_owned());
        match &self.mode {
            FlakyMode::Sequence(seq) => seq.get(call).cloned().flatten(),
            FlakyMode::FirstInvocation(spec) => (*first == invocation_id).then(|| spec.clone()),
            FlakyMode::ResumeAware {
                first: n,
                resumed: m,
                failure,
            } => {
                let mut calls = lock(&self.per_invocation);
                let count = calls.entry(invocation_id.to_owned()).or_default();
                *count += 1;
                let budget = if *first == invocation_id { *n } else { *m };
                (*count <= budget).then(|| failure.clone())
            }
        }
    }
}

impl Harness {
    /// The nodes of the invoked graph that ran in `invocation_id`, in order.
    pub(crate) fn order_for(&self, invocation_id: &str) -> Vec<String> {
        lock(&self.order)
            .iter()
            .filter(|(i, _)| i == invocation_id)
            .map(|(_, n)| n.clone())
            .collect()
    }

    pub(crate) fn observer(&self, name: &str) -> Option<Arc<HarnessObserver>> {
        lock(&self.observers).get(name).cloned()
    }
}

/// An observer's scripted behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    Record,
    Accumulate,
    Raise,
}

/// `sleep_ms_per_event`: fixed, or different for the first invocation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pace {
    Fixed(u64),
    FirstThenRest { first: u64, rest: u64 },
}

/// A recording / accumulating / raising observer (§6.1).
pub(crate) struct HarnessObserver {
    pub(crate) name: String,
    pub(crate) behavior: Behavior,
    pub(crate) pace: Pace,
    pub(crate) events: Mutex<Vec<Arc<ObserverEvent>>>,
    pub(crate) deliveries: Arc<Mutex<Vec<Delivery>>>,
    pub(crate) log_deliveries: bool,
    invocations_seen: Mutex<Vec<String>>,
}

impl HarnessObserver {
    pub(crate) fn new(
        name: &str,
        behavior: Behavior,
        pace: Pace,
        deliveries: Arc<Mutex<Vec<Delivery>>>,
        log_deliveries: bool,
    ) -> Self {
        HarnessObserver {
            name: name.to_owned(),
            behavior,
            pace,
            events: Mutex::new(Vec::new()),
            deliveries,
            log_deliveries,
            invocations_seen: Mutex::new(Vec::new()),
        }
    }

    /// The events this observer received for one invocation.
    pub(crate) fn events_for(&self, invocation_id: &str) -> Vec<Arc<ObserverEvent>> {
        lock(&self.events)
            .iter()
            .filter(|e| e.invocation_id() == invocation_id)
            .cloned()
            .collect()
    }

    fn pace_for(&self, invocation_id: &str) -> u64 {
        match self.pace {
            Pace::Fixed(ms) => ms,
            Pace::FirstThenRest { first, rest } => {
                let mut seen = lock(&self.invocations_seen);
                if !seen.iter().any(|s| s == invocation_id) {
                    seen.push(invocation_id.to_owned());
                }
                if seen.first().is_some_and(|s| s == invocation_id) {
                    first
                } else {
                    rest
                }
            }
        }
    }
}

impl Observer for HarnessObserver {
    fn on_event(
        &self,
        event: Arc<ObserverEvent>,
    ) -> BoxFuture<'_, Result<(), openarmature_graph::BoxError>> {
        Box::pin(async move {
            let ms = self.pace_for(event.invocation_id());
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let (true, Some(node)) = (self.log_deliveries, event.as_node()) {
                lock(&self.deliveries).push(Delivery {
                    observer: self.name.clone(),
                    invocation_id: node.invocation_id.to_string(),
                    step: node.step,
                    phase: node.phase,
                });
            }
            match self.behavior {
                Behavior::Raise => Err(format!("observer `{}` raises by design", self.name).into()),
                Behavior::Record | Behavior::Accumulate => {
                    lock(&self.events).push(event);
                    Ok(())
                }
            }
        })
    }
}

/// One scripted directive of a node, run in document order (§8.3).
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// `update`: literal field writes.
    Update(Vec<(String, Value)>),
    /// `update_pure`: literal field writes, except that a string value naming a declared
    /// field of the node's state writes that field's current value (register R14).
    UpdatePure(Vec<(String, Value)>),
    /// `update_from_field: {target: source, multiplier}`.
    UpdateFromField {
        writes: Vec<(String, String)>,
        multiplier: Value,
    },
    /// `raises`: an error with this message and (with `error_category`) category.
    Raise(String, Option<String>),
    /// `flaky`: fail per script, else write the success update.
    Flaky(Arc<FlakyScript>),
    /// `sleep_ms`: wait (virtual time) inside the body.
    Sleep(Duration),
    /// `flaky_by_index` / `flaky_instance_only`: failures keyed by fan-out instance.
    Indexed(Arc<IndexedFlaky>),
    /// `invoke_drain_events_for`.
    DrainEventsFor {
        timeout: Option<Duration>,
        snapshot_observer: Option<String>,
    },
}

/// A node made of scripted steps.
pub(crate) struct ScriptedNode {
    pub(crate) name: String,
    pub(crate) steps: Vec<Step>,
    pub(crate) harness: Arc<Harness>,
}

/// A success-update value: a string naming a declared field is read from the state.
fn read_field(state: &DynState, value: &Value) -> Value {
    match value {
        Value::String(name) => state.get(name).cloned().unwrap_or_else(|| value.clone()),
        other => other.clone(),
    }
}

fn multiply(value: &Value, by: &Value) -> Result<Value, NodeError> {
    match (value.as_i64(), by.as_i64()) {
        (Some(a), Some(b)) => Ok(Value::from(a.checked_mul(b).ok_or("integer overflow")?)),
        _ => match (value.as_f64(), by.as_f64()) {
            (Some(a), Some(b)) => {
                Ok(serde_json::Number::from_f64(a * b).map_or(Value::Null, Value::Number))
            }
            _ => Err(format!("update_from_field: cannot multiply {value} by {by}").into()),
        },
    }
}

impl Node<DynState> for ScriptedNode {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(async move {
            let mut update = DynUpdate::new();
            for step in &self.steps {
                match step {
                    Step::Update(writes) => update.fields.extend(writes.iter().cloned()),
                    Step::UpdatePure(writes) => {
                        for (target, value) in writes {
                            let resolved = value
                                .as_str()
                                .and_then(|name| state.field_json(name))
                                .unwrap_or_else(|| value.clone());
                            update.fields.push((target.clone(), resolved));
                        }
                    }
                    Step::UpdateFromField { writes, multiplier } => {
                        for (target, source) in writes {
                            let value = state.field_json(source).unwrap_or(Value::Null);
                            update
                                .fields
                                .push((target.clone(), multiply(&value, multiplier)?));
                        }
                    }
                    Step::Sleep(d) => tokio::time::sleep(*d).await,
                    Step::Raise(message, category) => {
                        *lock(&self.harness.flaky_calls)
                            .entry(self.name.clone())
                            .or_default() += 1;
                        let err: NodeError = CategorizedError::with_category(
                            category
                                .as_deref()
                                .map(openarmature_graph::Category::from_name),
                            message.clone(),
                        )
                        .into();
                        return Err(err);
                    }
                    Step::Indexed(script) => {
                        *lock(&self.harness.flaky_calls)
                            .entry(self.name.clone())
                            .or_default() += 1;
                        let fails = match &script.mode {
                            IndexedMode::WhenIdx(v) => state.get("idx") == Some(v),
                            IndexedMode::FirstCallsPerInstance(n) => {
                                let mut calls = lock(&script.calls);
                                let count = calls.entry(ctx.fan_out_index()).or_default();
                                *count += 1;
                                *count <= *n
                            }
                            IndexedMode::FirstRunIndices(indices) => {
                                let mut first = lock(&script.first_invocation);
                                let first =
                                    first.get_or_insert_with(|| ctx.invocation_id().to_owned());
                                *first == ctx.invocation_id()
                                    && ctx.fan_out_index().is_some_and(|i| indices.contains(&i))
                            }
                            IndexedMode::AlwaysIndices(indices) => {
                                ctx.fan_out_index().is_some_and(|i| indices.contains(&i))
                            }
                        };
                        if fails {
                            return Err(script.failure.error().into());
                        }
                        for (field, value) in &script.success {
                            update
                                .fields
                                .push((field.clone(), read_field(&state, value)));
                        }
                    }
                    Step::Flaky(script) => {
                        *lock(&self.harness.flaky_calls)
                            .entry(self.name.clone())
                            .or_default() += 1;
                        if let Some(spec) = script.failure(ctx.invocation_id()) {
                            return Err(spec.error().into());
                        }
                        for (field, value) in &script.success {
                            update
                                .fields
                                .push((field.clone(), read_field(&state, value)));
                        }
                    }
                    Step::DrainEventsFor {
                        timeout,
                        snapshot_observer,
                    } => {
                        let graph = self
                            .harness
                            .outer
                            .get()
                            .ok_or("outer graph not compiled yet")?;
                        let started = tokio::time::Instant::now();
                        let summary = graph.drain_events_for(ctx.invocation_id(), *timeout).await;
                        lock(&self.harness.drains).push(DrainCall {
                            timeout: *timeout,
                            elapsed: started.elapsed(),
                        });
                        let snapshot = snapshot_observer
                            .as_deref()
                            .and_then(|o| self.harness.observer(o))
                            .map(|o| o.events_for(ctx.invocation_id()))
                            .unwrap_or_default();
                        lock(&self.harness.node_drains).push(NodeDrain {
                            node: self.name.clone(),
                            invocation_id: ctx.invocation_id().to_owned(),
                            summary,
                            snapshot_observer: snapshot_observer.clone(),
                            snapshot,
                        });
                    }
                }
            }
            Ok(update)
        })
    }
}

/// Records `execution_order`: a node of the invoked graph whose body runs on its
/// first attempt.
pub(crate) struct OrderRecorder {
    pub(crate) name: String,
    pub(crate) inner: Arc<dyn Node<DynState>>,
    pub(crate) harness: Arc<Harness>,
}

impl Node<DynState> for OrderRecorder {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        if ctx.attempt_index() == 0 {
            lock(&self.harness.order).push((ctx.invocation_id().to_owned(), self.name.clone()));
        }
        self.inner.run(state, ctx)
    }

    fn emits_node_events(&self) -> bool {
        self.inner.emits_node_events()
    }

    fn event_config(&self, name: &str, state: &DynState) -> Option<openarmature_graph::NodeConfig> {
        self.inner.event_config(name, state)
    }

    fn check(
        &self,
        name: &str,
        parent: &DynState,
    ) -> Result<Vec<openarmature_graph::CompileWarning>, openarmature_graph::CompileError> {
        self.inner.check(name, parent)
    }
}
