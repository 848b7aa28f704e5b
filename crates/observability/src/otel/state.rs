//! Spec: observability §4 (span hierarchy, timing, status, parent-child rules,
//! detached trace mode), §5.1–§5.4 / §5.6 / §5.7 (attributes) and §6 (observer-driven
//! lifecycle, dispatch-span synthesis) — the per-invocation span state machine.
//!
//! Everything here runs under the observer's lock, driven by the serial delivery
//! queue, so the open/close pairing is unambiguous (§6). Parents are resolved from
//! this state, never from an ambient OpenTelemetry context: every span is started
//! with an explicit parent context.
//!
//! - Node spans open at `started` and close at `completed`, keyed by
//!   `(unit, attempt_index)` ([`Key`]).
//! - Wrapper spans (subgraph, fan-out instance, parallel-branch dispatch) are
//!   synthesized lazily on the first event inside them, keyed by their scope, and
//!   closed when the level they sit in moves on ([`Key::departed_by`]) — for a
//!   composite that is its own `completed` event — or when the invocation ends.
//!   A wrapper's status is the outcome of the last node that completed inside it.
//! - Detached wrappers (§4.4) root a new trace in their own invocation span and are
//!   linked from the parent trace.

mod augment;
mod call_span;
mod retrieval;
mod tool;

pub(crate) use retrieval::LANGFUSE_EMBEDDING_OUTPUT;
pub(crate) use tool::ToolOutcome;

use std::collections::HashMap;
use std::time::SystemTime;

use openarmature_core::vocab::llm::LlmAttemptEvent;
use openarmature_graph::{
    EventError, ExtensionEvent, FanOutConfig, InvocationMetadata, NodeEvent,
    ParallelBranchesConfig, Phase,
};
use opentelemetry::global::BoxedSpan;
use opentelemetry::trace::{Link, Span, SpanBuilder, SpanContext, Status, TraceContextExt, Tracer};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value as OtelValue};

use super::keys::Key;
use super::Config;
use crate::attributes as attr;

/// A span with its context (the parent of its children).
pub(crate) struct Open {
    pub(crate) span: BoxedSpan,
    pub(crate) sc: SpanContext,
    /// The explicit start time it was given, if any.
    pub(crate) start: Option<SystemTime>,
}

impl Open {
    fn start(tracer: &dyn TracerDyn, builder: SpanBuilder, parent: Option<&SpanContext>) -> Open {
        let cx = match parent {
            Some(sc) => Context::new().with_remote_span_context(sc.clone()),
            None => Context::new(),
        };
        let start = builder.start_time;
        let span = tracer.start(builder, &cx);
        let sc = span.span_context().clone();
        Open { span, sc, start }
    }
}

/// The tracer, object-safe (a [`opentelemetry::global::BoxedTracer`] in practice).
pub(crate) trait TracerDyn: Send + Sync {
    fn start(&self, builder: SpanBuilder, parent: &Context) -> BoxedSpan;
}

impl TracerDyn for opentelemetry::global::BoxedTracer {
    fn start(&self, builder: SpanBuilder, parent: &Context) -> BoxedSpan {
        self.build_with_context(builder, parent)
    }
}

/// An outcome as spans record it: the §4 category and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) category: String,
    pub(crate) message: String,
}

impl From<&EventError> for Failure {
    fn from(e: &EventError) -> Self {
        Failure {
            category: e.category.clone(),
            message: e.message.clone(),
        }
    }
}

/// Sets the §4.2 status: OK, or ERROR with the category as description, the
/// `openarmature.error.category` attribute and an exception event.
pub(crate) fn apply_outcome(span: &mut BoxedSpan, outcome: Option<&Failure>) {
    match outcome {
        None => span.set_status(Status::Ok),
        Some(f) => {
            span.set_attribute(KeyValue::new(attr::ERROR_CATEGORY, f.category.clone()));
            span.add_event(
                attr::EXCEPTION_EVENT,
                vec![
                    KeyValue::new(attr::EXCEPTION_TYPE, f.category.clone()),
                    KeyValue::new(attr::EXCEPTION_MESSAGE, f.message.clone()),
                ],
            );
            span.set_status(Status::error(f.category.clone()));
        }
    }
}

