//! # openarmature
//!
//! OpenArmature for Rust: a workflow engine for LLM pipelines and tool-calling
//! agents, implementing the OpenArmature specification (pinned release v0.109.0).
//!
//! This facade re-exports the workspace crates, one cargo feature per capability
//! crate (`core` and `graph` are always in); depend on the individual crates, or
//! pick features, to keep builds lean. The defaults are `pipeline` and `llm`; `full`
//! turns everything on.
//!
//! | module | crate | capability | feature |
//! |---|---|---|---|
//! | `graph` | `openarmature-graph` | graph-engine | (always) |
//! | `pipeline` | `openarmature-pipeline` | pipeline-utilities | `pipeline` (default); `sqlite` adds the SQLite checkpointer / session store |
//! | `llm` | `openarmature-llm` | llm-provider | `llm` (default) |
//! | `observability` | `openarmature-observability` | observability | `observability` (OTLP/HTTP, Langfuse); `otlp-grpc` adds gRPC |
//! | `prompt` | `openarmature-prompt` | prompt-management | `prompt` |
//! | `retrieval` | `openarmature-retrieval` | retrieval-provider | `retrieval` |
//! | `agent` | `openarmature-agent` | (tool-calling agent) | `agent` |
//! | `harness`, `harness_chat`, `harness_http` | `openarmature-harness*` | harness, harness-chat | `harness`, `harness-chat`, `harness-http` |
//!
//! Feature `tracing-spans` makes a run visible through `tracing`: spans for the
//! invocation, each node attempt, each LLM wire attempt and each tool call, and a
//! WARN event for each degraded node (see `openarmature_graph`'s and
//! `openarmature_llm`'s crate docs). Use it or the OpenTelemetry observer for the
//! same spans, not both.
//!
//! Start with [`graph`]: its crate docs show a typed state, nodes, edges and a run.
//! The runnable tour is `cargo run --example resilient_extraction`: a fan-out of
//! LLM calls against an embedded, fault-injecting OpenAI-compatible server, with a
//! report built from the run's events (`-- --report run.html` also writes it as an
//! HTML waterfall, `observability::report::RunReport`, feature `observability`; on a
//! terminal the fan-out's progress is drawn live,
//! `observability::progress::ProgressObserver`, feature `progress`).
//!
//! # Resilience in two lanes, and the three-piece pattern
//!
//! - **Call level** ([`llm::LlmRetryConfig`], passed to [`llm::CompletionRequest::retry`]):
//!   one `complete()` call re-sends a failed request — transient errors after a
//!   backoff (wrap it in [`llm::HonorRetryAfter`] to honour a rate limit's
//!   `Retry-After`), a reply that fails the JSON Schema by re-asking (the bad reply
//!   and a correction are appended). Calls that already succeeded are not repeated.
//! - **Node level** ([`pipeline::RetryMiddleware`]): re-runs the whole node, for
//!   failures only a fresh run fixes. Both lanes take the same
//!   [`pipeline::RetryConfig`] record; stacked, their budgets multiply.
//!
//! Around a node that calls a flaky provider, compose, outermost first:
//! [`pipeline::FailureIsolationMiddleware`] (degrades instead of failing the run) →
//! [`pipeline::RetryMiddleware`] (sees raw transients first) → the node body. The
//! order is load-bearing: isolation inside retry would swallow the errors retry
//! should see.
//!
//! # Examples
//! ```no_run
//! use std::sync::Arc;
//! use openarmature::graph::{state, GraphBuilder, NodeCtx, END};
//! use openarmature::llm::{CompletionRequest, LlmError, Message, OpenAiProvider, Provider};
//! use openarmature::pipeline::{retry::RetryConfig, FailureIsolationMiddleware, RetryMiddleware};
//!
//! state! {
//!     /// A question and its answer.
//!     #[derive(Default)]
//!     pub struct Qa => QaUpdate {
//!         /// The question.
//!         pub question: String,
//!         /// The model's answer, or `"degraded"`.
//!         pub answer: String,
//!     }
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let llm = Arc::new(OpenAiProvider::builder("http://localhost:8000/v1", "my-model").build()?);
//! let ask = move |s: Arc<Qa>, ctx: NodeCtx| {
//!     let llm = Arc::clone(&llm);
//!     async move {
//!         let request = CompletionRequest::new(vec![Message::user(s.question.clone())])
//!             .retry(RetryConfig::default().max_attempts(3)) // call level
//!             .in_node(&ctx); // typed LLM events on the node's observer queue
//!         let response = llm.complete(&request).await?;
//!         Ok(QaUpdate::default().answer(response.content().unwrap_or_default().to_owned()))
//!     }
//! };
//! let graph = GraphBuilder::new(Qa::default())
//!     .add_node("ask", ask)
//!     .node_middleware("ask", Arc::new(FailureIsolationMiddleware::<Qa>::new(
//!         "ask_degraded",
//!         |_| QaUpdate::default().answer("degraded".into()),
//!     )))
//!     .node_middleware("ask", Arc::new(RetryMiddleware::new(RetryConfig::default().max_attempts(2))))
//!     .add_edge("ask", END)
//!     .entry("ask")
//!     .compile()?;
//! let out = graph.invoke(Qa { question: "Why is the sky blue?".into(), ..Qa::default() }).await?;
//! println!("{}", out.answer);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "agent")]
pub use openarmature_agent as agent;
pub use openarmature_core as core;
pub use openarmature_graph as graph;
#[cfg(feature = "harness")]
pub use openarmature_harness as harness;
#[cfg(feature = "harness-chat")]
pub use openarmature_harness_chat as harness_chat;
#[cfg(feature = "harness-http")]
pub use openarmature_harness_http as harness_http;
#[cfg(feature = "llm")]
pub use openarmature_llm as llm;
#[cfg(feature = "observability")]
pub use openarmature_observability as observability;
#[cfg(feature = "pipeline")]
pub use openarmature_pipeline as pipeline;
#[cfg(feature = "prompt")]
pub use openarmature_prompt as prompt;
#[cfg(feature = "retrieval")]
pub use openarmature_retrieval as retrieval;

/// The OpenArmature specification release the workspace targets.
pub const SPEC_VERSION: &str = openarmature_graph::SPEC_VERSION;

/// The README's Rust code blocks, compiled as doc tests (`cargo test --doc`), so the
/// sample there cannot rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
