//! # openarmature-agent
//!
//! A tool-calling agent built on the graph engine: tools declared from Rust
//! functions, the model → tool calls → tool results → model loop as two graph nodes
//! with conditional edges and a turn limit, every tool call observed through the
//! llm crate's tool-call instrumentation, and human approval by suspension.
//!
//! - [`Tool::from_fn`]: a tool from an async function whose argument type derives
//!   `schemars::JsonSchema` and `serde::Deserialize`; the schema becomes the
//!   provider-facing [`openarmature_llm::Tool`] definition. Arguments that are not
//!   valid JSON, or do not match the schema, become a tool-result message telling the
//!   model what was wrong ([`ToolError::InvalidArguments`], category
//!   `agent_tool_arguments_invalid`); so do unknown tools and tool failures.
//! - [`Agent::builder`] → [`AgentBuilder::build`] → [`Agent::add_to`] (the loop in
//!   your own graph, over any [`AgentState`]) or [`Agent::graph`] (a standalone graph
//!   over [`Conversation`]).
//! - Each call runs in a tool-call scope (`ToolScopeExt::start_tool`): observers see
//!   one `ToolCallEvent` or `ToolCallFailedEvent` per completed call.
//! - Approval: [`Tool::needs_approval`], or [`ToolCtx::require_approval`] from inside
//!   a tool, suspends the invocation (signal [`approval_signal_id`], metadata an
//!   [`ApprovalRequest`]); resume with [`Approval::payload_for`]. The tools node runs
//!   one call per step, so calls that already ran are never run again on resume.
//! - The turn limit ([`AgentBuilder::max_turns`]) fails the run with
//!   [`AgentError::TurnLimitExceeded`] (`agent_turn_limit_exceeded`).
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use futures::future::BoxFuture;
//! use openarmature_agent::{Agent, Conversation, Tool, ToolError};
//! use openarmature_llm::{
//!     AssistantMessage, FinishReason, LlmError, Message, Provider, Response, ToolCall, Usage,
//!     WireRequest,
//! };
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! /// A stand-in model: asks for `add` once, then answers with the tool's result.
//! struct Scripted;
//! impl Provider for Scripted {
//!     fn model(&self) -> &str { "scripted" }
//!     fn provider_name(&self) -> &str { "test" }
//!     fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> { Box::pin(async { Ok(()) }) }
//!     fn send<'a>(&'a self, req: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
//!         let message = match req.messages.last() {
//!             Some(Message::Tool(result)) => AssistantMessage {
//!                 content: Some(format!("The sum is {}", result.content).into()),
//!                 tool_calls: vec![],
//!             },
//!             _ => {
//!                 let args = serde_json::json!({"a": 2, "b": 3});
//!                 let call = ToolCall::new("c1", "add", args.as_object().unwrap().clone());
//!                 AssistantMessage { content: None, tool_calls: vec![call] }
//!             }
//!         };
//!         let response = Response::new(message, FinishReason::Stop, Usage::default(),
//!             serde_json::Value::Null, None);
//!         Box::pin(async move { Ok(response) })
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let add = Tool::from_fn("add", "Adds two integers", |args: Add, _ctx| async move {
//!     Ok::<_, ToolError>(args.a + args.b)
//! });
//! let agent = Agent::builder(Arc::new(Scripted)).tool(add).max_turns(4).build().unwrap();
//! let graph = agent.graph().unwrap();
//! let out = graph.invoke(Conversation::new(vec![Message::user("2 + 3?")])).await.unwrap();
//! assert_eq!(out.final_answer().as_deref(), Some("The sum is 5"));
//! # });
//! ```

//!
//! # Approval
//! ```no_run
//! use openarmature_agent::{Agent, Approval, ApprovalRequest, Conversation};
//! use openarmature_graph::suspension::Outcome;
//! use openarmature_graph::InvokeOptions;
//! use openarmature_llm::Message;
//!
//! # async fn demo(agent: Agent) -> Result<(), Box<dyn std::error::Error>> {
//! let graph = agent.graph()?;
//! let start = Conversation::new(vec![Message::user("delete /tmp/report")]);
//! if let Outcome::Suspended(paused) = graph.run(start, InvokeOptions::default()).await? {
//!     // Show the request to a person (a chat UI's approve / deny buttons).
//!     let request = ApprovalRequest::from_descriptor(&paused.descriptor).ok_or("not ours")?;
//!     println!("{} wants to run {} with {}", request.tool_call_id, request.tool, request.arguments);
//!     let decision = Approval::approve(&request.tool_call_id);
//!     let resumed = graph
//!         .resume(&paused.invocation_id, decision.payload_for::<Conversation>())
//!         .await?;
//!     if let Outcome::Completed(done) = resumed {
//!         println!("{:?}", done.state.final_answer());
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod agent;
mod ctx;
mod error;
mod nodes;
mod state;
mod tool;

pub use agent::{Agent, AgentBuilder, DEFAULT_MAX_TURNS};
pub use ctx::{approval_signal_id, ApprovalRequest, ToolCtx};
pub use error::{
    AgentError, ToolError, AGENT_CONFIGURATION_INVALID, TOOL_ARGUMENTS_INVALID, TOOL_DENIED,
    TOOL_FAILED, TOOL_UNKNOWN, TURN_LIMIT_EXCEEDED,
};
pub use state::{AgentState, AgentUpdate, Approval, Conversation, ConversationUpdate};
pub use tool::Tool;

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
