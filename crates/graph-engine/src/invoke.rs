//! Spec: graph-engine §3 (invoke), suspension §5 / §7 (the suspended outcome, resume).
//!
//! One invocation from entry to outcome: prepare (fresh, checkpoint resume, or signal
//! resume), the lifecycle events, the outermost step loop, then the outcome — the
//! final state (with the session auto-save), or a suspension persisted as a paused
//! record.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde_json::Value;

use crate::checkpoint::engine::Prepared;
use crate::compiled::{next_seq, unwrap_arc, CloseOnDrop, CompiledGraph, Completed};
use crate::error::{GraphError, RuntimeCategory};
use crate::metadata::{InvocationMetadata, MetadataCell};
use crate::node::{Invocation, InvokeOptions, Scope};
use crate::observer::{InvocationCompleted, InvocationStarted, ObserverEvent, StateRef};
use crate::queue::EventQueue;
use crate::state::State;
use crate::suspension::{Outcome, SuspendedInvocation};

impl<S: State> CompiledGraph<S> {
    /// Runs the graph with invocation-scoped observers, ids and metadata, returning
    /// the final state.
    ///
    /// # Errors
    /// A [`GraphError`] with the §4 category and the recoverable state;
    /// [`RuntimeCategory::InvocationMetadataInvalid`] (with the
    /// [`MetadataError`](crate::metadata::MetadataError) as its source) before any
    /// work begins when `options.metadata` breaks observability §3.4. A graph whose
    /// node suspends reports [`RuntimeCategory::InvocationSuspended`] (the paused
    /// record is persisted); use [`CompiledGraph::run`] to receive the suspension as
    /// an outcome.
    pub async fn invoke_with(
        &self,
        initial: S,
        options: InvokeOptions,
    ) -> Result<Completed<S>, GraphError<S>> {
        match self.run(initial, options).await? {
            Outcome::Completed(done) => Ok(done),
            Outcome::Suspended(paused) => Err(GraphError {
                category: RuntimeCategory::InvocationSuspended,
                node: paused.node_name.clone(),
                namespace: paused.namespace.clone(),
                state: paused.state,
                invocation_id: paused.invocation_id.clone(),
                source: Box::new(SuspendedInvocation {
                    invocation_id: paused.invocation_id,
                    descriptor: paused.descriptor,
                    node_name: paused.node_name,
                    namespace: paused.namespace,
                }),
            }),
        }
    }

