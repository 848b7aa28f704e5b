//! # openarmature-harness-http
//!
//! Serves compiled graphs over HTTP on [axum](https://docs.rs/axum): routers an
//! application mounts into its own `Router`, and [`serve`] with graceful shutdown.
//!
//! - [`chat_router`] over a [`ChatHarness`](openarmature_harness_chat::ChatHarness):
//!   `POST /chat/{session_id}/messages` (one turn, JSON), `…/messages/stream` (the same
//!   turn as Server-Sent Events of tokens and tool calls, then the outcome),
//!   `GET /chat/{session_id}/events` (resumed turns, the §8.2 listener) and
//!   `POST /callback/{invocation_id}` (the REST-callback signal coordinator: resumes a
//!   paused turn).
//! - [`workflow_router`] over a stateless [`Harness`](openarmature_harness::Harness):
//!   `POST /invoke` and `POST /callback/{invocation_id}`.
//!
//! Bad input never reaches the graph: an oversized body is 413
//! `request_body_too_large`, a body that is not JSON 400 `request_json_malformed`, a
//! message that is not a chat message 422 `chat_message_shape_invalid`, an unknown
//! paused invocation 404 `harness_signal_correlation_failed`; every error body is
//! `{"error": {"category", "message"}}` or the turn's outcome with its category.
//!
//! ```no_run
//! # use openarmature_harness_chat::ChatHarness;
//! # use openarmature_graph::DynState;
//! # async fn run(chat: ChatHarness<DynState>) -> std::io::Result<()> {
//! use openarmature_harness_http::{chat_router, serve, Limits, Shutdown};
//! let shutdown = Shutdown::new();
//! let app = axum::Router::new().merge(chat_router(chat, Limits::default(), shutdown.clone()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, app, shutdown).await
//! # }
//! ```

mod body;
mod chat;
mod config;
mod error;
mod serve;
mod workflow;

pub use chat::{chat_router, outcome_response};
pub use config::{Limits, Shutdown, TurnGuard};
pub use error::{
    status_of, ApiError, REQUEST_BODY_TOO_LARGE, REQUEST_JSON_MALFORMED, REQUEST_TIMEOUT,
    SERVER_SHUTTING_DOWN, TURN_PANICKED, TURN_TIMEOUT,
};
pub use serve::{serve, serve_io, serve_with};
pub use workflow::{outbound_response, workflow_router};

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
