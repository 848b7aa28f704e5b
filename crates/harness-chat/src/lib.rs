//! # openarmature-harness-chat
//!
//! Spec: harness-chat (OpenArmature specification, pinned release v0.109.0).
//!
//! The chat-shaped harness: [`ChatHarness::send`]`(session_id, message)` appends a
//! user [`Message`](openarmature_llm::Message) to the session's `messages` history,
//! runs the graph once and returns a [`ChatTurnOutcome`] — the new messages (every
//! role, in order), an error with a system-role reply for the user, or a suspension
//! with the messages the graph wrote before pausing. Sends on one session run one at
//! a time; sends on different sessions run in parallel. A signal
//! ([`ChatHarness::signal`]) resumes a paused turn and hands its outcome to the
//! session's listeners ([`ChatHarness::subscribe`]).
//!
//! Chat messages are the llm-provider's [`Message`](openarmature_llm::Message): what
//! the user sent and what the graph wrote go to `complete()` unchanged.
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
//! use openarmature_graph::{state, GraphBuilder, NodeCtx, END};
//! use openarmature_harness_chat::{ChatHarness, ChatTurnOutcome};
//! use openarmature_llm::Message;
//!
//! state! {
//!     /// A conversation.
//!     #[derive(Default)]
//!     pub struct Chat => ChatUpdate {
//!         /// The history (harness-chat §4).
//!         pub messages: Vec<Message> => append,
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let graph = GraphBuilder::new(Chat::default())
//!     .add_node("reply", |s: Arc<Chat>, _c: NodeCtx| async move {
//!         let n = s.messages.len();
//!         Ok(ChatUpdate::default().messages(vec![Message::assistant(format!("{n} so far"))]))
//!     })
//!     .add_edge("reply", END)
//!     .entry("reply")
//!     .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
//!     .compile()
//!     .unwrap();
//! let chat = ChatHarness::new(graph).unwrap();
//! chat.send("c-1", Message::user("hello")).await;
//! let ChatTurnOutcome::Completed(turn) = chat.send("c-1", Message::user("again")).await else {
//!     panic!()
//! };
//! assert_eq!(turn.replies, vec![Message::assistant("3 so far")]);
//! # }
//! ```

mod harness;
mod listeners;
mod locks;
mod outcome;
mod reply;

pub use harness::{ChatHarness, NotAChatGraph};
pub use listeners::Subscription;
pub use outcome::{ChatCompleted, ChatErrored, ChatSuspended, ChatTurnOutcome};
pub use reply::{chat_bucket, default_reply_text, ReplyText};

/// The state field holding the conversation (harness-chat §4).
pub const HISTORY_FIELD: &str = "messages";

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "harness-chat";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
