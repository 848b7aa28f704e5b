//! # openarmature-llm
//!
//! Spec: llm-provider §1–§9 (OpenArmature specification, pinned release v0.109.0).
//!
//! A narrow, stateless LLM provider abstraction and an OpenAI-compatible
//! implementation over real HTTP:
//!
//! - [`Message`], content blocks, [`ToolCall`] (§3), [`Tool`] and [`ToolChoice`] (§4/§5),
//!   [`RuntimeConfig`] with extras and null-skip (§6), [`Response`] (§6);
//! - [`LlmError`]: the nine §7 categories with [`LlmError::category`] and
//!   [`LlmError::is_transient`]; it converts into the engine's
//!   [`openarmature_graph::CategorizedError`] so retry middleware and failure isolation
//!   classify it;
//! - [`Provider`]: `ready()`, one-attempt `send()`, and `complete()` with the §7.1
//!   call-level retry loop ([`LlmRetryConfig`]: the shared pipeline-utilities
//!   [`openarmature_pipeline::RetryConfig`] plus `per_attempt_override` and `reask`);
//! - [`OpenAiProvider`] (§8.1): reqwest + rustls, byte-stable canonical request
//!   bodies, structured output (native `response_format` or the prompt fallback,
//!   validated with a JSON Schema library), capped response bodies, and Server-Sent
//!   Events streaming (§8.1.6);
//! - [`AnthropicProvider`] (§8.2): the Anthropic Messages API over the same
//!   transport, with native `output_config` structured output or the tool-call
//!   coercion fallback, thinking-block round-trips and the §8.2.3 error table;
//! - [`GeminiProvider`] (§8.3): the Gemini `generateContent` mapping over the same
//!   transport, retry loop and error categories;
//! - streaming (§5 / §6 *Streaming assembly*): [`CompletionRequest::stream`] keeps the
//!   atomic [`Response`] and, inside a node, dispatches one
//!   [`openarmature_core::vocab::llm::LlmTokenEvent`] per content / reasoning delta;
//!   [`Provider::stream`] gives the caller a [`ResponseStream`] of [`StreamEvent`]s
//!   instead. Mappings without streaming (the Anthropic and Gemini mappings here)
//!   keep the trait's defaults and reject a streamed call pre-send
//!   ([`streaming_unsupported`]).
//!
//! Typed structured output: [`TypedCompletion::complete_typed`] derives the
//! `response_schema` from a Rust type (`schemars::JsonSchema`), validates and re-asks
//! through the same call-level lane, and returns the answer deserialized
//! ([`Typed`]); [`schema::json_schema_for`] is the derivation alone. A truncated
//! answer (`finish_reason = length`) is diagnosed
//! ([`StructuredOutputInvalid::is_truncated`]) and not re-asked with the same
//! bound; context-window errors of OpenAI-compatible servers are
//! `provider_invalid_request` ([`LlmError::is_context_window_exceeded`]), so no lane
//! retries them. `cargo run -p openarmature-llm --example typed_extraction`.
//!
//! Each mapping also has `from_env()` (and a testable `from_vars(lookup)`): a builder
//! from the vendor SDKs' variables (`OPENAI_API_KEY` / `OPENAI_BASE_URL` /
//! `OPENAI_MODEL`, `ANTHROPIC_*`, `GEMINI_API_KEY` or `GOOGLE_API_KEY`), failing with
//! an [`EnvError`] that names the missing variable.
//!
//! Every attempt is observable: [`CompletionRequest::on_attempt`] reports each wire
//! attempt (index, retry reason, outcome), and [`CompletionRequest::in_node`] makes a
//! call inside a node dispatch the graph-engine §6 typed events (one
//! [`openarmature_core::vocab::llm::LlmAttemptEvent`] per attempt, then one
//! [`openarmature_core::vocab::llm::LlmCompletionEvent`] or
//! [`openarmature_core::vocab::llm::LlmFailedEvent`]).
//!
//! Providers never retry on their own.
//!
//! # Two retry lanes, and the three-piece pattern
//!
//! - **Call level** (this crate): [`CompletionRequest::retry`] takes an
//!   [`LlmRetryConfig`] (or a plain [`openarmature_pipeline::RetryConfig`], the same
//!   record node-level retry takes). One `complete()` call re-sends its request:
//!   transient categories (`provider_unavailable`, `provider_rate_limit`,
//!   `provider_model_not_loaded`) after the backoff — wrap the backoff in
//!   [`HonorRetryAfter`] to wait at least what a rate limit's `Retry-After` asks —
//!   and, with a reask builder, `structured_output_invalid` by appending the bad reply
//!   and a correction. Each attempt's retry reason (`transient` / `reask`) is on its
//!   [`openarmature_core::vocab::llm::LlmAttemptEvent`].
//! - **Node level** (`openarmature-pipeline`): [`openarmature_pipeline::RetryMiddleware`]
//!   re-runs the whole node, every call in it. Stacked, budgets multiply (3 node
//!   attempts × 3 call attempts = up to 9 requests per logical call): retry provider
//!   transients at the call level, and keep node retry for what only a fresh run fixes.
//!
//! Around a node that calls a provider, compose, outermost first:
//! [`openarmature_pipeline::FailureIsolationMiddleware`] →
//! [`openarmature_pipeline::RetryMiddleware`] → the node body, which returns
//! the `LlmError` with `?` (its category is kept) so both middleware see it. What escapes both
//! lanes degrades the node instead of failing the run. `cargo run --example
//! resilient_extraction` (in the workspace root) shows all of it against a
//! fault-injecting server.
//!
//! # Examples
//! ```no_run
//! use std::time::Duration;
//! use openarmature_llm::{CompletionRequest, LlmRetryConfig, Message, OpenAiProvider, Provider};
//! use openarmature_pipeline::retry::{Constant, RetryConfig};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), openarmature_llm::LlmError> {
//! let provider = OpenAiProvider::builder("http://localhost:8000/v1", "my-model").build()?;
//! let retry = LlmRetryConfig::from(RetryConfig::default().max_attempts(3))
//!     .reask(|f: &openarmature_llm::StructuredOutputInvalid| {
//!         format!("Your output was invalid: {}. Reply with corrected JSON only.", f.error_message)
//!     });
//! let request = CompletionRequest::new(vec![Message::user("Give me a person record.")])
//!     .response_schema(json!({
//!         "type": "object",
//!         "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
//!         "required": ["name", "age"],
//!         "additionalProperties": false
//!     }))
//!     .retry(retry);
//! let response = provider.complete(&request).await?;
//! println!("{:?}", response.parsed);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "providers")]
pub mod anthropic;
#[cfg(feature = "providers")]
mod builder;
mod call;
mod config;
#[cfg(feature = "providers")]
mod env;
mod error;
#[cfg(feature = "providers")]
pub mod gemini;
// Helpers only the wire mappings use.
#[cfg_attr(not(feature = "providers"), allow(dead_code))]
mod message;
#[cfg(feature = "providers")]
pub mod openai;
mod provider;
#[cfg_attr(not(feature = "providers"), allow(dead_code))]
mod raw;
pub mod resilience;
#[cfg_attr(not(feature = "providers"), allow(dead_code))]
mod response;
mod retry;
#[cfg_attr(not(feature = "providers"), allow(dead_code))]
pub mod schema;
#[cfg(feature = "tracing-spans")]
mod spans;
#[cfg(feature = "providers")]
mod sse;
mod stream;
#[cfg(test)]
mod test_support;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tool;
mod tool_scope;
pub mod typed;
// The pre-send checks and schema compilation the wire mappings run.
#[cfg_attr(not(feature = "providers"), allow(dead_code))]
mod validate;
#[cfg(feature = "providers")]
mod wire_client;

