//! Spec: harness §3 (dispatch), §4 (the turn), §5 (outcome handling), §7 (errors at the
//! turn boundary), §10 (the harness's own categories).

use std::sync::Arc;

use openarmature_core::Category;
use openarmature_graph::suspension::{Outcome, SignalDescriptor, Suspended};
use openarmature_graph::{
    BoxError, CaughtException, CompiledGraph, Completed, GraphError, InvokeOptions, State,
};
use serde_json::{json, Value};

use crate::bucket::ErrorBucket;
use crate::coordinator::{PausedStoreCoordinator, SignalCoordinator};
use crate::dispatch::{DispatchPath, HarnessMode, SignalTarget, Transmission};

/// Builds a turn's initial state from the inbound payload.
type StateBuilder<S> = Arc<dyn Fn(&Value) -> Result<S, BoxError> + Send + Sync>;

/// Adds what every invocation of this harness carries (observers, metadata).
type OptionsHook = Arc<dyn Fn(InvokeOptions) -> InvokeOptions + Send + Sync>;

/// Serves one compiled graph to a runtime, one [`Turn`] per [`Transmission`].
pub struct Harness<S: State> {
    graph: CompiledGraph<S>,
    mode: HarnessMode,
    coordinator: Arc<dyn SignalCoordinator>,
    build: StateBuilder<S>,
    options: Option<OptionsHook>,
}

impl<S: State> Clone for Harness<S> {
    fn clone(&self) -> Self {
        Harness {
            graph: self.graph.clone(),
            mode: self.mode,
            coordinator: Arc::clone(&self.coordinator),
            build: Arc::clone(&self.build),
            options: self.options.clone(),
        }
    }
}

/// The arguments a turn passed to the engine.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct InvokeArgs {
    /// The session id threaded into the invocation (never in stateless mode).
    pub session_id: Option<String>,
    /// Whether the harness minted it (§3.1 without a caller id).
    pub session_id_generated: bool,
    /// The paused invocation a signal resumed.
    pub resume_invocation: Option<String>,
    /// The signal payload merged on resume.
    pub signal_payload: Option<Value>,
}

/// A turn's error, categorized at the boundary (§7).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{category} ({}): {message}", bucket.as_str())]
#[non_exhaustive]
pub struct HarnessError {
    /// The error category: the cause's own (e.g. `provider_unavailable`) when a node
    /// raised, the engine's or the harness's (§10) otherwise.
    pub category: String,
    /// How the caller should react.
    pub bucket: ErrorBucket,
    /// The cause's message.
    pub message: String,
    /// The invocation, when one ran.
    pub invocation_id: Option<String>,
}

impl HarnessError {
    /// An error of `category`, in the bucket [`ErrorBucket::of`] gives it.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        HarnessError {
            category: category.as_str().to_owned(),
            bucket: ErrorBucket::of(category.as_str()),
            message: message.into(),
            invocation_id: None,
        }
    }

    /// A graph's error at the turn boundary: a node's failure keeps its cause's own
    /// category (`provider_unavailable`, say), the engine's otherwise.
    pub fn of_graph<S>(e: &GraphError<S>) -> Self {
        let derived = CaughtException::capture(e.cause()).category;
        let category = match e.category() {
            openarmature_graph::RuntimeCategory::NodeException => {
                derived.unwrap_or_else(|| e.category_name().to_owned())
            }
            _ => e.category_name().to_owned(),
        };
        HarnessError {
            bucket: ErrorBucket::of(&category),
            category,
            message: e.original_message(),
            invocation_id: Some(e.invocation_id().to_owned()),
        }
    }
}

/// Registers a suspended turn's signal subscription (§5.3, §6): a failure is
/// `harness_signal_subscription_failed`, naming the paused invocation.
///
/// # Errors
/// The coordinator's failure, categorized.
pub async fn register_suspension(
    coordinator: &dyn SignalCoordinator,
    invocation_id: &str,
    descriptor: &SignalDescriptor,
) -> Result<(), HarnessError> {
    coordinator
        .subscribe(invocation_id, descriptor)
        .await
        .map_err(|err| {
            let mut e = HarnessError::new(
                Category::HARNESS_SIGNAL_SUBSCRIPTION_FAILED,
                err.to_string(),
            );
            e.invocation_id = Some(invocation_id.to_owned());
            e
        })
}

/// How a turn ended (§4 turn exit).
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnOutcome<S> {
    /// The graph reached `END`.
    Completed(Completed<S>),
    /// A node suspended; the signal subscription is registered.
    Suspended(Suspended<S>),
    /// The turn failed.
    Errored(HarnessError),
}

/// What the transport sends back: three shapes, observably distinct (§5).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outbound {
    /// `completion_response`: the final state.
    Completion {
        /// The invocation id.
        invocation_id: String,
        /// The final state as JSON.
        state: Value,
    },
    /// `suspended_acknowledgment`: the turn paused; the signal it awaits.
    Suspended {
        /// The paused invocation (what a callback route names).
        invocation_id: String,
        /// The awaited signal.
        descriptor: SignalDescriptor,
    },
    /// `error_response`.
    Error(HarnessError),
}