    /// Runs the graph to an [`Outcome`]: completed at `END`, or suspended (suspension
    /// §5). With [`InvokeOptions::signal_payload`] and
    /// [`InvokeOptions::resume_invocation`] it resumes a suspended invocation (§7),
    /// like [`CompiledGraph::resume`].
    ///
    /// # Errors
    /// As [`CompiledGraph::invoke_with`], and the suspension categories: a failed
    /// persist at suspend time (`suspension_persistence_failed`), an unknown or not
    /// suspended invocation on resume (`suspension_record_invalid`), a payload that
    /// does not fit the schema (`suspension_resume_payload_invalid`), `suspend()` where
    /// it is not permitted (`suspension_in_unsupported_context`).
    pub async fn run(
        &self,
        initial: S,
        mut options: InvokeOptions,
    ) -> Result<Outcome<S>, GraphError<S>> {
        let signal = match (&options.signal_payload, &options.resume_invocation) {
            (Some(payload), Some(id)) => Some(self.inner.prepare_signal_resume(id, payload).await),
            (Some(_), None) => Some(Err(crate::suspension::SuspensionError::RecordInvalid {
                description: "a signal payload was given without resume_invocation".into(),
            })),
            (None, _) => None,
        };
        // A signal resume stays bound to the suspended invocation's session (harness §3.3).
        if let Some(Ok(resume)) = &signal {
            if options.session_id.is_none() {
                options.session_id = resume.record.session_id.clone();
            }
        }
        let resuming = options.resume_invocation.is_some();
        // A checkpoint-resumed run is a new invocation: a caller-supplied id is ignored
        // (§10.4); a signal-resumed one keeps the suspended invocation's (suspension §7).
        let id: Arc<str> = match (&signal, options.invocation_id) {
            (Some(Ok(resume)), _) => Arc::from(resume.record.invocation_id.as_str()),
            (_, Some(id)) if !resuming => id.into(),
            _ => crate::ids::mint_uuid().into(),
        };
        let fail_early =
            |category: RuntimeCategory, initial: S, source: crate::BoxError| GraphError {
                category,
                node: String::new(),
                namespace: Vec::new(),
                state: initial,
                invocation_id: id.to_string(),
                source,
            };
        if let Err(e) = crate::metadata::validate(&options.metadata) {
            return Err(fail_early(
                RuntimeCategory::InvocationMetadataInvalid,
                initial,
                Box::new(e),
            ));
        }
        let prepared = match signal {
            Some(Ok(resume)) => self.inner.signal_prepared(resume).await,
            Some(Err(e)) => Err((e.runtime_category(), Box::new(e) as crate::BoxError)),
            None => self
                .inner
                .prepare_checkpoint(options.resume_invocation.as_deref(), options.correlation_id)
                .await
                .map_err(|e| (e.runtime_category(), Box::new(e) as crate::BoxError)),
        };
        let Prepared {
            checkpoint,
            cursor,
            correlation,
            first_step,
        } = match prepared {
            Ok(p) => p,
            Err((category, source)) => return Err(fail_early(category, initial, source)),
        };
        let signal_resumed = options.signal_payload.is_some();
        let (initial, session) = self
            .inner
            .open_session(
                initial,
                options.session_id.as_deref(),
                resuming,
                options.loaded_session.as_ref(),
                &id,
            )
            .await?;
        let queue = EventQueue::start(
            &self.inner.registry,
            Arc::clone(&id),
            Arc::clone(&self.inner.sink),
        );
        let started_seq = next_seq();
        let inv = Arc::new(Invocation {
            started_seq,
            id: Arc::clone(&id),
            correlation_id: Some(correlation.clone()),
            session_id: options.session_id.map(Arc::from),
            metadata: InvocationMetadata::from_map(options.metadata),
            step: AtomicU64::new(first_step),
            checkpoint,
            session,
            queue,
            invocation_observers: options.observers,
            resume: cursor,
            pending: crate::suspension::PendingSlot::default(),
        });
        // The invocation's own events are delivered per poll, not per event.
        let batch = Arc::clone(&inv);
        crate::queue::batch_events(&batch.queue, async move {
            let _close = CloseOnDrop(Arc::clone(&inv));
            let attached = self.inner.observers_at(started_seq);
            let scope = Arc::new(Scope {
                recipients: Scope::recipients_for(&attached, &inv),
                attached,
                metadata: MetadataCell::new(inv.metadata.clone()),
                inv,
                namespace_prefix: Arc::from([]),
                parent_states: Arc::from([]),
                fan_out_chain: Arc::from([]),
                branch_chain: Arc::from([]),
                inherited_attempt: 0,
                suspension_forbidden: None,
                namespaces: None,
            });
            // Lifecycle events are opt-in: dispatch them only when someone asked.
            let listening = scope.recipients.iter().any(|r| r.invocation_events);
            if listening {
                let entry = Arc::clone(&self.inner.nodes[self.inner.entry].name);
                let initial_state: Option<StateRef> = if resuming {
                    scope.inv.resume.as_ref().and_then(|cursor| {
                        let restored = cursor.restored_state()?.clone();
                        crate::checkpoint::runtime::state_from_json(&self.inner.defaults, restored)
                            .ok()
                            .map(|s| Arc::new(s) as StateRef)
                    })
                } else {
                    Some(Arc::new(initial.clone()))
                };
                let started = InvocationStarted {
                    invocation_id: Arc::clone(&id),
                    correlation_id: correlation,
                    metadata: Arc::clone(scope.inv.metadata.as_arc()),
                    session_id: scope.inv.session_id.clone(),
                    entry,
                    initial_state,
                    resumed_from: options.resume_invocation.as_deref().map(Arc::from),
                    at: std::time::SystemTime::now(),
                };
                scope.inv.queue.dispatch(
                    ObserverEvent::InvocationStarted(started),
                    Arc::clone(&scope.recipients),
                );
            }
            // On resume the caller's initial state is not used: the restored one is checked
            // when it is rebuilt from the record.
            let checked = if resuming { Ok(()) } else { initial.validate() };
            let result = match checked {
                Err(err) => Err(GraphError {
                    category: RuntimeCategory::StateValidationError,
                    node: String::new(),
                    namespace: Vec::new(),
                    state: initial,
                    invocation_id: id.to_string(),
                    source: Box::new(err),
                }),
                Ok(()) => {
                    let run = self.inner.run_level(Arc::new(initial), Arc::clone(&scope));
                    let entry = &self.inner.nodes[self.inner.entry].name;
                    let correlation = scope.inv.correlation_id.as_deref().unwrap_or_default();
                    crate::spans::invocation(
                        &id,
                        entry,
                        correlation,
                        GraphError::<S>::category_name,
                        run,
                    )
                    .await
                }
            };
            // A suspension is persisted before anyone hears of it: a failed persist makes
            // the outcome an error (suspension §8.6).
            let result = match result {
                Err(e) if e.category == RuntimeCategory::InvocationSuspended => {
                    self.inner.persist_suspension(&scope.inv, e).await
                }
                Err(e) => Err(e),
                Ok(state) => Ok(Ok(state)),
            };
            if listening {
                let completed = InvocationCompleted {
                    invocation_id: Arc::clone(&id),
                    error: result
                        .as_ref()
                        .err()
                        .map(|e| (e.category_name().to_owned(), e.original_message())),
                    suspended: match &result {
                        Ok(Err(paused)) => Some(Arc::new(paused.descriptor.clone())),
                        _ => None,
                    },
                    at: std::time::SystemTime::now(),
                };
                scope.inv.queue.dispatch(
                    ObserverEvent::InvocationCompleted(completed),
                    Arc::clone(&scope.recipients),
                );
            }
            let state = match result? {
                Ok(state) => state,
                Err(paused) => return Ok(Outcome::Suspended(paused)),
            };
            let state = self.inner.finish_session(&scope.inv, state).await?;
            if signal_resumed {
                // The resumed run completed: its paused record is spent (suspension §8.5).
                // Best effort: the record is already `resumed`, so it cannot resume again.
                let _ = self.inner.paused.delete_paused(&id).await;
            }
            Ok(Outcome::Completed(Completed {
                state: unwrap_arc(state),
                invocation_id: id.to_string(),
            }))
        })
        .await
    }

