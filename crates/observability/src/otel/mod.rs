//! Spec: observability §3 (correlation id, caller metadata), §4–§6 (span hierarchy,
//! status, detached traces, observer-driven lifecycle, TracerProvider isolation), §7
//! (log correlation) and §11 (opt-in GenAI metrics).
//!
//! [`OtelObserver`] turns the engine's observer events into OpenTelemetry spans on a
//! tracer the caller hands in (and, with metrics enabled, into measurements on a meter
//! the caller hands in). It never touches the global providers.

mod budget_log;
mod builder;
mod keys;
mod llm;
mod logs;
mod metrics;
mod prompt;
mod state;
pub(crate) use state::LANGFUSE_EMBEDDING_OUTPUT;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

pub use self::builder::{OtelObserverBuilder, PayloadCapTooSmall};

use futures::future::BoxFuture;
use openarmature_core::vocab::llm::{LlmRequestSummary, LlmResponseSummary};
use openarmature_graph::{
    BoxError, CallSite, CompiledGraph, Completed, GraphError, InvokeOptions, NodeCtx, Observer,
    ObserverEvent, Registration, State,
};
use opentelemetry::global::BoxedTracer;
use opentelemetry::logs::Severity;
use opentelemetry::trace::{Tracer, TracerProvider};
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::logs::SdkLogger;

use self::keys::Key;
use self::metrics::Metrics;
use self::state::{Failure, InvState, PendingLog};
use crate::metadata::{self, MetadataError};

/// The instrumentation scope name of every span and log record this crate emits.
pub const INSTRUMENTATION_SCOPE: &str = "openarmature";

/// The registration name [`OtelObserver::invoke`] attaches the observer under.
pub const REGISTRATION_NAME: &str = "openarmature.otel";

/// Observer configuration (§4.4, §5.5.4, §5.5.5).
pub(crate) struct Config {
    pub(crate) detached_subgraphs: HashSet<String>,
    pub(crate) detached_fan_outs: HashSet<String>,
    pub(crate) subgraph_names: HashMap<String, String>,
    pub(crate) disable_llm_spans: bool,
    pub(crate) disable_genai_semconv: bool,
    pub(crate) disable_provider_payload: bool,
    pub(crate) payload_byte_cap: usize,
    pub(crate) spec_version: String,
    pub(crate) implementation_name: String,
    pub(crate) implementation_version: String,
    pub(crate) close_timeout: Duration,
    pub(crate) logger: Option<SdkLogger>,
    /// Set only on the Langfuse observer's private OTel observer: LLM spans carry the
    /// prompt's Langfuse reference under [`crate::langfuse::PROMPT_REFERENCE_ATTR`]
    /// (never on a caller's spans).
    pub(crate) langfuse_prompt_reference: bool,
    /// Set only by the Langfuse capture: embedding spans also carry the vectors
    /// (payload permitting) for the observation's `output` (§8.4.5).
    pub(crate) langfuse_outputs: bool,
}

struct Shared {
    tracer: BoxedTracer,
    config: Config,
    /// The §11 instruments: `Some` only with metrics enabled and a meter provider.
    metrics: Option<Metrics>,
    inner: Mutex<Inner>,
}

/// The mutable part: open invocations, and log records made in an invocation whose
/// first event has not been delivered yet.
#[derive(Default)]
struct Inner {
    invocations: HashMap<String, InvState>,
    early_logs: HashMap<String, Vec<PendingLog>>,
}

impl Inner {
    /// Opens `invocation_id`'s state, adopting the log records made before.
    fn insert(&mut self, state: InvState) -> &mut InvState {
        let id = state.invocation_id.clone();
        let state = self.invocations.entry(id.clone()).or_insert(state);
        if let Some(early) = self.early_logs.remove(&id) {
            state.pending_logs.extend(early);
        }
        state
    }
}