#[derive(Debug, Clone)]
enum WrapperKind {
    Subgraph,
    Instance,
    Branch(String),
}

/// A synthesized span around a nested run (§4.3, §5.3, §5.4, §5.7).
struct Wrapper {
    kind: WrapperKind,
    /// The span inner spans parent under.
    inner: Open,
    /// Detached mode: the detached trace's invocation span.
    detached_root: Option<Open>,
    /// Detached subgraph: the dispatch span in the parent trace (carries the Link).
    dispatch: Option<Open>,
    /// The outcome of the last node that completed inside.
    outcome: Option<Failure>,
    /// When that node completed.
    last_activity: Option<SystemTime>,
    /// Opening order, for deterministic closing.
    seq: u64,
}

impl Wrapper {
    /// The span the wrapper node itself is rendered as in its parent's trace.
    fn outer_sc(&self) -> &SpanContext {
        self.dispatch.as_ref().map_or(&self.inner.sc, |d| &d.sc)
    }

    fn close(mut self, now: SystemTime) {
        let end = match self.kind {
            // §5.7: dispatch spans end when the parallel-branches node completes.
            WrapperKind::Branch(_) => now,
            WrapperKind::Subgraph | WrapperKind::Instance => self.last_activity.unwrap_or(now),
        };
        let outcome = self.outcome.as_ref();
        apply_outcome(&mut self.inner.span, outcome);
        self.inner.span.end_with_timestamp(end);
        if let Some(mut root) = self.detached_root.take() {
            apply_outcome(&mut root.span, outcome);
            root.span.end_with_timestamp(end);
        }
        if let Some(mut dispatch) = self.dispatch.take() {
            apply_outcome(&mut dispatch.span, outcome);
            dispatch.span.end_with_timestamp(end);
        }
    }
}

#[derive(Debug, Clone)]
enum Composite {
    FanOut(FanOutConfig),
    Branches(ParallelBranchesConfig),
}

/// A composite node's current execution (cached from its `started` event, §6).
struct CompositeRun {
    kind: Composite,
    attempt: u32,
}

/// A log record waiting for the span it belongs to (§7).
pub(crate) struct PendingLog {
    pub(crate) unit: Key,
    pub(crate) attempt: u32,
    pub(crate) record: super::logs::LogLine,
}

/// One invocation's open spans.
pub(crate) struct InvState {
    pub(crate) invocation_id: String,
    pub(crate) correlation_id: String,
    /// `openarmature.user.*` attributes of the caller's metadata (§5.6).
    pub(crate) user: Vec<KeyValue>,
    /// `openarmature.session_id` when the invocation is session-bound (§5.6).
    pub(crate) session: Option<KeyValue>,
    /// The metadata snapshot of the event being handled and its `openarmature.user.*`
    /// attributes (§3.4 *Forward flow*: spans opened now carry it); converted once
    /// per distinct snapshot. `None`: the caller's (`user`).
    event_user: Option<(InvocationMetadata, Vec<KeyValue>)>,
    root: Open,
    entry_set: bool,
    /// Lazily begun invocations: the last completed node's outcome.
    last_outcome: Option<Failure>,
    nodes: HashMap<(Key, u32), Open>,
    wrappers: HashMap<Key, Wrapper>,
    composites: HashMap<Key, CompositeRun>,
    pub(crate) pending_logs: Vec<PendingLog>,
    seq: u64,
}

impl InvState {
    /// Opens the invocation span (§4.1, §5.1) in a new trace, started at `start`.
    /// Without an `entry`, the first node event names it.
    pub(crate) fn begin(
        tracer: &dyn TracerDyn,
        config: &Config,
        invocation_id: String,
        correlation_id: String,
        user: Vec<KeyValue>,
        start: SystemTime,
        entry: Option<&str>,
    ) -> InvState {
        let mut attrs = invocation_attrs(config, &invocation_id);
        if let Some(entry) = entry {
            attrs.push(KeyValue::new(attr::GRAPH_ENTRY_NODE, entry.to_owned()));
        }
        attrs.extend(cross_cutting(&correlation_id, &user));
        let root = Open::start(
            tracer,
            SpanBuilder::from_name(attr::INVOCATION_SPAN)
                .with_start_time(start)
                .with_attributes(attrs),
            None,
        );
        InvState {
            invocation_id,
            correlation_id,
            user,
            session: None,
            event_user: None,
            root,
            entry_set: entry.is_some(),
            last_outcome: None,
            nodes: HashMap::new(),
            wrappers: HashMap::new(),
            composites: HashMap::new(),
            pending_logs: Vec::new(),
            seq: 0,
        }
    }

