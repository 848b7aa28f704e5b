//! Spec: observability §8 (the Langfuse observer as a self-contained §6 event
//! consumer), §8.4.1 (trace input/output, session and user), §8.6 (trace name).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    BoxError, CompiledGraph, Completed, InvokeOptions, Observer, ObserverEvent, Registration,
    State, StateView,
};
use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::SpanData;

use super::attrs::string;
use super::builder::LangfuseObserverBuilder;
use super::capture::Captured;
use super::client::{LangfuseClient, LangfuseError};
use super::convert::{build_traces, is_root, TraceExtras};
use super::io::{InvocationIo, IoConfig};
use super::model::LangfuseTrace;
use crate::attributes as a;
use crate::{metadata, InvokeError, OtelObserver};

/// The registration name [`LangfuseObserver::invoke`] attaches the observer under.
pub const REGISTRATION_NAME: &str = "openarmature.langfuse";

/// Per-invocation trace options (§8.6 / §8.4.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceOptions {
    /// The caller-supplied invocation label: `trace.name` (else the entry node).
    pub name: Option<String>,
    /// The session the invocation belongs to: `trace.sessionId`.
    pub session_id: Option<String>,
}

impl TraceOptions {
    /// Sets the invocation label (`trace.name`, §8.6).
    pub fn name(mut self, label: impl Into<String>) -> Self {
        self.name = Some(label.into());
        self
    }

    /// Sets the session id (`trace.sessionId`, §8.4.1).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
}

pub(crate) struct Shared {
    pub(crate) otel: OtelObserver,
    /// Keeps the private provider (and its span processor) alive.
    pub(crate) _provider: opentelemetry_sdk::trace::SdkTracerProvider,
    pub(crate) captured: Captured,
    pub(crate) io: IoConfig,
    pub(crate) client: Option<Arc<dyn LangfuseClient>>,
    pub(crate) close_timeout: Duration,
    pub(crate) fan_out_subgraphs: HashMap<String, String>,
    pub(crate) inner: Mutex<Inner>,
}

#[derive(Default)]
pub(crate) struct Inner {
    invocations: HashMap<String, InvocationIo>,
    /// Invocations run through [`LangfuseObserver::invoke`], which finishes them with
    /// the run's final state.
    owned: HashSet<String>,
    options: HashMap<String, TraceOptions>,
    traces: Vec<LangfuseTrace>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An observer that renders graph invocations as Langfuse traces (observability §8).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
/// use openarmature_observability::langfuse::LangfuseObserver;
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
/// let langfuse = LangfuseObserver::builder().build();
/// let graph = GraphBuilder::new(Count::default())
///     .add_node("inc", |s: Arc<Count>, _: NodeCtx| async move {
///         Ok(CountUpdate::default().n(s.n + 1))
///     })
///     .add_edge("inc", END)
///     .entry("inc")
///     .compile()
///     .unwrap();
/// langfuse.invoke(&graph, Count::default(), InvokeOptions::default()).await.unwrap();
///
/// let traces = langfuse.traces();
/// assert_eq!(traces[0].name, "inc");
/// assert_eq!(traces[0].observations[0].name, "inc");
/// # });
/// ```
#[derive(Clone)]
pub struct LangfuseObserver {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for LangfuseObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LangfuseObserver").finish_non_exhaustive()
    }
}

/// Finishes an invocation whose [`LangfuseObserver::invoke`] future was dropped
/// (once its id is known).
struct FinishOnDrop<'a> {
    observer: &'a LangfuseObserver,
    invocation_id: Option<Arc<Mutex<Option<String>>>>,
}

impl FinishOnDrop<'_> {
    /// The run returned: nothing to finish on drop.
    fn disarm(mut self) {
        self.invocation_id = None;
    }
}

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        let id = self
            .invocation_id
            .take()
            .and_then(|slot| lock(&slot).take());
        if let Some(id) = id {
            self.observer.shared.otel.end_invocation(&id, None);
            self.observer.finish(&id, None);
        }
    }
}

/// The observer as [`LangfuseObserver::invoke_traced`] attaches it to one run: the
/// run's first event binds its invocation id (minted by the engine on a resume) to
/// the call's trace options, and marks the run as finished by the call.
struct Claim {
    observer: LangfuseObserver,
    trace: Mutex<Option<TraceOptions>>,
    id: Arc<Mutex<Option<String>>>,
}