/// An observer that renders graph invocations as OpenTelemetry traces
/// (observability §4–§6): one `openarmature.invocation` span per invocation, one span
/// per node attempt, synthesized subgraph / fan-out instance / parallel-branch
/// dispatch spans, one `openarmature.llm.complete` span per LLM attempt, and §7 log
/// correlation.
///
/// Project extensions (spec/extensions/): every LLM span carries
/// `openarmature.llm.logical_call_id` (0001), and every
/// [`ObserverEvent::Extension`] — e.g. a circuit-breaker transition (0004) — is
/// recorded as a span event of its name on the span of the node attempt whose work
/// caused it (attributes prefixed with the event name's namespace, e.g.
/// `openarmature.circuit_breaker.to`).
///
/// Metrics (§11) are opt-in: with [`OtelObserverBuilder::enable_metrics`] and a
/// [`OtelObserverBuilder::meter_provider`], the same events also record the GenAI
/// token-usage, duration and token-budget instruments, whatever the span flags say.
///
/// Spans go to the tracer of the provider passed to [`OtelObserver::builder`]: keep
/// that provider private (§6 *TracerProvider isolation*) — this crate never reads or
/// sets the global provider.
///
/// Spans follow the engine's events and their timestamps: the invocation span opens
/// and closes with the engine's invocation lifecycle events
/// ([`ObserverEvent::InvocationStarted`] / [`ObserverEvent::InvocationCompleted`]:
/// entry node, correlation id, caller metadata, outcome), node spans with the node
/// events. Attach it either way:
///
/// - per invocation, through [`OtelObserver::invoke`]: it also validates the caller
///   metadata at the API boundary (§3.4) and returns once the invocation's spans are
///   closed;
/// - to a graph, with [`OtelObserver::registration`] (which subscribes to the
///   lifecycle events). A plain registration without them still works: each
///   invocation span then opens on the first event and closes in
///   [`OtelObserver::close_all`] (without caller metadata, with the status of the
///   last node that completed).
///
/// Do not do both for the same graph, or every span is emitted twice.
///
/// Cloning is cheap and clones share state; one observer serves any number of
/// concurrent invocations (state is kept per invocation id).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
/// use openarmature_observability::OtelObserver;
/// use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
///
/// state! {
///     /// A counter.
///     #[derive(Default)]
///     pub struct Count => CountUpdate {
///         /// The count.
///         pub n: i64,
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let exporter = InMemorySpanExporter::default();
/// let provider = SdkTracerProvider::builder()
///     .with_simple_exporter(exporter.clone())
///     .build();
/// let otel = OtelObserver::builder(&provider).build();
///
/// let graph = GraphBuilder::new(Count::default())
///     .add_node("inc", |s: Arc<Count>, _: NodeCtx| async move {
///         Ok(CountUpdate::default().n(s.n + 1))
///     })
///     .add_edge("inc", END)
///     .entry("inc")
///     .compile()
///     .unwrap();
/// otel.invoke(&graph, Count::default(), InvokeOptions::default()).await.unwrap();
///
/// let names: Vec<_> = exporter
///     .get_finished_spans()
///     .unwrap()
///     .into_iter()
///     .map(|s| s.name.to_string())
///     .collect();
/// assert_eq!(names, ["inc", "openarmature.invocation"]);
/// # });
/// ```
#[derive(Clone)]
pub struct OtelObserver {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OtelObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelObserver").finish_non_exhaustive()
    }
}

/// Why [`OtelObserver::invoke`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvokeError<S> {
    /// The caller metadata broke a §3.4 rule; nothing ran and no span was emitted.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The invocation failed (graph-engine §4).
    #[error(transparent)]
    Graph(GraphError<S>),
}

impl<S> InvokeError<S> {
    /// The error's category: the metadata error's, or the graph error's §4 category.
    pub fn category(&self) -> &str {
        match self {
            InvokeError::Metadata(e) => e.category(),
            InvokeError::Graph(e) => e.category_name(),
        }
    }
}

/// Ends an invocation whose [`OtelObserver::invoke`] future was dropped.
struct EndOnDrop<'a> {
    otel: &'a OtelObserver,
    invocation_id: Option<String>,
}