    fn cross_cutting(&self) -> Vec<KeyValue> {
        let user = self
            .event_user
            .as_ref()
            .map_or(&self.user, |(_, user)| user);
        let mut attrs = cross_cutting(&self.correlation_id, user);
        attrs.extend(self.session.clone());
        attrs
    }

    /// Binds the invocation to its session (§5.6): the invocation span and every span
    /// and log record made from now on carry `openarmature.session_id`.
    pub(crate) fn adopt_session(&mut self, session_id: Option<&str>) {
        if let Some(id) = session_id {
            let kv = KeyValue::new(attr::SESSION_ID, id.to_owned());
            self.root.span.set_attribute(kv.clone());
            self.session = Some(kv);
        }
    }

    /// Spans opened while handling the current event carry `metadata` (`None`: the
    /// caller's metadata, for events that carry no snapshot).
    fn use_metadata(&mut self, metadata: Option<&InvocationMetadata>) {
        let Some(metadata) = metadata else {
            self.event_user = None;
            return;
        };
        if self
            .event_user
            .as_ref()
            .is_some_and(|(seen, _)| seen.ptr_eq(metadata))
        {
            return;
        }
        let user = crate::metadata::lenient_user_attributes(metadata);
        self.event_user = Some((metadata.clone(), user));
    }

    /// The invocation's `started` event reached an invocation begun lazily (its
    /// first node event or log record came first): completes the root span.
    pub(crate) fn adopt_started(&mut self, entry: &str, user: Vec<KeyValue>) {
        if !self.entry_set {
            self.root
                .span
                .set_attribute(KeyValue::new(attr::GRAPH_ENTRY_NODE, entry.to_owned()));
            self.entry_set = true;
        }
        if self.user.is_empty() && !user.is_empty() {
            self.root.span.set_attributes(user.clone());
            self.user = user;
        }
    }

    /// Handles one node event (§6).
    pub(crate) fn on_node(&mut self, tracer: &dyn TracerDyn, config: &Config, e: &NodeEvent) {
        self.use_metadata(Some(&e.metadata));
        let now = e.at;
        let unit = Key::unit(&e.namespace, &e.fan_out_index_chain, &e.branch_name_chain);
        self.enter(tracer, config, &unit, now);
        let callable = self.is_callable_branch(&unit, &e.node_name);
        match e.phase {
            Phase::Started => {
                if let Some(c) = &e.fan_out_config {
                    self.composites.insert(
                        unit.clone(),
                        CompositeRun {
                            kind: Composite::FanOut(c.clone()),
                            attempt: e.attempt_index,
                        },
                    );
                } else if let Some(c) = &e.parallel_branches_config {
                    self.composites.insert(
                        unit.clone(),
                        CompositeRun {
                            kind: Composite::Branches(c.clone()),
                            attempt: e.attempt_index,
                        },
                    );
                }
                if callable {
                    // §5.2 / §5.7: the callable is the event-source unit its dispatch
                    // span renders, so that span carries the unit's attempt index
                    // (the dispatching node's current attempt, fixture 119).
                    if let Some(w) = self.wrappers.get_mut(&unit.scope(unit.depth() - 1)) {
                        w.inner.span.set_attribute(KeyValue::new(
                            attr::NODE_ATTEMPT_INDEX,
                            i64::from(e.attempt_index),
                        ));
                    }
                } else {
                    self.open_node(tracer, &unit, e, now);
                }
            }
            Phase::Completed => {
                let outcome = e.error.as_ref().map(Failure::from);
                for d in 1..unit.depth() {
                    if let Some(w) = self.wrappers.get_mut(&unit.scope(d)) {
                        w.outcome = outcome.clone();
                        w.last_activity = Some(now);
                    }
                }
                self.last_outcome = outcome.clone();
                self.composites.remove(&unit);
                if let Some(mut open) = self.nodes.remove(&(unit, e.attempt_index)) {
                    if let Some(c) = &e.fan_out_config {
                        open.span.set_attributes(fan_out_node_attrs(c));
                    }
                    apply_outcome(&mut open.span, outcome.as_ref());
                    open.span.end_with_timestamp(now);
                }
            }
            Phase::Suspended => {
                for d in 1..unit.depth() {
                    if let Some(w) = self.wrappers.get_mut(&unit.scope(d)) {
                        w.outcome = None;
                        w.last_activity = Some(now);
                    }
                }
                self.last_outcome = None;
                self.composites.remove(&unit);
                if let Some(mut open) = self.nodes.remove(&(unit, e.attempt_index)) {
                    if let Some(c) = &e.fan_out_config {
                        open.span.set_attributes(fan_out_node_attrs(c));
                    }
                    open.span
                        .set_attributes(suspension_attrs(e.descriptor.as_deref()));
                    apply_outcome(&mut open.span, None);
                    open.span.end_with_timestamp(now);
                }
            }
            _ => {}
        }
    }