impl Observer for Claim {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        if let ObserverEvent::InvocationStarted(e) = &*event {
            if let Some(trace) = lock(&self.trace).take() {
                let id = e.invocation_id.to_string();
                let mut inner = lock(&self.observer.shared.inner);
                inner.owned.insert(id.clone());
                inner.options.insert(id.clone(), trace);
                *lock(&self.id) = Some(id);
            }
        }
        self.observer.on_event(event)
    }
}

impl LangfuseObserver {
    /// Starts a builder.
    pub fn builder() -> LangfuseObserverBuilder {
        LangfuseObserverBuilder::new()
    }

    /// A registration attaching this observer (under [`REGISTRATION_NAME`]) with the
    /// invocation lifecycle events, to a graph or to one invocation.
    pub fn registration(&self) -> Registration {
        Registration::shared(
            REGISTRATION_NAME,
            Arc::new(self.clone()) as Arc<dyn Observer>,
        )
        .with_invocation_events()
    }

    /// Runs `graph` once with this observer attached and returns when its trace is
    /// finished (see [`LangfuseObserver::invoke_traced`]).
    ///
    /// # Errors
    /// [`InvokeError::Metadata`] before any work, or the run's graph error.
    pub async fn invoke<S: State>(
        &self,
        graph: &CompiledGraph<S>,
        initial: S,
        options: InvokeOptions,
    ) -> Result<Completed<S>, InvokeError<S>> {
        self.invoke_traced(graph, initial, options, TraceOptions::default())
            .await
    }

    /// Runs `graph` once with this observer attached, the trace named and grouped per
    /// `trace`, and returns when its trace is finished: the caller metadata is
    /// validated first (§3.4), a missing invocation id is minted (UUIDv4), and
    /// `trace.output` comes from the run's final state. A resume
    /// ([`InvokeOptions::resume_invocation`]) gets its own trace under the id the
    /// engine mints for it, its `trace.input` taken from the restored checkpoint
    /// state (§8.4.1, pipeline-utilities §10.4). Finished traces are in
    /// [`LangfuseObserver::traces`] and handed to the client; call
    /// [`LangfuseObserver::flush`] to send them.
    ///
    /// # Errors
    /// [`InvokeError::Metadata`] before any work, or the run's graph error.
    ///
    /// # Cancel safety
    /// Dropping the future stops the run and finishes its trace with what was seen.
    pub async fn invoke_traced<S: State>(
        &self,
        graph: &CompiledGraph<S>,
        initial: S,
        mut options: InvokeOptions,
        trace: TraceOptions,
    ) -> Result<Completed<S>, InvokeError<S>> {
        metadata::user_attributes(&options.metadata)?;
        // A resume runs under an id the engine mints (pipeline-utilities §10.4): the
        // claim learns it from the run's first event.
        let known = match options.resume_invocation {
            Some(_) => None,
            None => Some(
                options
                    .invocation_id
                    .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
                    .clone(),
            ),
        };
        let claimed = Arc::new(Mutex::new(known));
        let claim = Claim {
            observer: self.clone(),
            trace: Mutex::new(Some(trace)),
            id: Arc::clone(&claimed),
        };
        let guard = FinishOnDrop {
            observer: self,
            invocation_id: Some(claimed),
        };
        options.observers.push(
            Registration::shared(REGISTRATION_NAME, Arc::new(claim) as Arc<dyn Observer>)
                .with_invocation_events(),
        );
        let result = graph.invoke_with(initial, options).await;
        guard.disarm();
        let real = match &result {
            Ok(done) => done.invocation_id.clone(),
            Err(e) => e.invocation_id().to_owned(),
        };
        graph
            .drain_events_for(&real, Some(self.shared.close_timeout))
            .await;
        let outcome = result
            .as_ref()
            .err()
            .map(|e| (e.category_name().to_owned(), e.original_message()));
        self.shared.otel.end_invocation(&real, Some(outcome));
        let final_state: &dyn StateView = match &result {
            Ok(done) => &done.state,
            Err(e) => e.recoverable_state(),
        };
        self.finish_with(&real, Some(final_state), result.is_err());
        result.map_err(InvokeError::Graph)
    }

    /// Every finished trace, in finishing order (an invocation's own trace before its
    /// detached children).
    pub fn traces(&self) -> Vec<LangfuseTrace> {
        lock(&self.shared.inner).traces.clone()
    }

    /// The finished trace with Langfuse id `id`.
    pub fn trace(&self, id: &str) -> Option<LangfuseTrace> {
        lock(&self.shared.inner)
            .traces
            .iter()
            .find(|t| t.id == id)
            .cloned()
    }