impl Outbound {
    /// `completion_response` / `suspended_acknowledgment` / `error_response`.
    pub fn shape(&self) -> &'static str {
        match self {
            Outbound::Completion { .. } => "completion_response",
            Outbound::Suspended { .. } => "suspended_acknowledgment",
            Outbound::Error(_) => "error_response",
        }
    }

    /// The payload a transport serializes: the state's fields for a completion; the
    /// invocation and descriptor for a suspension; for an error its category, bucket,
    /// message and the bucket's flags (`intervention_required`, `retry_safe`,
    /// `user_action_required`).
    pub fn payload(&self) -> Value {
        match self {
            Outbound::Completion { state, .. } => state.clone(),
            Outbound::Suspended {
                invocation_id,
                descriptor,
            } => json!({
                "invocation_id": invocation_id,
                "signal_id": descriptor.signal_id,
                "descriptor": descriptor,
            }),
            Outbound::Error(e) => json!({
                "category": e.category,
                "bucket": e.bucket.as_str(),
                "diagnostic_message": e.message,
                "invocation_id": e.invocation_id,
                "intervention_required": e.bucket == ErrorBucket::SessionTerminating,
                "retry_safe": e.bucket == ErrorBucket::RetryableTransient,
                "user_action_required": e.bucket == ErrorBucket::UserCorrectable,
            }),
        }
    }
}

/// One turn: how the transmission was classified, what reached the engine, how it
/// ended, and the outbound surface.
#[derive(Debug)]
#[non_exhaustive]
pub struct Turn<S> {
    /// The dispatch path (`None` when classification failed).
    pub path: Option<DispatchPath>,
    /// The engine call (`None` when the turn failed before it).
    pub invoke: Option<InvokeArgs>,
    /// The outcome.
    pub outcome: TurnOutcome<S>,
    /// What the transport sends back.
    pub outbound: Outbound,
    /// Whether a signal subscription was registered (a suspended turn).
    pub subscribed: bool,
    /// For a signal given by id: the paused invocation the coordinator resolved.
    pub resolved_invocation: Option<String>,
}

impl<S: State> Harness<S> {
    fn with_mode(
        graph: CompiledGraph<S>,
        mode: HarnessMode,
        build: impl Fn(&Value) -> Result<S, BoxError> + Send + Sync + 'static,
    ) -> Self {
        Harness {
            coordinator: Arc::new(PausedStoreCoordinator::new(graph.clone())),
            graph,
            mode,
            build: Arc::new(build),
            options: None,
        }
    }

    /// A sessioned harness: `build` makes each turn's initial state from its payload.
    /// Signals resolve against the graph's paused records ([`PausedStoreCoordinator`])
    /// unless [`Harness::coordinator`] sets another coordinator.
    pub fn sessioned(
        graph: CompiledGraph<S>,
        build: impl Fn(&Value) -> Result<S, BoxError> + Send + Sync + 'static,
    ) -> Self {
        Self::with_mode(graph, HarnessMode::Sessioned, build)
    }

    /// A stateless harness (no session id ever reaches the engine).
    pub fn stateless(
        graph: CompiledGraph<S>,
        build: impl Fn(&Value) -> Result<S, BoxError> + Send + Sync + 'static,
    ) -> Self {
        Self::with_mode(graph, HarnessMode::Stateless, build)
    }

    /// Uses `coordinator` for signal subscriptions and lookups.
    #[must_use]
    pub fn coordinator(mut self, coordinator: impl SignalCoordinator) -> Self {
        self.coordinator = Arc::new(coordinator);
        self
    }

    /// Adds to every invocation's options (observers, metadata).
    #[must_use]
    pub fn invoke_options(
        mut self,
        hook: impl Fn(InvokeOptions) -> InvokeOptions + Send + Sync + 'static,
    ) -> Self {
        self.options = Some(Arc::new(hook));
        self
    }

    /// The harness's mode.
    pub fn mode(&self) -> HarnessMode {
        self.mode
    }

    /// The graph it serves.
    pub fn graph(&self) -> &CompiledGraph<S> {
        &self.graph
    }

    fn failed(path: Option<DispatchPath>, invoke: Option<InvokeArgs>, e: HarnessError) -> Turn<S> {
        Turn {
            path,
            invoke,
            outbound: Outbound::Error(e.clone()),
            outcome: TurnOutcome::Errored(e),
            subscribed: false,
            resolved_invocation: None,
        }
    }

    /// Handles one transmission: classify (§3), run or resume the graph once (§4),
    /// handle the outcome (§5). Never blocks on a suspension: a suspended turn
    /// registers its subscription and returns.
    pub async fn handle(&self, t: Transmission) -> Turn<S> {
        self.handle_with(t, InvokeOptions::default()).await
    }