    /// Marks the invocation span suspended (§4.2): OTel `OK` plus
    /// `openarmature.outcome = "suspended"`; no suspension attributes (§5.8).
    pub(crate) fn mark_suspended(&mut self) {
        self.root
            .span
            .set_attribute(KeyValue::new(attr::OUTCOME, "suspended"));
    }

    /// Activity at `unit`: closes the wrappers it shows are done, sets the entry node
    /// and opens the wrappers on its path; flushes the log records it made resolvable.
    pub(crate) fn enter(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        unit: &Key,
        now: SystemTime,
    ) {
        self.flush_logs(config, false);
        self.close_departed(unit, now);
        if !self.entry_set {
            if let Some(first) = unit.namespace.first() {
                self.root
                    .span
                    .set_attribute(KeyValue::new(attr::GRAPH_ENTRY_NODE, first.clone()));
                self.entry_set = true;
            }
        }
        for d in 1..unit.depth() {
            let scope = unit.scope(d);
            if !self.wrappers.contains_key(&scope) {
                self.open_wrapper(tracer, config, unit, scope, now);
            }
        }
    }

    fn close_departed(&mut self, unit: &Key, now: SystemTime) {
        let departed: Vec<Key> = self
            .wrappers
            .keys()
            .filter(|scope| scope.departed_by(unit))
            .cloned()
            .collect();
        self.close_wrappers(departed, now);
    }

    /// Closes wrappers children first; parallel-branch dispatch spans of one node in
    /// declaration order (§6 step 5).
    fn close_wrappers(&mut self, scopes: Vec<Key>, now: SystemTime) {
        let mut closing: Vec<(Key, Wrapper)> = scopes
            .into_iter()
            .filter_map(|s| self.wrappers.remove(&s).map(|w| (s, w)))
            .collect();
        let composites = &self.composites;
        let declared = |scope: &Key, w: &Wrapper| -> usize {
            match (&w.kind, composites.get(&scope.wrapper_unit())) {
                (
                    WrapperKind::Branch(b),
                    Some(CompositeRun {
                        kind: Composite::Branches(c),
                        ..
                    }),
                ) => c
                    .branch_names
                    .iter()
                    .position(|n| n == b)
                    .unwrap_or(usize::MAX),
                _ => usize::MAX,
            }
        };
        closing.sort_by(|(sa, wa), (sb, wb)| {
            sb.depth()
                .cmp(&sa.depth())
                .then_with(|| declared(sa, wa).cmp(&declared(sb, wb)))
                .then_with(|| wa.seq.cmp(&wb.seq))
        });
        for (_, w) in closing {
            w.close(now);
        }
    }