    /// Sends what the client recorded (a no-op without a client).
    ///
    /// # Errors
    /// The client's [`LangfuseError`].
    pub async fn flush(&self) -> Result<(), LangfuseError> {
        match &self.shared.client {
            Some(c) => c.flush().await,
            None => Ok(()),
        }
    }

    /// Finishes every invocation still open (seen through a graph-attached observer
    /// without lifecycle events, or left by a dropped run). Call it after
    /// [`CompiledGraph::drain`].
    pub fn close_all(&self) {
        self.shared.otel.close_all();
        let ids: Vec<String> = lock(&self.shared.inner)
            .invocations
            .keys()
            .cloned()
            .collect();
        for id in ids {
            self.finish(&id, None);
        }
    }

    fn finish(&self, invocation_id: &str, final_state: Option<&dyn StateView>) {
        let failed = lock(&self.shared.inner)
            .invocations
            .get(invocation_id)
            .and_then(|io| io.failed)
            .unwrap_or(false);
        self.finish_with(invocation_id, final_state, failed);
    }

    /// Maps the finished spans of `invocation_id` to traces and hands them on.
    fn finish_with(&self, invocation_id: &str, final_state: Option<&dyn StateView>, failed: bool) {
        let (mut io, options) = {
            let mut inner = lock(&self.shared.inner);
            inner.owned.remove(invocation_id);
            (
                inner.invocations.remove(invocation_id).unwrap_or_default(),
                inner.options.remove(invocation_id).unwrap_or_default(),
            )
        };
        io.failed = Some(io.failed.unwrap_or(false) || failed);
        let spans = self.take_spans(invocation_id);
        if spans.is_empty() {
            return;
        }
        let (input, output) = io.resolve(&self.shared.io, final_state);
        let extras = TraceExtras {
            fan_out_subgraphs: self.shared.fan_out_subgraphs.clone(),
            name: options.name,
            session_id: options.session_id,
            input: Some(input),
            output: Some(output),
        };
        let traces = build_traces(&spans, invocation_id, &extras);
        if let Some(client) = &self.shared.client {
            for t in &traces {
                client.record(t);
            }
        }
        lock(&self.shared.inner).traces.extend(traces);
    }

    /// Removes the captured spans of every trace rooted in `invocation_id`.
    fn take_spans(&self, invocation_id: &str) -> Vec<SpanData> {
        let mut captured = self.shared.captured.lock();
        let traces: HashSet<TraceId> = captured
            .iter()
            .filter(|s| is_root(s) && string(s, a::INVOCATION_ID).as_deref() == Some(invocation_id))
            .map(|s| s.span_context.trace_id())
            .collect();
        let (mine, rest): (Vec<SpanData>, Vec<SpanData>) = std::mem::take(&mut *captured)
            .into_iter()
            .partition(|s| traces.contains(&s.span_context.trace_id()));
        *captured = rest;
        mine
    }

    /// Folds an event into the invocation's input/output bookkeeping; returns the id
    /// of an invocation this event completed that no `invoke` call owns.
    fn note(&self, event: &ObserverEvent) -> Option<String> {
        let mut inner = lock(&self.shared.inner);
        match event {
            ObserverEvent::InvocationStarted(e) => {
                let io = inner
                    .invocations
                    .entry(e.invocation_id.to_string())
                    .or_default();
                io.entry = Some(e.entry.to_string());
                io.correlation_id = Some(e.correlation_id.to_string());
                io.on_start(&self.shared.io, e.initial_state.as_ref());
                None
            }
            ObserverEvent::Node(e) => {
                let io = inner
                    .invocations
                    .entry(e.invocation_id.to_string())
                    .or_default();
                if io.correlation_id.is_none() {
                    io.correlation_id = e.correlation_id.as_deref().map(str::to_owned);
                }
                io.on_node(&self.shared.io, e);
                None
            }
            ObserverEvent::InvocationCompleted(e) => {
                let id = e.invocation_id.to_string();
                inner.invocations.entry(id.clone()).or_default().failed = Some(e.error.is_some());
                (!inner.owned.contains(&id)).then_some(id)
            }
            _ => None,
        }
    }
}

impl Observer for LangfuseObserver {
    fn on_event(&self, event: Arc<ObserverEvent>) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let completed = self.note(&event);
            self.shared.otel.on_event(event).await?;
            if let Some(id) = completed {
                self.finish(&id, None);
            }
            Ok(())
        })
    }
}
