//! Spec: harness-chat §5 (`send`), §6 (inbound wiring), §7 (tail extraction), §8
//! (suspension: pending messages, signal resume, listeners), §10 (error replies).

use std::sync::Arc;

use openarmature_core::Category;
use openarmature_graph::session::LoadedSession;
use openarmature_graph::suspension::{Outcome, PausedStatus};
use openarmature_graph::{CompiledGraph, GraphError, InvokeOptions, State};
use openarmature_harness::{
    register_suspension, DispatchPath, HarnessError, PausedStoreCoordinator, SignalCoordinator,
    SignalTarget,
};
use openarmature_llm::Message;
use serde_json::{json, Value};

use crate::listeners::{Listeners, Subscription};
use crate::locks::SessionLocks;
use crate::outcome::{ChatCompleted, ChatErrored, ChatSuspended, ChatTurnOutcome};
use crate::reply::{self, chat_bucket, ReplyText};
use crate::HISTORY_FIELD;

/// Adds what every invocation of this harness carries (observers, metadata).
type OptionsHook = Arc<dyn Fn(InvokeOptions) -> InvokeOptions + Send + Sync>;

/// The graph's state has no `messages` list, so it cannot hold a conversation (§4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state_validation_error: a chat graph's state needs a `messages` list field (harness-chat §4); its defaults have {found}")]
pub struct NotAChatGraph {
    /// What the defaults hold under `messages` (`no such field`, `a string`, …).
    pub found: String,
}

impl NotAChatGraph {
    /// `state_validation_error`.
    pub fn category(&self) -> Category {
        Category::STATE_VALIDATION_ERROR
    }
}

/// Serves a sessioned chat graph: one [`ChatHarness::send`] per user message, turns of
/// one session one at a time, resumed turns delivered to subscribed listeners.
///
/// Cloning shares everything (locks, listeners, coordinator).
pub struct ChatHarness<S: State> {
    inner: Arc<Inner<S>>,
}

impl<S: State> Clone for ChatHarness<S> {
    fn clone(&self) -> Self {
        ChatHarness {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<S: State> {
    graph: CompiledGraph<S>,
    coordinator: Arc<dyn SignalCoordinator>,
    options: Option<OptionsHook>,
    reply_text: ReplyText,
    locks: SessionLocks,
    listeners: Listeners,
}

/// The pieces of an outcome that depend on how the turn began.
struct Turn<'a> {
    session_id: &'a str,
    path: DispatchPath,
    /// The history length before the turn's first new message.
    tail_from: usize,
}

impl<S: State> ChatHarness<S> {
    /// A chat harness over `graph`, whose state must carry the `messages` list (§4)
    /// and which should register a SessionStore (without one, history lasts one turn).
    /// Signals resolve against the graph's paused records ([`PausedStoreCoordinator`]),
    /// so any process sharing its Checkpointer can resume a turn.
    ///
    /// # Errors
    /// [`NotAChatGraph`] when the state's defaults have no `messages` list.
    pub fn new(graph: CompiledGraph<S>) -> Result<Self, NotAChatGraph> {
        let defaults = graph.defaults().to_json();
        match defaults.get(HISTORY_FIELD) {
            Some(Value::Array(_)) => {}
            other => {
                let found = match other {
                    None => "no such field".to_owned(),
                    Some(v) => format!("`{v}`"),
                };
                return Err(NotAChatGraph { found });
            }
        }
        Ok(ChatHarness {
            inner: Arc::new(Inner {
                coordinator: Arc::new(PausedStoreCoordinator::new(graph.clone())),
                graph,
                options: None,
                reply_text: Arc::new(reply::default_reply_text),
                locks: SessionLocks::default(),
                listeners: Listeners::default(),
            }),
        })
    }

    fn configure(mut self, f: impl FnOnce(&mut Inner<S>)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let old = &self.inner;
                let mut inner = Inner {
                    graph: old.graph.clone(),
                    coordinator: Arc::clone(&old.coordinator),
                    options: old.options.clone(),
                    reply_text: Arc::clone(&old.reply_text),
                    locks: SessionLocks::default(),
                    listeners: Listeners::default(),
                };
                f(&mut inner);
                self.inner = Arc::new(inner);
            }
        }
        self
    }