    /// The context inner spans of `unit`'s level parent under: the wrapper of the
    /// scope it lives in, or the invocation span at the top level.
    fn enclosing(&self, unit: &Key) -> SpanContext {
        let d = unit.depth().saturating_sub(1);
        if d == 0 {
            return self.root.sc.clone();
        }
        self.wrappers
            .get(&unit.scope(d))
            .map_or_else(|| self.root.sc.clone(), |w| w.inner.sc.clone())
    }

    fn open_wrapper(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        unit: &Key,
        scope: Key,
        now: SystemTime,
    ) {
        let d = scope.depth();
        let node = scope.namespace[d - 1].clone();
        let composite_unit = scope.wrapper_unit();
        let composite = self
            .composites
            .get(&composite_unit)
            .map(|c| (c.kind.clone(), c.attempt));
        let composite_key = composite
            .as_ref()
            .map(|(_, attempt)| (composite_unit.clone(), *attempt));
        let parent_sc = composite_key
            .as_ref()
            .and_then(|k| self.nodes.get(k))
            .map_or_else(|| self.enclosing(&composite_unit), |o| o.sc.clone());
        let (kind, name, mut attrs, detached) = match (
            composite.map(|(k, _)| k),
            scope.fan_out[d - 1],
            scope.branch[d - 1].clone(),
        ) {
            (Some(Composite::FanOut(c)), Some(i), _) => (
                WrapperKind::Instance,
                node.clone(),
                vec![
                    KeyValue::new(attr::NODE_FAN_OUT_INDEX, index(i)),
                    KeyValue::new(attr::FAN_OUT_PARENT_NODE_NAME, c.parent_node_name),
                ],
                config.detached_fan_outs.contains(&node),
            ),
            (Some(Composite::Branches(c)), _, Some(b)) => (
                WrapperKind::Branch(b.clone()),
                b.clone(),
                vec![
                    KeyValue::new(attr::NODE_BRANCH_NAME, b),
                    KeyValue::new(attr::PARALLEL_BRANCHES_PARENT_NODE_NAME, c.parent_node_name),
                ],
                false,
            ),
            _ => (
                WrapperKind::Subgraph,
                node.clone(),
                vec![
                    KeyValue::new(attr::NODE_NAME, node.clone()),
                    KeyValue::new(
                        attr::SUBGRAPH_NAME,
                        config
                            .subgraph_names
                            .get(&node)
                            .cloned()
                            .unwrap_or_default(),
                    ),
                ],
                config.detached_subgraphs.contains(&node),
            ),
        };
        attrs.extend(self.cross_cutting());
        let (inner, detached_root, dispatch) = if detached {
            // §4.4: a new trace rooted in its own invocation span: same invocation id,
            // the detached unit's entry node.
            let entry = unit.namespace.get(d).cloned().unwrap_or_default();
            let mut root_attrs = invocation_attrs(config, &self.invocation_id);
            root_attrs.push(KeyValue::new(attr::GRAPH_ENTRY_NODE, entry));
            root_attrs.extend(self.cross_cutting());
            let root = Open::start(
                tracer,
                SpanBuilder::from_name(attr::INVOCATION_SPAN)
                    .with_start_time(now)
                    .with_attributes(root_attrs),
                None,
            );
            let link = Link::new(root.sc.clone(), Vec::new(), 0);
            match kind {
                WrapperKind::Subgraph => {
                    // The detached trace's outermost graph is the subgraph itself.
                    let inner_name = config
                        .subgraph_names
                        .get(&node)
                        .cloned()
                        .unwrap_or(name.clone());
                    let inner = Open::start(
                        tracer,
                        SpanBuilder::from_name(inner_name)
                            .with_start_time(now)
                            .with_attributes(attrs.clone()),
                        Some(&root.sc),
                    );
                    let dispatch = Open::start(
                        tracer,
                        SpanBuilder::from_name(name)
                            .with_start_time(now)
                            .with_attributes(attrs)
                            .with_links(vec![link]),
                        Some(&parent_sc),
                    );
                    (inner, Some(root), Some(dispatch))
                }
                _ => {
                    // Detached fan-out: the node span gets one Link per instance trace.
                    if let Some(open) = composite_key.as_ref().and_then(|k| self.nodes.get_mut(k)) {
                        open.span.add_link(link.span_context, Vec::new());
                    }
                    let inner = Open::start(
                        tracer,
                        SpanBuilder::from_name(name)
                            .with_start_time(now)
                            .with_attributes(attrs),
                        Some(&root.sc),
                    );
                    (inner, Some(root), None)
                }
            }
        } else {
            let inner = Open::start(
                tracer,
                SpanBuilder::from_name(name)
                    .with_start_time(now)
                    .with_attributes(attrs),
                Some(&parent_sc),
            );
            (inner, None, None)
        };
        self.seq += 1;
        self.wrappers.insert(
            scope,
            Wrapper {
                kind,
                inner,
                detached_root,
                dispatch,
                outcome: None,
                last_activity: None,
                seq: self.seq,
            },
        );
    }