impl Drop for EndOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.invocation_id.take() {
            self.otel.end(&id, None);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OtelObserver {
    /// Starts a builder emitting through a tracer of `provider` (instrumentation scope
    /// [`INSTRUMENTATION_SCOPE`], this crate's version).
    pub fn builder<P>(provider: &P) -> OtelObserverBuilder
    where
        P: TracerProvider,
        P::Tracer: Send + Sync + 'static,
        <P::Tracer as Tracer>::Span: Send + Sync + 'static,
    {
        let scope = InstrumentationScope::builder(INSTRUMENTATION_SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        OtelObserverBuilder::from_tracer(provider.tracer_with_scope(scope))
    }

    /// Runs `graph` once with this observer attached to the invocation, and returns
    /// when the invocation's spans are closed.
    ///
    /// Before anything runs, the caller metadata in `options.metadata` is validated
    /// (§3.4) and a missing invocation id is minted (a UUIDv4, §5.1; the engine mints
    /// a missing correlation id, §3.1). The observer is attached to this invocation
    /// with the engine's lifecycle events ([`OtelObserver::registration`]): the
    /// invocation span opens at the `started` event's time and closes with the
    /// `completed` event's outcome (§4.2). After the run it waits (at most the
    /// configured close timeout, 5 s by default) until this invocation's events are
    /// delivered; whatever is still open then is closed with the run's outcome.
    ///
    /// # Errors
    /// [`InvokeError::Metadata`] before any work, or the run's [`GraphError`].
    ///
    /// # Cancel safety
    /// Dropping the future stops the run and closes the invocation's open spans, the
    /// invocation span taking the outcome of the last node that completed.
    pub async fn invoke<S: State>(
        &self,
        graph: &CompiledGraph<S>,
        initial: S,
        mut options: InvokeOptions,
    ) -> Result<Completed<S>, InvokeError<S>> {
        metadata::user_attributes(&options.metadata)?;
        let invocation_id = options
            .invocation_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone();
        // Closes the spans if this future is dropped mid-run (with the outcome of the
        // last node that completed), so a cancelled invocation leaves no state behind.
        let mut guard = EndOnDrop {
            otel: self,
            invocation_id: Some(invocation_id.clone()),
        };
        options.observers.push(self.registration());
        let result = graph.invoke_with(initial, options).await;
        graph
            .drain_events_for(&invocation_id, Some(self.shared.config.close_timeout))
            .await;
        guard.invocation_id = None;
        // Normally the `completed` lifecycle event closed everything already; after a
        // delivery timeout, close what is left with the run's outcome.
        let outcome = result.as_ref().err().map(|e| Failure {
            category: e.category_name().to_owned(),
            message: e.original_message(),
        });
        self.end(&invocation_id, Some(outcome));
        result.map_err(InvokeError::Graph)
    }

    /// A registration attaching this observer (under [`REGISTRATION_NAME`]) with the
    /// invocation lifecycle events it renders the invocation span from. Use it to
    /// attach the observer to a graph ([`CompiledGraph::attach_observer`]) or to one
    /// invocation ([`InvokeOptions::observer`]).
    pub fn registration(&self) -> Registration {
        Registration::shared(
            REGISTRATION_NAME,
            Arc::new(self.clone()) as Arc<dyn Observer>,
        )
        .with_invocation_events()
    }

    /// Closes what is left of `invocation_id`: with `outcome` (`Some(None)` a success,
    /// `Some(Some((category, message)))` a failure) as the run's outcome, or with the
    /// last completed node's (`None`, a dropped run). Shared with the Langfuse observer.
    pub(crate) fn end_invocation(
        &self,
        invocation_id: &str,
        outcome: Option<Option<(String, String)>>,
    ) {
        let outcome = outcome.map(|o| o.map(|(category, message)| Failure { category, message }));
        self.end(invocation_id, outcome);
    }

    fn end(&self, invocation_id: &str, outcome: Option<Option<Failure>>) {
        let state = {
            let mut inner = lock(&self.shared.inner);
            inner.early_logs.remove(invocation_id);
            inner.invocations.remove(invocation_id)
        };
        if let Some(state) = state {
            state.end(&self.shared.config, outcome, SystemTime::now());
        }
    }

    /// Closes every invocation still open (those seen through a graph-attached
    /// observer, or left by a dropped [`OtelObserver::invoke`]): pending log records,
    /// open spans, then the invocation span. Call it after
    /// [`CompiledGraph::drain`], before shutting the provider down.
    ///
    /// Log records made in an invocation this observer never saw an event of are
    /// emitted without a span context (correlation attributes only).
    pub fn close_all(&self) {
        let (states, early) = {
            let mut inner = lock(&self.shared.inner);
            let states: Vec<InvState> = inner.invocations.drain().map(|(_, s)| s).collect();
            let early: Vec<PendingLog> = inner.early_logs.drain().flat_map(|(_, l)| l).collect();
            (states, early)
        };
        let now = SystemTime::now();
        for state in states {
            state.end(&self.shared.config, None, now);
        }
        if let Some(logger) = &self.shared.config.logger {
            for log in early {
                log.record.emit(logger, None);
            }
        }
    }

    /// Records a log line made by the node attempt `ctx` describes (§7): it is
    /// emitted through the configured logger (see
    /// [`OtelObserverBuilder::logger_provider`]) with that node's span as its trace
    /// context and the invocation's correlation id and caller metadata as attributes.
    /// Without a logger this does nothing.
    pub fn log(&self, ctx: &NodeCtx, severity: Severity, body: impl Into<String>) {
        if self.shared.config.logger.is_none() {
            return;
        }
        let time = SystemTime::now();
        let lineage = ctx.lineage();
        let correlation_id = ctx.correlation_id().unwrap_or_default();
        let mut attributes =
            state::cross_cutting(correlation_id, &lenient_user(&ctx.invocation_metadata()));
        if let Some(session) = ctx.session_id() {
            attributes.push(opentelemetry::KeyValue::new(
                crate::attributes::SESSION_ID,
                session.to_owned(),
            ));
        }
        let log = PendingLog {
            unit: Key::of_lineage(&lineage),
            attempt: lineage.attempt_index,
            record: logs::LogLine {
                time,
                severity,
                body: body.into(),
                attributes,
            },
        };
        let mut inner = lock(&self.shared.inner);
        match inner.invocations.get_mut(ctx.invocation_id()) {
            Some(state) => state.pending_logs.push(log),
            // The invocation's first event is still on its way: keep the record
            // until the invocation span exists.
            None => inner
                .early_logs
                .entry(ctx.invocation_id().to_owned())
                .or_default()
                .push(log),
        }
    }

    /// The state of `invocation_id`, begun lazily at `at` (a registration without
    /// the lifecycle events).
    fn state_for<'m>(
        &self,
        inner: &'m mut Inner,
        invocation_id: &str,
        correlation_id: Option<&str>,
        at: SystemTime,
    ) -> &'m mut InvState {
        let early = if inner.invocations.contains_key(invocation_id) {
            None
        } else {
            inner.early_logs.remove(invocation_id)
        };
        let state = inner
            .invocations
            .entry(invocation_id.to_owned())
            .or_insert_with(|| {
                InvState::begin(
                    &self.shared.tracer,
                    &self.shared.config,
                    invocation_id.to_owned(),
                    correlation_id.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned),
                    Vec::new(),
                    at,
                    None,
                )
            });
        if let Some(early) = early {
            state.pending_logs.extend(early);
        }
        state
    }

    fn handle(&self, event: &ObserverEvent) {
        let shared = &*self.shared;
        // §11: metrics are a projection of the same events, independent of spans.
        if let Some(metrics) = &shared.metrics {
            metrics.record(event);
        }
        let mut inner = lock(&shared.inner);
        match event {
            ObserverEvent::InvocationStarted(e) => {
                let user = lenient_user(&e.metadata);
                if let Some(state) = inner.invocations.get_mut(&*e.invocation_id) {
                    state.adopt_started(&e.entry, user);
                    state.adopt_session(e.session_id.as_deref());
                } else {
                    let mut state = InvState::begin(
                        &shared.tracer,
                        &shared.config,
                        e.invocation_id.to_string(),
                        e.correlation_id.to_string(),
                        user,
                        e.at,
                        Some(&e.entry),
                    );
                    state.adopt_session(e.session_id.as_deref());
                    inner.insert(state);
                }
            }
            ObserverEvent::InvocationCompleted(e) => {
                inner.early_logs.remove(&*e.invocation_id);
                let state = inner.invocations.remove(&*e.invocation_id);
                drop(inner);
                if let Some(mut state) = state {
                    let outcome = e.error.as_ref().map(|(category, message)| Failure {
                        category: category.clone(),
                        message: message.clone(),
                    });
                    if e.suspended.is_some() {
                        state.mark_suspended();
                    }
                    state.end(&shared.config, Some(outcome), e.at);
                }
            }
            ObserverEvent::Node(e) => {
                let state = self.state_for(
                    &mut inner,
                    &e.invocation_id,
                    e.correlation_id.as_deref(),
                    e.at,
                );
                state.on_node(&shared.tracer, &shared.config, e);
            }
            ObserverEvent::LlmAttempt(e) => {
                let state = self.state_at(&mut inner, &e.site);
                state.on_llm_attempt(&shared.tracer, &shared.config, e);
            }
            ObserverEvent::Extension(e) => {
                let state = self.state_for(
                    &mut inner,
                    &e.invocation_id,
                    e.correlation_id.as_deref(),
                    e.at,
                );
                state.on_extension(&shared.tracer, &shared.config, e);
            }
            // §3.4 / §6: mid-invocation metadata updates the open spans on the
            // writer's call-stack path in place.
            ObserverEvent::MetadataAugmented(e) => {
                let state = self.state_for(
                    &mut inner,
                    &e.invocation_id,
                    e.correlation_id.as_deref(),
                    e.at,
                );
                state.on_metadata(e);
            }
            // §5.5.11: one tool span per instrumented execution, from its terminal event.
            ObserverEvent::ToolCall(e) => {
                let (call, outcome) = state::ToolOutcome::of_success(e);
                let state = self.state_at(&mut inner, &call.site);
                state.on_tool(&shared.tracer, &shared.config, call, outcome);
            }
            ObserverEvent::ToolCallFailed(e) => {
                let (call, outcome) = state::ToolOutcome::of_failure(e);
                let state = self.state_at(&mut inner, &call.site);
                state.on_tool(&shared.tracer, &shared.config, call, outcome);
            }
            // §5.5.8 / §5.5.13: one span per embedding / rerank call, from its terminal event.
            ObserverEvent::Embedding(_)
            | ObserverEvent::EmbeddingFailed(_)
            | ObserverEvent::Rerank(_)
            | ObserverEvent::RerankFailed(_) => {
                self.on_retrieval(&mut inner, event);
            }
            // §5.5.15: an exceeded token budget also makes a WARNING log record.
            ObserverEvent::LlmCompletion(e) if shared.config.logger.is_some() => {
                self.budget_log(&mut inner, &e.site, &e.request, Some(&e.response));
            }
            ObserverEvent::LlmFailed(e) if shared.config.logger.is_some() => {
                self.budget_log(&mut inner, &e.site, &e.request, e.response.as_ref());
            }
            // Other terminal LLM events, failure-isolation events and kinds added later
            // do not drive spans (LLM spans come from the per-attempt signal).
            _ => {}
        }
    }
}

