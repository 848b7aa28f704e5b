//! The state the agent loop runs over: any graph state that carries the message
//! history and an approval slot ([`AgentState`]), and a ready-made one
//! ([`Conversation`]).

use openarmature_graph::{state, State};
use openarmature_llm::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A reviewer's decision on one tool call, delivered as the signal payload of a
/// resume (see [`Approval::payload_for`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The tool call decided on ([`openarmature_llm::ToolCall::id`]).
    pub tool_call_id: String,
    /// `true` to run the tool, `false` to deny it.
    pub approved: bool,
    /// The reviewer's reason (reported to the model on a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Approval {
    /// Approves `tool_call_id`.
    pub fn approve(tool_call_id: impl Into<String>) -> Self {
        Approval {
            tool_call_id: tool_call_id.into(),
            approved: true,
            reason: None,
        }
    }

    /// Denies `tool_call_id`.
    pub fn deny(tool_call_id: impl Into<String>, reason: Option<String>) -> Self {
        Approval {
            tool_call_id: tool_call_id.into(),
            approved: false,
            reason,
        }
    }

    /// The signal payload that delivers this decision to a graph over `S`:
    /// `{S::APPROVAL_FIELD: <this decision>}`, for
    /// [`openarmature_graph::CompiledGraph::resume`].
    pub fn payload_for<S: AgentState>(&self) -> Value {
        let mut payload = serde_json::Map::new();
        // An `Approval` is strings and a bool: always representable.
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        payload.insert(S::APPROVAL_FIELD.to_owned(), value);
        Value::Object(payload)
    }
}

/// What an agent node writes: messages to append, and whether to clear the
/// approval slot (the decision has been used).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentUpdate {
    /// Messages to append to the history, in order.
    pub messages: Vec<Message>,
    /// Set the approval slot back to `None`.
    pub clear_approval: bool,
}

/// A graph state the agent loop can run over.
///
/// The history field must append (`=> append` in [`openarmature_graph::state!`]): the
/// agent's nodes return only the new messages. The approval field holds an
/// `Option<Approval>` with the default reducer (a resume overwrites it).
pub trait AgentState: State {
    /// The name of the approval field (the key of a resume's signal payload).
    const APPROVAL_FIELD: &'static str;

    /// The message history, oldest first.
    fn messages(&self) -> &[Message];

    /// The pending approval decision, if a resume delivered one.
    fn approval(&self) -> Option<&Approval>;

    /// This state's partial update for `update`.
    fn agent_update(update: AgentUpdate) -> Self::Update;
}

state! {
    /// A ready-made [`AgentState`]: the conversation and the approval slot. Use it for
    /// a standalone agent graph ([`crate::Agent::graph`]) or as a subgraph's state.
    #[derive(Default)]
    pub struct Conversation => ConversationUpdate {
        /// The message history (appended to).
        pub messages: Vec<Message> => append,
        /// The approval decision a resume delivered (field `approval`).
        pub approval: Option<Approval>,
    }
}

impl Conversation {
    /// A conversation starting with `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        Conversation {
            messages,
            approval: None,
        }
    }

    /// The text of the last assistant message, if the history ends with one.
    pub fn final_answer(&self) -> Option<String> {
        match self.messages.last() {
            Some(Message::Assistant(message)) => message.text(),
            _ => None,
        }
    }
}

impl AgentState for Conversation {
    const APPROVAL_FIELD: &'static str = "approval";

    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn approval(&self) -> Option<&Approval> {
        self.approval.as_ref()
    }

    fn agent_update(update: AgentUpdate) -> ConversationUpdate {
        let mut out = ConversationUpdate::default().messages(update.messages);
        if update.clear_approval {
            out = out.approval(None);
        }
        out
    }
}
