//! Integration tests of `openarmature-llm`: one binary, one module per area (the
//! scripted HTTP server in `support`), so that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod anthropic;
mod call_level_retry;
mod fuzz_findings;
mod gemini_provider;
mod hostile_server;
mod resilience_retry_after;
mod resilience_soak;
mod secrets;
mod stream_extension;
mod streaming;
#[cfg(feature = "tracing-spans")]
mod tracing_spans;
mod typed_output;