    /// §5.7 (proposal 0075): an inline-callable branch is a synthetic unit named after
    /// its branch, one level inside the parallel-branches node; it renders as the
    /// branch's dispatch span alone.
    fn is_callable_branch(&self, unit: &Key, node_name: &str) -> bool {
        let n = unit.depth();
        if n < 2 {
            return false;
        }
        let scope = unit.scope(n - 1);
        match (
            self.composites.get(&scope.wrapper_unit()).map(|c| &c.kind),
            scope.branch.last(),
        ) {
            (Some(Composite::Branches(c)), Some(Some(b))) => {
                b == node_name && c.branch_names.iter().any(|n| n == b)
            }
            _ => false,
        }
    }

    fn open_node(&mut self, tracer: &dyn TracerDyn, unit: &Key, e: &NodeEvent, now: SystemTime) {
        let parent = self.enclosing(unit);
        let mut attrs = vec![
            KeyValue::new(attr::NODE_NAME, e.node_name.to_string()),
            KeyValue::new(
                attr::NODE_NAMESPACE,
                OtelValue::Array(Array::String(
                    e.namespace
                        .iter()
                        .map(|s| StringValue::from(s.clone()))
                        .collect(),
                )),
            ),
            KeyValue::new(attr::NODE_STEP, i64::try_from(e.step).unwrap_or(i64::MAX)),
            KeyValue::new(attr::NODE_ATTEMPT_INDEX, i64::from(e.attempt_index)),
        ];
        if let Some(i) = e.fan_out_index {
            attrs.push(KeyValue::new(attr::NODE_FAN_OUT_INDEX, index(i)));
        }
        if let Some(b) = &e.branch_name {
            attrs.push(KeyValue::new(attr::NODE_BRANCH_NAME, b.clone()));
        }
        if let Some(c) = &e.fan_out_config {
            attrs.extend(fan_out_node_attrs(c));
        }
        if let Some(c) = &e.parallel_branches_config {
            attrs.push(KeyValue::new(
                attr::PARALLEL_BRANCHES_BRANCH_COUNT,
                index(c.branch_count),
            ));
            attrs.push(KeyValue::new(
                attr::PARALLEL_BRANCHES_ERROR_POLICY,
                c.error_policy.clone(),
            ));
        }
        attrs.extend(self.cross_cutting());
        let open = Open::start(
            tracer,
            SpanBuilder::from_name(e.node_name.to_string())
                .with_start_time(now)
                .with_attributes(attrs),
            Some(&parent),
        );
        self.nodes.insert((unit.clone(), e.attempt_index), open);
    }

    /// One wire attempt of an LLM call: one `openarmature.llm.complete` span under the
    /// calling node's span (§5.5, llm-provider §7.1).
    pub(crate) fn on_llm_attempt(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        e: &LlmAttemptEvent,
    ) {
        let now = SystemTime::now();
        let unit = self.enter_call(tracer, config, &e.site, now);
        if config.disable_llm_spans {
            return;
        }
        let (attrs, failure) = super::llm::attempt_attributes(e, config);
        let call = call_span::FinishedCall {
            site: &e.site,
            latency_ms: e.latency_ms,
            at: e.at,
        };
        let (mut open, end) =
            self.start_call_span(tracer, attr::LLM_SPAN, &unit, &call, attrs, now);
        apply_outcome(&mut open.span, failure.as_ref());
        open.span.end_with_timestamp(end);
    }

