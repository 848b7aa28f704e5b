//! Spec: observability §3 (correlation id, caller metadata), §4–§6 (span hierarchy,
//! status, detached traces, observer-driven lifecycle, TracerProvider isolation) and
//! §7 (log correlation).
//!
//! [`OtelObserver`] turns the engine's observer events into OpenTelemetry spans on a
//! tracer the caller hands in. It never touches the global provider.

mod keys;
mod llm;
mod logs;
mod state;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use openarmature_graph::{
    BoxError, CompiledGraph, Completed, GraphError, InvokeOptions, NodeCtx, Observer,
    ObserverEvent, Registration, State,
};
use opentelemetry::global::BoxedTracer;
use opentelemetry::logs::{LoggerProvider, Severity};
use opentelemetry::trace::{Tracer, TracerProvider};
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};

use self::keys::Key;
use self::state::{Failure, InvState, PendingLog};
use crate::attributes as attr;
use crate::metadata::{self, MetadataError};

/// The instrumentation scope name of every span and log record this crate emits.
pub const INSTRUMENTATION_SCOPE: &str = "openarmature";

/// The registration name [`OtelObserver::invoke`] attaches the observer under.
pub const REGISTRATION_NAME: &str = "openarmature.otel";

/// Observer configuration (§4.4, §5.5.4).
pub(crate) struct Config {
    pub(crate) detached_subgraphs: HashSet<String>,
    pub(crate) detached_fan_outs: HashSet<String>,
    pub(crate) subgraph_names: HashMap<String, String>,
    pub(crate) disable_llm_spans: bool,
    pub(crate) disable_genai_semconv: bool,
    pub(crate) spec_version: String,
    pub(crate) implementation_name: String,
    pub(crate) implementation_version: String,
    pub(crate) close_timeout: Duration,
    pub(crate) logger: Option<SdkLogger>,
}

struct Shared {
    tracer: BoxedTracer,
    config: Config,
    invocations: Mutex<HashMap<String, InvState>>,
}

/// An observer that renders graph invocations as OpenTelemetry traces
/// (observability §4–§6): one `openarmature.invocation` span per invocation, one span
/// per node attempt, synthesized subgraph / fan-out instance / parallel-branch
/// dispatch spans, one `openarmature.llm.complete` span per LLM attempt, and §7 log
/// correlation.
///
/// Spans go to the tracer of the provider passed to [`OtelObserver::builder`]: keep
/// that provider private (§6 *TracerProvider isolation*) — this crate never reads or
/// sets the global provider.
///
/// Run invocations through [`OtelObserver::invoke`]: it validates caller metadata
/// (§3.4), mints the correlation id (§3.1), opens the invocation span when
/// `invoke()` is entered, attaches the observer to that invocation only, and closes
/// the span with the invocation's outcome. An observer attached to a graph directly
/// also works: it then opens each invocation span on the first event and closes it
/// in [`OtelObserver::close_all`] (without caller metadata, and with the status of
/// the last node that completed). Do not do both for the same graph, or every span is
/// emitted twice.
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

/// Builds an [`OtelObserver`].
#[must_use]
pub struct OtelObserverBuilder {
    tracer: BoxedTracer,
    config: Config,
}

impl std::fmt::Debug for OtelObserverBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelObserverBuilder")
            .finish_non_exhaustive()
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
    /// (§3.4); missing invocation and correlation ids are minted as UUIDv4s (§3.1,
    /// §5.1) and passed to the engine, so nodes see them on their `NodeCtx`. The
    /// invocation span opens on entry; after the run it waits (at most the
    /// configured close timeout, 5 s by default) until this invocation's events are
    /// delivered, then closes the remaining spans and the invocation span with the
    /// run's outcome (§4.2).
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
        let user = metadata::user_attributes(&options.metadata)?;
        let invocation_id = options
            .invocation_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone();
        let correlation_id = options
            .correlation_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone();
        {
            let state = InvState::begin(
                &self.shared.tracer,
                &self.shared.config,
                invocation_id.clone(),
                correlation_id,
                user,
            );
            lock(&self.shared.invocations).insert(invocation_id.clone(), state);
        }
        // Closes the spans if this future is dropped mid-run (with the outcome of the
        // last node that completed), so a cancelled invocation leaves no state behind.
        let mut guard = EndOnDrop {
            otel: self,
            invocation_id: Some(invocation_id.clone()),
        };
        options.observers.push(Registration::shared(
            REGISTRATION_NAME,
            Arc::new(self.clone()) as Arc<dyn Observer>,
        ));
        let result = graph.invoke_with(initial, options).await;
        graph
            .drain_events_for(&invocation_id, Some(self.shared.config.close_timeout))
            .await;
        let outcome = result.as_ref().err().map(|e| Failure {
            category: e.category_name().to_owned(),
            message: e.original_message(),
        });
        guard.invocation_id = None;
        self.end(&invocation_id, Some(outcome));
        result.map_err(InvokeError::Graph)
    }

    fn end(&self, invocation_id: &str, outcome: Option<Option<Failure>>) {
        let state = lock(&self.shared.invocations).remove(invocation_id);
        if let Some(state) = state {
            state.end(&self.shared.config, outcome);
        }
    }

    /// Closes every invocation still open (those seen through a graph-attached
    /// observer, or left by a dropped [`OtelObserver::invoke`]): pending log records,
    /// open spans, then the invocation span. Call it after
    /// [`CompiledGraph::drain`], before shutting the provider down.
    pub fn close_all(&self) {
        let states: Vec<InvState> = lock(&self.shared.invocations)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for state in states {
            state.end(&self.shared.config, None);
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
        let mut invocations = lock(&self.shared.invocations);
        let state = self.state_for(&mut invocations, ctx.invocation_id(), ctx.correlation_id());
        let attributes = state::cross_cutting(&state.correlation_id, &state.user);
        state.pending_logs.push(PendingLog {
            unit: Key::of_lineage(&lineage),
            attempt: lineage.attempt_index,
            record: logs::LogLine {
                time,
                severity,
                body: body.into(),
                attributes,
            },
        });
    }

    /// The state of `invocation_id`, begun lazily (not [`OtelObserver::invoke`]d).
    fn state_for<'m>(
        &self,
        invocations: &'m mut HashMap<String, InvState>,
        invocation_id: &str,
        correlation_id: Option<&str>,
    ) -> &'m mut InvState {
        invocations
            .entry(invocation_id.to_owned())
            .or_insert_with(|| {
                InvState::begin(
                    &self.shared.tracer,
                    &self.shared.config,
                    invocation_id.to_owned(),
                    correlation_id.map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned),
                    Vec::new(),
                )
            })
    }

    fn handle(&self, event: &ObserverEvent) {
        let shared = &*self.shared;
        let mut invocations = lock(&shared.invocations);
        match event {
            ObserverEvent::Node(e) => {
                let state = self.state_for(
                    &mut invocations,
                    &e.invocation_id,
                    e.correlation_id.as_deref(),
                );
                state.on_node(&shared.tracer, &shared.config, e);
            }
            ObserverEvent::LlmAttempt(e) => {
                let state = self.state_for(
                    &mut invocations,
                    &e.site.invocation_id,
                    e.site.correlation_id.as_deref(),
                );
                state.on_llm_attempt(&shared.tracer, &shared.config, e);
            }
            // Terminal LLM events, failure-isolation events and kinds added later do
            // not drive spans (LLM spans come from the per-attempt signal).
            _ => {}
        }
    }
}