#[cfg(feature = "providers")]
pub use anthropic::{AnthropicBuilder, AnthropicProvider};
#[cfg(feature = "providers")]
pub use builder::ProviderBuilder;
pub use call::{AttemptObserver, AttemptRecord};
pub use config::{RuntimeConfig, DECLARED_FIELDS};
#[cfg(feature = "providers")]
pub use env::OPENAI_DEFAULT_BASE_URL;
pub use error::{Cause, ErrorCategory, LlmError, ProviderFailure, StructuredOutputInvalid};
#[cfg(feature = "providers")]
pub use gemini::{GeminiBuilder, GeminiProvider};
pub use message::{
    AssistantMessage, Content, ContentBlock, ImageBlock, ImageDetail, ImageSource, Message,
    RedactedThinkingBlock, SystemMessage, TextBlock, ThinkingBlock, ToolCall, ToolMessage,
    UserMessage,
};
#[cfg(feature = "providers")]
pub use openai::{OpenAiBuilder, OpenAiProvider};
/// The typed LLM events this crate dispatches (graph-engine §6), from
/// `openarmature_core::vocab::llm`.
pub use openarmature_core::vocab::llm::{
    EventMap, EventMessages, LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent, LlmDeltaKind,
    LlmFailedEvent, LlmFailure, LlmRequestSummary, LlmResponseSummary, LlmTokenEvent, LlmUsage,
    RetryReason,
};
/// The typed tool-call events a [`ToolScope`] dispatches (graph-engine §6), from
/// `openarmature_core::vocab::tool`.
pub use openarmature_core::vocab::tool::{
    ToolCallEvent, ToolCallFailedEvent, ToolCallRecord, ToolExecution,
};
#[cfg(feature = "providers")]
pub use openarmature_http::{EnvError, Transport};
pub use provider::{CompletionRequest, ModelCapabilities, Provider, WireRequest};
pub use raw::RawBody;
pub use resilience::HonorRetryAfter;
pub use response::{FinishReason, Response, Usage};
pub use retry::{LlmRetryConfig, ReaskBuilder};
pub use stream::{
    streaming_unsupported, DeltaKind, DeltaSink, ResponseStream, StreamEvent, TokenDelta,
};
pub use tool::{Tool, ToolChoice};
pub use tool_scope::{ToolScope, ToolScopeExt};
pub use typed::{Typed, TypedCompletion};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "llm-provider";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "llm-provider");
        assert_eq!(super::SPEC_VERSION.split('.').count(), 3);
    }
}

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