    /// Resumes the suspended invocation `invocation_id` with `signal_payload` merged
    /// into its state (suspension §6 / §7): the same invocation id, continuing after
    /// the suspending node (or running it again, per its [`OnResume`](crate::suspension::OnResume)).
    /// Any worker holding this compiled graph and the same Checkpointer can resume it.
    ///
    /// # Errors
    /// As [`CompiledGraph::run`].
    pub async fn resume(
        &self,
        invocation_id: &str,
        signal_payload: Value,
    ) -> Result<Outcome<S>, GraphError<S>> {
        let options = InvokeOptions::default()
            .resume_invocation(invocation_id)
            .signal_payload(signal_payload);
        self.run(self.inner.defaults.clone(), options).await
    }

    /// The paused record of `invocation_id`, whatever its status (the graph's
    /// Checkpointer, or its own store when none is registered).
    ///
    /// # Errors
    /// The backend's error.
    pub async fn paused_record(
        &self,
        invocation_id: &str,
    ) -> Result<Option<crate::suspension::PausedRecord>, crate::BoxError> {
        self.inner.paused.load_paused(invocation_id).await
    }

    /// The suspended invocations awaiting `signal_id` (all when `None`), oldest first.
    ///
    /// # Errors
    /// The backend's error.
    pub async fn paused_records(
        &self,
        signal_id: Option<&str>,
    ) -> Result<Vec<crate::suspension::PausedRecord>, crate::BoxError> {
        self.inner.paused.list_paused(signal_id).await
    }
}
