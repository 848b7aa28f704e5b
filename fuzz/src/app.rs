//! The application the HTTP target serves: the chat routes over a sessioned chat
//! graph (a reply node, and a gate that suspends until an approval callback) and the
//! workflow routes under `/wf` over a one-number graph.

use std::sync::Arc;

use axum::Router;
use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{state, GraphBuilder, NodeCtx, Target, END};
use openarmature_harness::Harness;
use openarmature_harness_chat::ChatHarness;
use openarmature_harness_http::{chat_router, workflow_router, Limits, Shutdown};
use openarmature_llm::Message;
use serde_json::Value;

state! {
    /// A conversation.
    #[derive(Default)]
    pub struct Chat => ChatUpdate {
        /// History.
        pub messages: Vec<Message> => append,
        /// Set by the approval callback.
        pub approved: bool,
    }
}

state! {
    /// A one-number workflow.
    #[derive(Default)]
    pub struct Calc => CalcUpdate {
        /// The number.
        pub n: i64,
    }
}

fn last_text(messages: &[Message]) -> Option<String> {
    messages
        .last()
        .and_then(|m| m.to_json()["content"].as_str().map(str::to_owned))
}

fn chat() -> ChatHarness<Chat> {
    let graph = GraphBuilder::new(Chat::default())
        .add_node("reply", |s: Arc<Chat>, _ctx: NodeCtx| async move {
            if last_text(&s.messages).is_some_and(|t| t.contains("approve")) {
                return Ok(ChatUpdate::default().messages(vec![Message::assistant("Approve?")]));
            }
            let users = s.messages.iter().filter(|m| m.role() == "user").count();
            Ok(ChatUpdate::default().messages(vec![Message::assistant(format!("seen {users}"))]))
        })
        .add_node("gate", |_s: Arc<Chat>, _c: NodeCtx| async move {
            suspend::<ChatUpdate>(SignalDescriptor::new("approval"))
        })
        .add_node("act", |s: Arc<Chat>, _c: NodeCtx| async move {
            let text = if s.approved { "Done." } else { "Denied." };
            Ok(ChatUpdate::default().messages(vec![Message::assistant(text)]))
        })
        .add_conditional_edge(
            "reply",
            |s: &Chat| {
                Ok(if last_text(&s.messages).as_deref() == Some("Approve?") {
                    Target::Node("gate".into())
                } else {
                    END
                })
            },
            None,
        )
        .add_edge("gate", "act")
        .add_edge("act", END)
        .entry("reply")
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()
        .expect("the chat graph compiles");
    ChatHarness::new(graph).expect("a chat graph")
}

fn workflow() -> Harness<Calc> {
    let graph = GraphBuilder::new(Calc::default())
        .add_node("double", |s: Arc<Calc>, _c: NodeCtx| async move {
            Ok(CalcUpdate::default().n(s.n.saturating_mul(2)))
        })
        .add_edge("double", END)
        .entry("double")
        .compile()
        .expect("the workflow graph compiles");
    Harness::stateless(graph, |p: &Value| {
        Ok(Calc {
            n: p["n"].as_i64().ok_or("`n` must be an integer")?,
        })
    })
}

/// A fresh application (its own in-memory session store): the chat routes at the
/// root, the workflow routes under `/wf`.
pub fn router(limits: &Limits) -> Router {
    let shutdown = Shutdown::new();
    chat_router(chat(), limits.clone(), shutdown.clone())
        .nest("/wf", workflow_router(workflow(), limits.clone(), shutdown))
}
