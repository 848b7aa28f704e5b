//! The loop inside a user's own graph, over the user's own state.

use std::sync::Arc;

use openarmature_agent::{Agent, AgentState, AgentUpdate, Approval};
use openarmature_graph::{state, GraphBuilder, NodeCtx, NodeError, END};
use openarmature_llm::Message;
use serde_json::json;

use crate::support::*;

state! {
    /// A support ticket: its own fields plus what the agent needs.
    #[derive(Default)]
    pub struct Ticket => TicketUpdate {
        pub subject: String,
        pub history: Vec<Message> => append,
        pub decision: Option<Approval>,
        pub summary: String,
    }
}

impl AgentState for Ticket {
    const APPROVAL_FIELD: &'static str = "decision";

    fn messages(&self) -> &[Message] {
        &self.history
    }

    fn approval(&self) -> Option<&Approval> {
        self.decision.as_ref()
    }

    fn agent_update(update: AgentUpdate) -> TicketUpdate {
        let mut out = TicketUpdate::default().history(update.messages);
        if update.clear_approval {
            out = out.decision(None);
        }
        out
    }
}

#[tokio::test]
async fn the_agent_runs_between_the_users_own_nodes() {
    let model = scripted(vec![
        calls(&[("c1", "weather", json!({"city": "Rome"}))]),
        answer("It is sunny in Rome."),
    ]);
    let agent = Agent::builder(model)
        .tool(weather_tool(&counter()))
        .node_names("assistant", "run_tools")
        .build()
        .unwrap();
    let builder = GraphBuilder::new(Ticket::default())
        .add_node("open", |s: Arc<Ticket>, _c: NodeCtx| async move {
            let ask = Message::user(format!("Question: {}", s.subject));
            Ok::<_, NodeError>(TicketUpdate::default().history(vec![ask]))
        })
        .add_node("close", |s: Arc<Ticket>, _c: NodeCtx| async move {
            let last = s.history.last().and_then(|m| match m {
                Message::Assistant(a) => a.text(),
                _ => None,
            });
            Ok::<_, NodeError>(TicketUpdate::default().summary(last.unwrap_or_default()))
        })
        .add_edge("open", agent.model_node())
        .add_edge("close", END)
        .entry("open");
    let graph = agent.add_to(builder, "close").compile().unwrap();
    let start = Ticket {
        subject: "weather in Rome".into(),
        ..Ticket::default()
    };
    let out = graph.invoke(start).await.unwrap();
    assert_eq!(out.summary, "It is sunny in Rome.");
    assert_eq!(out.history.len(), 4);
    assert_eq!(
        Approval::approve("x").payload_for::<Ticket>(),
        json!({"decision": {"tool_call_id": "x", "approved": true}})
    );
}