    /// Uses `coordinator` for signal subscriptions and lookups.
    #[must_use]
    pub fn coordinator(self, coordinator: impl SignalCoordinator) -> Self {
        self.configure(|i| i.coordinator = Arc::new(coordinator))
    }

    /// Adds to every invocation's options (observers, metadata).
    #[must_use]
    pub fn invoke_options(
        self,
        hook: impl Fn(InvokeOptions) -> InvokeOptions + Send + Sync + 'static,
    ) -> Self {
        self.configure(|i| i.options = Some(Arc::new(hook)))
    }

    /// Writes errored turns' replies (i18n, brand voice); the buckets stay (§10).
    #[must_use]
    pub fn reply_text(
        self,
        text: impl Fn(openarmature_harness::ErrorBucket, &str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.configure(|i| i.reply_text = Arc::new(text))
    }

    /// The graph it serves.
    pub fn graph(&self) -> &CompiledGraph<S> {
        &self.inner.graph
    }

    /// Registers `callback` for the outcomes of `session_id`'s resumed turns (§8.2):
    /// it fires once per resumed turn, after the resumed invocation returns, never for
    /// a turn `send` already returned.
    pub fn subscribe(
        &self,
        session_id: &str,
        callback: impl Fn(&ChatTurnOutcome) + Send + Sync + 'static,
    ) -> Subscription {
        self.inner.listeners.add(session_id, Arc::new(callback))
    }

    /// Removes a listener; `false` when it was not registered.
    pub fn unsubscribe(&self, subscription: &Subscription) -> bool {
        self.inner.listeners.remove(subscription)
    }

    /// Sends a message in the spec's JSON shape (what a transport received): a value
    /// that is not a valid §3 message is refused as `chat_message_shape_invalid`
    /// before anything else happens.
    pub async fn send_json(&self, session_id: &str, message: &Value) -> ChatTurnOutcome {
        self.send_json_with(session_id, message, InvokeOptions::default())
            .await
    }

    /// [`ChatHarness::send_json`] with this turn's own options (an observer streaming
    /// its tokens, metadata) added to the harness's.
    pub async fn send_json_with(
        &self,
        session_id: &str,
        message: &Value,
        turn: InvokeOptions,
    ) -> ChatTurnOutcome {
        match Message::from_json_checked(message) {
            Ok(m) => self.send_with(session_id, m, turn).await,
            Err(e) => self.refused(Category::CHAT_MESSAGE_SHAPE_INVALID, e.message()),
        }
    }

    /// One chat turn (§5): validates the session id and the message, waits for the
    /// session's previous turn, loads the session, appends the message to `messages`,
    /// runs the graph once, and returns the new messages — or the pending messages of
    /// a suspended turn, or an error with its user-facing reply. Never blocks on a
    /// suspension.
    pub async fn send(&self, session_id: &str, message: Message) -> ChatTurnOutcome {
        self.send_with(session_id, message, InvokeOptions::default())
            .await
    }

    /// [`ChatHarness::send`] with this turn's own options: its observers run after
    /// the harness's, its metadata keys override theirs, its correlation id is used.
    pub async fn send_with(
        &self,
        session_id: &str,
        message: Message,
        extra: InvokeOptions,
    ) -> ChatTurnOutcome {
        if session_id.is_empty() {
            return self.refused(
                Category::HARNESS_SESSION_ID_UNRESOLVED,
                "a chat turn needs a non-empty session id",
            );
        }
        if let Err(e) = message.check_shape() {
            return self.refused(Category::CHAT_MESSAGE_SHAPE_INVALID, e.message());
        }
        let _turn = self.inner.locks.hold(session_id).await;
        let graph = &self.inner.graph;
        let (loaded_state, loaded) = match graph
            .load_session(session_id, graph.defaults().clone())
            .await
        {
            Ok(l) => l,
            Err(e) => return self.refused(Category::from_name(e.category()), &e.to_string()),
        };
        let history = history_len(&loaded_state.to_json());
        let path = if history == 0 {
            DispatchPath::NewSession
        } else {
            DispatchPath::ExistingSession
        };
        let initial = match append(&loaded_state, &message) {
            Ok(s) => s,
            Err(e) => return self.errored(Some(path), &e),
        };
        let turn = Turn {
            session_id,
            path,
            tail_from: history + 1,
        };
        let result = graph.run(initial, self.options(loaded, extra)).await;
        self.outcome(&turn, result).await
    }

    /// Delivers a signal (harness §3.3 through the chat layer, §8.2): resumes the
    /// paused invocation it names (directly, or by its signal id through the
    /// coordinator) under its session's turn lock, hands the resumed turn's outcome to
    /// the session's listeners, and returns it.
    pub async fn signal(&self, target: SignalTarget, payload: Value) -> ChatTurnOutcome {
        let correlation =
            |detail: String| HarnessError::new(Category::HARNESS_SIGNAL_CORRELATION_FAILED, detail);
        let invocation_id = match target {
            SignalTarget::Invocation(id) => id,
            SignalTarget::SignalId(signal_id) => {
                match self.inner.coordinator.resolve(&signal_id).await {
                    Ok(Some(id)) => id,
                    Ok(None) => {
                        let e = correlation(format!("no paused turn awaits signal `{signal_id}`"));
                        return self.errored(Some(DispatchPath::SignalResume), &e);
                    }
                    Err(err) => {
                        return self.errored(
                            Some(DispatchPath::SignalResume),
                            &correlation(err.to_string()),
                        )
                    }
                }
            }
        };
        let record = match self.inner.graph.paused_record(&invocation_id).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                let e = correlation(format!("no paused turn `{invocation_id}`"));
                return self.errored(Some(DispatchPath::SignalResume), &e);
            }
            Err(err) => {
                let e = HarnessError::new(Category::SUSPENSION_RECORD_INVALID, err.to_string());
                return self.errored(Some(DispatchPath::SignalResume), &e);
            }
        };
        let session_id = record.session_id.clone().unwrap_or_default();
        let tail_from = record.states.first().map_or(0, history_len);
        let _turn = self.inner.locks.hold(&session_id).await;
        // A resume of the same turn (a duplicated callback) may have run while this
        // one waited for the session: with nothing left to resume this signal is
        // refused as unknown, and the listeners hear of no turn (§8.2: once per
        // resumed turn).
        match self.inner.graph.paused_record(&invocation_id).await {
            Ok(Some(r)) if r.status == PausedStatus::Suspended => {}
            Ok(_) => {
                let e = correlation(format!(
                    "the paused turn `{invocation_id}` was already resumed"
                ));
                return self.errored(Some(DispatchPath::SignalResume), &e);
            }
            Err(err) => {
                let e = HarnessError::new(Category::SUSPENSION_RECORD_INVALID, err.to_string());
                return self.errored(Some(DispatchPath::SignalResume), &e);
            }
        }
        let options = self
            .base_options()
            .resume_invocation(&invocation_id)
            .signal_payload(payload);
        let result = self
            .inner
            .graph
            .run(self.inner.graph.defaults().clone(), options)
            .await;
        if result.is_ok() {
            let _ = self.inner.coordinator.unsubscribe(&invocation_id).await;
        }
        let turn = Turn {
            session_id: &session_id,
            path: DispatchPath::SignalResume,
            tail_from,
        };
        let outcome = self.outcome(&turn, result).await;
        self.inner.listeners.fire(&session_id, &outcome);
        outcome
    }

    fn base_options(&self) -> InvokeOptions {
        match &self.inner.options {
            Some(hook) => hook(InvokeOptions::default()),
            None => InvokeOptions::default(),
        }
    }

    fn options(&self, loaded: LoadedSession, turn: InvokeOptions) -> InvokeOptions {
        let mut options = self.base_options().loaded_session(loaded);
        options.observers.extend(turn.observers);
        options.metadata.extend(turn.metadata);
        if turn.correlation_id.is_some() {
            options.correlation_id = turn.correlation_id;
        }
        options
    }

    fn refused(&self, category: Category, diagnostic: &str) -> ChatTurnOutcome {
        self.errored(None, &HarnessError::new(category, diagnostic))
    }

    fn errored(&self, path: Option<DispatchPath>, e: &HarnessError) -> ChatTurnOutcome {
        let bucket = chat_bucket(&e.category);
        ChatTurnOutcome::Errored(ChatErrored {
            error_bucket: bucket,
            error_category: e.category.clone(),
            diagnostic: e.message.clone(),
            reply: reply::reply(&self.inner.reply_text, bucket, &e.message),
            invocation_id: e.invocation_id.clone(),
            dispatch_path: path,
        })
    }

    async fn outcome(
        &self,
        turn: &Turn<'_>,
        result: Result<Outcome<S>, GraphError<S>>,
    ) -> ChatTurnOutcome {
        let path = Some(turn.path);
        match result {
            Ok(Outcome::Completed(done)) => {
                let state = done.state.to_json();
                match tail(&state, turn.tail_from) {
                    Ok(replies) => ChatTurnOutcome::Completed(ChatCompleted {
                        replies,
                        final_state: state,
                        invocation_id: done.invocation_id,
                        dispatch_path: turn.path,
                    }),
                    Err(e) => self.errored(path, &e),
                }
            }
            Ok(Outcome::Suspended(paused)) => {
                let pending = match tail(&paused.state.to_json(), turn.tail_from) {
                    Ok(p) => p,
                    Err(e) => return self.errored(path, &e),
                };
                let coordinator = &*self.inner.coordinator;
                let registered =
                    register_suspension(coordinator, &paused.invocation_id, &paused.descriptor)
                        .await;
                if let Err(e) = registered {
                    return self.errored(path, &e);
                }
                ChatTurnOutcome::Suspended(ChatSuspended {
                    signal_descriptor: paused.descriptor,
                    pending_messages: pending,
                    invocation_id: paused.invocation_id,
                    dispatch_path: turn.path,
                })
            }
            Ok(_) => {
                let e = HarnessError::new(
                    Category::NODE_EXCEPTION,
                    format!(
                        "session `{}`: an outcome this harness does not know",
                        turn.session_id
                    ),
                );
                self.errored(path, &e)
            }
            Err(e) => self.errored(path, &HarnessError::of_graph(&e)),
        }
    }
}

/// The length of a state's `messages` list (0 when absent).
fn history_len(state: &Value) -> usize {
    state
        .get(HISTORY_FIELD)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The messages at `from` and after (§7: by index, never by content).
fn tail(state: &Value, from: usize) -> Result<Vec<Message>, HarnessError> {
    let Some(list) = state.get(HISTORY_FIELD).and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .enumerate()
        .skip(from)
        .map(|(i, m)| {
            Message::from_json(m).map_err(|e| {
                HarnessError::new(
                    Category::NODE_EXCEPTION,
                    format!("the graph appended a value that is not a chat message at messages[{i}]: {}", e.message()),
                )
            })
        })
        .collect()
}

/// The loaded state with `message` appended through the field's reducer (§6).
fn append<S: State>(state: &S, message: &Message) -> Result<S, HarnessError> {
    let fail = |e: &dyn std::fmt::Display| {
        HarnessError::new(
            Category::STATE_VALIDATION_ERROR,
            format!("appending the message: {e}"),
        )
    };
    let update = state
        .update_from_json(vec![(HISTORY_FIELD.to_owned(), json!([message.to_json()]))])
        .map_err(|e| fail(&e))?;
    state.merge(update).map_err(|e| fail(&e))
}