impl OtelObserver {
    /// The state of the invocation a call at `site` belongs to (begun lazily now).
    fn state_at<'m>(&self, inner: &'m mut Inner, site: &CallSite) -> &'m mut InvState {
        self.state_for(
            inner,
            &site.invocation_id,
            site.correlation_id.as_deref(),
            SystemTime::now(),
        )
    }

    /// §5.5.15: queues the WARNING log record of a call that exceeded its token
    /// budget (nothing when it did not).
    fn budget_log(
        &self,
        inner: &mut Inner,
        site: &CallSite,
        request: &LlmRequestSummary,
        response: Option<&LlmResponseSummary>,
    ) {
        let user = lenient_user(&site.metadata);
        if let Some(mut log) = budget_log::budget_warning(site, request, response, &user) {
            let state = self.state_at(inner, site);
            log.record.attributes.extend(state.session.clone());
            state.pending_logs.push(log);
        }
    }

    fn on_retrieval(&self, inner: &mut Inner, event: &ObserverEvent) {
        let shared = &*self.shared;
        let site = match event {
            ObserverEvent::Embedding(e) => &e.site,
            ObserverEvent::EmbeddingFailed(e) => &e.site,
            ObserverEvent::Rerank(e) => &e.site,
            ObserverEvent::RerankFailed(e) => &e.site,
            _ => return,
        };
        let state = self.state_at(inner, site);
        let (tracer, config) = (&shared.tracer, &shared.config);
        match event {
            ObserverEvent::Embedding(e) => state.on_embedding(tracer, config, e),
            ObserverEvent::EmbeddingFailed(e) => state.on_embedding_failed(tracer, config, e),
            ObserverEvent::Rerank(e) => state.on_rerank(tracer, config, e),
            ObserverEvent::RerankFailed(e) => state.on_rerank_failed(tracer, config, e),
            _ => {}
        }
    }
}

/// The `openarmature.user.*` attributes of the metadata entries that satisfy §3.4
/// (the others are skipped: only [`OtelObserver::invoke`] can reject them).
fn lenient_user(
    metadata: &serde_json::Map<String, serde_json::Value>,
) -> Vec<opentelemetry::KeyValue> {
    metadata
        .iter()
        .filter_map(|(k, v)| {
            let single: serde_json::Map<String, serde_json::Value> =
                std::iter::once((k.clone(), v.clone())).collect();
            metadata::user_attributes(&single).ok()
        })
        .flatten()
        .collect()
}

impl Observer for OtelObserver {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.handle(&event);
        Box::pin(std::future::ready(Ok(())))
    }

    fn on_event_now(&self, event: &Arc<ObserverEvent>) -> Option<Result<(), BoxError>> {
        self.handle(event);
        Some(Ok(()))
    }
}