impl Observer for OtelObserver {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        self.handle(&event);
        Box::pin(std::future::ready(Ok(())))
    }
}

impl OtelObserverBuilder {
    /// Starts a builder emitting through `tracer` (any tracer; prefer
    /// [`OtelObserver::builder`], which names the instrumentation scope).
    pub fn from_tracer<T>(tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        OtelObserverBuilder {
            tracer: BoxedTracer::new(Box::new(tracer)),
            config: Config {
                detached_subgraphs: HashSet::new(),
                detached_fan_outs: HashSet::new(),
                subgraph_names: HashMap::new(),
                disable_llm_spans: false,
                disable_genai_semconv: false,
                spec_version: crate::SPEC_VERSION.to_owned(),
                implementation_name: attr::IMPLEMENTATION.to_owned(),
                implementation_version: env!("CARGO_PKG_VERSION").to_owned(),
                close_timeout: Duration::from_secs(5),
                logger: None,
            },
        }
    }

    /// Renders the subgraph node `node_name` (its name in the parent graph) in a
    /// trace of its own, linked from the parent trace's dispatch span (§4.4).
    pub fn detach_subgraph(mut self, node_name: impl Into<String>) -> Self {
        self.config.detached_subgraphs.insert(node_name.into());
        self
    }

    /// Renders each instance of the fan-out node `node_name` in a trace of its own,
    /// each linked from the fan-out node's span (§4.4).
    pub fn detach_fan_out(mut self, node_name: impl Into<String>) -> Self {
        self.config.detached_fan_outs.insert(node_name.into());
        self
    }

    /// Names the compiled subgraph the subgraph node `node_name` runs: reported as
    /// `openarmature.subgraph.name` (§5.3, otherwise `""`), and used as the name of
    /// the subgraph span at the root of a detached trace, whose outermost graph it is.
    pub fn subgraph_name(
        mut self,
        node_name: impl Into<String>,
        subgraph_name: impl Into<String>,
    ) -> Self {
        self.config
            .subgraph_names
            .insert(node_name.into(), subgraph_name.into());
        self
    }

    /// Skips `openarmature.llm.complete` spans (§5.5 opt-out); other spans are
    /// unaffected.
    pub fn disable_llm_spans(mut self, disable: bool) -> Self {
        self.config.disable_llm_spans = disable;
        self
    }

    /// Skips the `gen_ai.*` attributes and the cache attributes on LLM spans (§5.5.4).
    pub fn disable_genai_semconv(mut self, disable: bool) -> Self {
        self.config.disable_genai_semconv = disable;
        self
    }

    /// Correlates log records made through [`OtelObserver::log`] and emits them
    /// through a logger of `provider` (§7). Keep that provider private too.
    pub fn logger_provider(mut self, provider: &SdkLoggerProvider) -> Self {
        let scope = InstrumentationScope::builder(INSTRUMENTATION_SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        self.config.logger = Some(provider.logger_with_scope(scope));
        self
    }

    /// How long [`OtelObserver::invoke`] waits for the invocation's events to be
    /// delivered before closing its spans (default 5 s); spans of events delivered
    /// later still get exported, under the closed parents.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.config.close_timeout = timeout;
        self
    }

    /// Builds the observer.
    pub fn build(self) -> OtelObserver {
        OtelObserver {
            shared: Arc::new(Shared {
                tracer: self.tracer,
                config: self.config,
                invocations: Mutex::new(HashMap::new()),
            }),
        }
    }
}