    /// A named extension event (spec/extensions/, e.g. a circuit-breaker transition,
    /// extension 0004): a span event of that name, at the event's time, on the span of
    /// the node attempt that caused it (else the nearest enclosing wrapper, else the
    /// invocation span). Its attributes are the event's, each key prefixed with the
    /// event name's namespace (`openarmature.circuit_breaker.state_change`'s `from` →
    /// `openarmature.circuit_breaker.from`).
    pub(crate) fn on_extension(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        e: &ExtensionEvent,
    ) {
        self.use_metadata(None);
        let unit = Key::of_lineage(&e.lineage);
        self.enter(tracer, config, &unit, e.at);
        let prefix = e.name.rsplit_once('.').map_or("", |(ns, _)| ns);
        let attrs: Vec<KeyValue> = e
            .attributes
            .iter()
            .filter_map(|(k, v)| {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                json_value(v).map(|v| KeyValue::new(key, v))
            })
            .collect();
        let span = self.span_of_call(&unit, e.lineage.attempt_index);
        span.add_event_with_timestamp(e.name.clone(), e.at, attrs);
    }

    /// The open span a node's own work belongs to, mutably (see
    /// [`InvState::parent_of_call`]).
    fn span_of_call(&mut self, unit: &Key, attempt: u32) -> &mut BoxedSpan {
        let key = (unit.clone(), attempt);
        if self.nodes.contains_key(&key) {
            if let Some(open) = self.nodes.get_mut(&key) {
                return &mut open.span;
            }
        }
        let d = unit.depth().saturating_sub(1);
        if d > 0 {
            let scope = unit.scope(d);
            if self.wrappers.contains_key(&scope) {
                if let Some(w) = self.wrappers.get_mut(&scope) {
                    return &mut w.inner.span;
                }
            }
        }
        &mut self.root.span
    }

    /// The parent of a span made by a node's own work (LLM calls, log records): the
    /// calling node's open span, else the nearest enclosing wrapper, else the
    /// invocation span (§5.5 *Lineage-resolved parent*).
    pub(crate) fn parent_of_call(
        &self,
        unit: &Key,
        attempt: u32,
    ) -> (SpanContext, Option<SystemTime>) {
        if let Some(open) = self.nodes.get(&(unit.clone(), attempt)) {
            return (open.sc.clone(), open.start);
        }
        (self.enclosing(unit), None)
    }

    /// Where a log record made at `(unit, attempt)` belongs, if that span is open:
    /// the node's span, or — for a wrapper node's own code — its span in the parent
    /// trace.
    fn log_target(&self, unit: &Key, attempt: u32) -> Option<SpanContext> {
        if let Some(open) = self.nodes.get(&(unit.clone(), attempt)) {
            return Some(open.sc.clone());
        }
        let n = unit.depth();
        if n == 0 {
            return None;
        }
        self.wrappers
            .iter()
            .filter(|(scope, _)| {
                scope.depth() == n
                    && scope.namespace == unit.namespace
                    && scope.fan_out[..n - 1] == unit.fan_out[..]
                    && scope.branch[..n - 1] == unit.branch[..]
            })
            .min_by_key(|(_, w)| w.seq)
            .map(|(_, w)| w.outer_sc().clone())
    }

    /// Emits the pending log records whose span is open (all of them, on the
    /// invocation span when unresolved, with `force`).
    pub(crate) fn flush_logs(&mut self, config: &Config, force: bool) {
        if self.pending_logs.is_empty() {
            return;
        }
        let Some(logger) = &config.logger else {
            self.pending_logs.clear();
            return;
        };
        let pending = std::mem::take(&mut self.pending_logs);
        for log in pending {
            let target = self.log_target(&log.unit, log.attempt);
            match (target, force) {
                (Some(sc), _) => log.record.emit(logger, Some(&sc)),
                (None, true) => log.record.emit(logger, Some(&self.root.sc)),
                (None, false) => self.pending_logs.push(log),
            }
        }
    }

