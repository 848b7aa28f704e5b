//! The chat server's parts, shared by `main.rs` and the end-to-end browser test: the
//! agent over a provider, a sessioned graph, the chat harness, and the router (the
//! HTTP harness's chat routes plus the page at `/`).

use std::sync::Arc;
use std::time::Duration;

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use openarmature_agent::Agent;
use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
use openarmature_harness_chat::ChatHarness;
use openarmature_harness_http::{chat_router, Limits, Shutdown};
use openarmature_llm::{LlmRetryConfig, OpenAiProvider, Provider};
use openarmature_pipeline::retry::{Constant, RetryConfig};

#[path = "model.rs"]
pub mod model;
#[path = "tools.rs"]
pub mod tools;

/// The page (one static file, no build step).
pub const PAGE: &str = include_str!("page.html");

/// Where the model comes from: with `OPENAI_BASE_URL` set, any OpenAI-compatible server
/// configured by `OpenAiProvider::from_env` (`OPENAI_MODEL` required, `OPENAI_API_KEY`
/// when the server needs one); else the embedded fault-injecting model.
pub async fn provider() -> Result<Arc<dyn Provider>, Box<dyn std::error::Error>> {
    if std::env::var("OPENAI_BASE_URL").is_ok_and(|v| !v.is_empty()) {
        return Ok(Arc::new(OpenAiProvider::from_env()?.build()?));
    }
    embedded_provider().await
}

/// The embedded fault-injecting model, started on 127.0.0.1.
pub async fn embedded_provider() -> Result<Arc<dyn Provider>, Box<dyn std::error::Error>> {
    let base_url = model::start().await?;
    Ok(Arc::new(
        OpenAiProvider::builder(base_url.as_str(), model::MODEL).build()?,
    ))
}

/// The router: the chat routes and the page.
///
/// # Errors
/// When the agent or its graph is misconfigured.
pub fn router(
    provider: Arc<dyn Provider>,
    outbox: tools::Outbox,
    shutdown: Shutdown,
) -> Result<Router, Box<dyn std::error::Error>> {
    let retry = LlmRetryConfig::from(
        RetryConfig::default()
            .max_attempts(3)
            .backoff(Constant(Duration::from_millis(100))),
    );
    let mut agent = Agent::builder(provider)
        .system("You are a helpful assistant with tools. Ask before sending email.")
        .retry(retry)
        .max_turns(6);
    for tool in tools::all(outbox) {
        agent = agent.tool(tool);
    }
    let graph = agent
        .build()?
        .graph_builder()
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()?;
    let chat = ChatHarness::new(graph)?;
    let limits = Limits::default().turn_timeout(Duration::from_secs(60));
    Ok(chat_router(chat, limits, shutdown).route("/", get(|| async { Html(PAGE) })))
}