    /// Like [`Harness::handle`], starting from `options` instead of the defaults: what a
    /// runtime fixes per turn (the invocation id and correlation id a durable runtime
    /// keys its job by, a [`InvokeOptions::resume_invocation`] of a checkpointed run)
    /// before the [`Harness::invoke_options`] hook adds what every turn carries. The
    /// harness's own rules still apply: a stateless turn carries no session id, a
    /// signal resume stays bound to the paused invocation.
    pub async fn handle_with(&self, t: Transmission, options: InvokeOptions) -> Turn<S> {
        let Some(path) = t.classify(self.mode) else {
            let e = HarnessError::new(
                Category::HARNESS_PATH_CLASSIFICATION_AMBIGUOUS,
                "the transmission's intent and signal disagree",
            );
            return Self::failed(None, None, e);
        };
        let base = match &self.options {
            Some(hook) => hook(options),
            None => options,
        };
        let mut args = InvokeArgs::default();
        let mut resolved = None;
        let result = if let Some((target, payload)) = t.signal.clone() {
            let id = match target {
                SignalTarget::Invocation(id) => id,
                SignalTarget::SignalId(signal_id) => {
                    match self.coordinator.resolve(&signal_id).await {
                        Ok(Some(id)) => {
                            resolved = Some(id.clone());
                            id
                        }
                        Ok(None) => {
                            let e = HarnessError::new(
                                Category::HARNESS_SIGNAL_CORRELATION_FAILED,
                                format!("no paused invocation awaits signal `{signal_id}`"),
                            );
                            return Self::failed(Some(path), None, e);
                        }
                        Err(err) => {
                            let e = HarnessError::new(
                                Category::HARNESS_SIGNAL_CORRELATION_FAILED,
                                err.to_string(),
                            );
                            return Self::failed(Some(path), None, e);
                        }
                    }
                }
            };
            args.resume_invocation = Some(id.clone());
            args.signal_payload = Some(payload.clone());
            // The paused record carries the session (§3.3); the caller's is not used.
            let options = base.resume_invocation(&id).signal_payload(payload);
            let outcome = self.graph.run(self.graph.defaults().clone(), options).await;
            if outcome.is_ok() {
                let _ = self.coordinator.unsubscribe(&id).await;
            }
            outcome
        } else {
            let initial = match (self.build)(&t.payload) {
                Ok(s) => s,
                Err(err) => {
                    let category = openarmature_graph::category_of(&*err)
                        .map_or("state_validation_error", |c| c.as_str());
                    let e = HarnessError {
                        category: category.to_owned(),
                        bucket: ErrorBucket::UserCorrectable,
                        message: err.to_string(),
                        invocation_id: None,
                    };
                    return Self::failed(Some(path), None, e);
                }
            };
            let mut options = base;
            if self.mode == HarnessMode::Sessioned {
                let caller = t.session_id.clone().or_else(|| {
                    t.payload
                        .get("session_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                let session = match (path, caller) {
                    (_, Some(id)) => id,
                    (DispatchPath::NewSession, None) => {
                        args.session_id_generated = true;
                        uuid::Uuid::new_v4().to_string()
                    }
                    _ => {
                        let e = HarnessError::new(
                            Category::HARNESS_SESSION_ID_UNRESOLVED,
                            "a continuing transmission names no session",
                        );
                        return Self::failed(Some(path), None, e);
                    }
                };
                args.session_id = Some(session.clone());
                options.session_id = Some(session);
            } else {
                // Stateless (§3.0): whatever the options hook set, no session id.
                options.session_id = None;
            }
            self.graph.run(initial, options).await
        };
        self.outcome(path, args, resolved, result).await
    }

    async fn outcome(
        &self,
        path: DispatchPath,
        args: InvokeArgs,
        resolved: Option<String>,
        result: Result<Outcome<S>, GraphError<S>>,
    ) -> Turn<S> {
        let turn = |outcome, outbound, subscribed| Turn {
            path: Some(path),
            invoke: Some(args.clone()),
            outcome,
            outbound,
            subscribed,
            resolved_invocation: resolved.clone(),
        };
        match result {
            Ok(Outcome::Completed(done)) => {
                let outbound = Outbound::Completion {
                    invocation_id: done.invocation_id.clone(),
                    state: done.state.to_json(),
                };
                turn(TurnOutcome::Completed(done), outbound, false)
            }
            Ok(Outcome::Suspended(paused)) => {
                // §5.3: register the subscription, acknowledge, return.
                let registered = register_suspension(
                    &*self.coordinator,
                    &paused.invocation_id,
                    &paused.descriptor,
                )
                .await;
                if let Err(e) = registered {
                    return Self::failed(Some(path), Some(args), e);
                }
                let outbound = Outbound::Suspended {
                    invocation_id: paused.invocation_id.clone(),
                    descriptor: paused.descriptor.clone(),
                };
                turn(TurnOutcome::Suspended(paused), outbound, true)
            }
            Ok(_) => {
                let e = HarnessError::new(
                    Category::new("node_exception"),
                    "an outcome this harness does not know",
                );
                Self::failed(Some(path), Some(args), e)
            }
            Err(e) => {
                let e = HarnessError::of_graph(&e);
                turn(TurnOutcome::Errored(e.clone()), Outbound::Error(e), false)
            }
        }
    }
}