    /// Ends the invocation at `now`: pending logs, remaining wrappers and nodes, then
    /// the invocation span with `outcome` (`None`: the last completed node's outcome).
    pub(crate) fn end(
        mut self,
        config: &Config,
        outcome: Option<Option<Failure>>,
        now: SystemTime,
    ) {
        self.flush_logs(config, true);
        let scopes: Vec<Key> = self.wrappers.keys().cloned().collect();
        self.close_wrappers(scopes, now);
        for (_, mut open) in self.nodes.drain() {
            open.span.end_with_timestamp(now);
        }
        let outcome = outcome.unwrap_or_else(|| self.last_outcome.clone());
        apply_outcome(&mut self.root.span, outcome.as_ref());
        self.root.span.end_with_timestamp(now);
    }
}

/// A suspended node span's attributes (§4.2, §5.8): the outcome, the signal id and the
/// flattened metadata.
fn suspension_attrs(
    descriptor: Option<&openarmature_graph::suspension::SignalDescriptor>,
) -> Vec<KeyValue> {
    let mut attrs = vec![KeyValue::new(attr::OUTCOME, "suspended")];
    let Some(d) = descriptor else {
        return attrs;
    };
    attrs.push(KeyValue::new(
        attr::SUSPENSION_SIGNAL_ID,
        d.signal_id.clone(),
    ));
    fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<KeyValue>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    flatten(&format!("{prefix}{k}."), v, out);
                }
            }
            other => {
                if let Some(value) = json_value(other) {
                    let key = prefix.trim_end_matches('.').to_owned();
                    out.push(KeyValue::new(key, value));
                }
            }
        }
    }
    match &d.metadata {
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                flatten(
                    &format!("{}{k}.", attr::SUSPENSION_METADATA_PREFIX),
                    v,
                    &mut attrs,
                );
            }
        }
        Some(other) => flatten(attr::SUSPENSION_METADATA_PREFIX, other, &mut attrs),
        None => {}
    }
    attrs
}

/// A JSON attribute value as an OpenTelemetry value: scalars as themselves, arrays and
/// objects as canonical JSON, `null` skipped.
fn json_value(v: &serde_json::Value) -> Option<OtelValue> {
    use serde_json::Value as J;
    match v {
        J::Null => None,
        J::Bool(b) => Some(OtelValue::Bool(*b)),
        J::Number(n) => n
            .as_i64()
            .map(OtelValue::I64)
            .or_else(|| n.as_f64().map(OtelValue::F64)),
        J::String(s) => Some(OtelValue::from(s.clone())),
        J::Array(_) | J::Object(_) => Some(OtelValue::from(crate::payload::canonical_json(v))),
    }
}

fn index(i: usize) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}

fn fan_out_node_attrs(c: &FanOutConfig) -> Vec<KeyValue> {
    vec![
        KeyValue::new(attr::FAN_OUT_ITEM_COUNT, index(c.item_count)),
        KeyValue::new(attr::FAN_OUT_CONCURRENCY, index(c.concurrency.unwrap_or(0))),
        KeyValue::new(attr::FAN_OUT_ERROR_POLICY, c.error_policy.clone()),
    ]
}

/// §5.1: the attributes every invocation span carries (the entry node aside).
fn invocation_attrs(config: &Config, invocation_id: &str) -> Vec<KeyValue> {
    vec![
        KeyValue::new(attr::INVOCATION_ID, invocation_id.to_owned()),
        KeyValue::new(attr::GRAPH_SPEC_VERSION, config.spec_version.clone()),
        KeyValue::new(
            attr::IMPLEMENTATION_NAME,
            config.implementation_name.clone(),
        ),
        KeyValue::new(
            attr::IMPLEMENTATION_VERSION,
            config.implementation_version.clone(),
        ),
    ]
}

/// §5.6: the attributes on every span of the invocation.
pub(crate) fn cross_cutting(correlation_id: &str, user: &[KeyValue]) -> Vec<KeyValue> {
    let mut attrs = Vec::with_capacity(user.len() + 1);
    attrs.push(KeyValue::new(
        attr::CORRELATION_ID,
        correlation_id.to_owned(),
    ));
    attrs.extend(user.iter().cloned());
    attrs
}
