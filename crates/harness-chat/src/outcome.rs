//! Spec: harness-chat §5.2 — what `send()` (and a resume listener) receives.

use openarmature_graph::suspension::SignalDescriptor;
use openarmature_harness::{DispatchPath, ErrorBucket};
use openarmature_llm::Message;
use serde_json::{json, Value};

/// How a chat turn ended: a reply, an error with a user-facing reply, or a pause
/// awaiting a signal (§5.2).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChatTurnOutcome {
    /// The graph reached `END`.
    Completed(ChatCompleted),
    /// The turn failed at the harness boundary.
    Errored(ChatErrored),
    /// A node suspended; the turn returned at once.
    Suspended(ChatSuspended),
}

/// A completed turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatCompleted {
    /// The messages the turn added to history, in graph-execution order (never
    /// earlier history; empty when the turn added none, §7).
    pub replies: Vec<Message>,
    /// The session's state after the turn.
    pub final_state: Value,
    /// The invocation that ran.
    pub invocation_id: String,
    /// §3.1 (new session), §3.2 (continuing) or §3.3 (a resumed turn).
    pub dispatch_path: DispatchPath,
}

/// An errored turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatErrored {
    /// How the caller should react (§10).
    pub error_bucket: ErrorBucket,
    /// The concrete category (`provider_unavailable`, `chat_message_shape_invalid`, …).
    pub error_category: String,
    /// The underlying error's message.
    pub diagnostic: String,
    /// The system-role reply for the user.
    pub reply: Message,
    /// The invocation, when one ran.
    pub invocation_id: Option<String>,
    /// The dispatch path, when classification got that far.
    pub dispatch_path: Option<DispatchPath>,
}

/// A suspended turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatSuspended {
    /// The awaited signal.
    pub signal_descriptor: SignalDescriptor,
    /// The messages the graph appended before suspending (§8.1), in order.
    pub pending_messages: Vec<Message>,
    /// The paused invocation (what a resume names).
    pub invocation_id: String,
    /// The dispatch path of the suspending turn.
    pub dispatch_path: DispatchPath,
}

impl ChatTurnOutcome {
    /// `completed` / `errored` / `suspended`.
    pub fn kind(&self) -> &'static str {
        match self {
            ChatTurnOutcome::Completed(_) => "completed",
            ChatTurnOutcome::Errored(_) => "errored",
            ChatTurnOutcome::Suspended(_) => "suspended",
        }
    }

    /// The dispatch path, when the turn was classified.
    pub fn dispatch_path(&self) -> Option<DispatchPath> {
        match self {
            ChatTurnOutcome::Completed(c) => Some(c.dispatch_path),
            ChatTurnOutcome::Errored(e) => e.dispatch_path,
            ChatTurnOutcome::Suspended(s) => Some(s.dispatch_path),
        }
    }

    /// The invocation that ran the turn (none when an error came before any ran).
    pub fn invocation_id(&self) -> Option<&str> {
        match self {
            ChatTurnOutcome::Completed(c) => Some(&c.invocation_id),
            ChatTurnOutcome::Errored(e) => e.invocation_id.as_deref(),
            ChatTurnOutcome::Suspended(s) => Some(&s.invocation_id),
        }
    }

    /// The messages a chat UI shows for this turn: the replies, the pending messages,
    /// or the error reply.
    pub fn messages(&self) -> Vec<Message> {
        match self {
            ChatTurnOutcome::Completed(c) => c.replies.clone(),
            ChatTurnOutcome::Errored(e) => vec![e.reply.clone()],
            ChatTurnOutcome::Suspended(s) => s.pending_messages.clone(),
        }
    }

    /// The outcome as JSON, as a transport sends it: `outcome` (the kind), and the
    /// variant's fields (`replies` / `final_state`; `error_bucket`, `error_category`,
    /// `diagnostic`, `reply`; `signal_id`, `signal_descriptor`, `pending_messages`),
    /// `invocation_id` and `dispatch_path`.
    pub fn to_json(&self) -> Value {
        let list = |m: &[Message]| Value::Array(m.iter().map(Message::to_json).collect());
        let path = self.dispatch_path().map(DispatchPath::as_str);
        match self {
            ChatTurnOutcome::Completed(c) => json!({
                "outcome": "completed",
                "replies": list(&c.replies),
                "final_state": c.final_state,
                "invocation_id": c.invocation_id,
                "dispatch_path": path,
            }),
            ChatTurnOutcome::Errored(e) => json!({
                "outcome": "errored",
                "error_bucket": e.error_bucket.as_str(),
                "error_category": e.error_category,
                "diagnostic": e.diagnostic,
                "reply": e.reply.to_json(),
                "invocation_id": e.invocation_id,
                "dispatch_path": path,
            }),
            ChatTurnOutcome::Suspended(p) => json!({
                "outcome": "suspended",
                "signal_id": p.signal_descriptor.signal_id,
                "signal_descriptor": p.signal_descriptor,
                "pending_messages": list(&p.pending_messages),
                "invocation_id": p.invocation_id,
                "dispatch_path": path,
            }),
        }
    }
}
