//! Integration tests of `openarmature-observability`: one binary, one module per
//! area (metric capture in `metrics_support`, the OTLP/HTTP collector stand-in in
//! `otlp_support`), so that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fan_support;
mod metrics_support;
mod otlp_support;
mod support;

mod budget_warning;
mod callable_branch_spans;
mod langfuse_ingest;
mod langfuse_prompt_link;
mod langfuse_resume;
mod llm_resilience_spans;
mod llm_span_timing;
mod metadata_spans;
mod metrics;
mod metrics_typed_events;
mod observer;
mod orphan_llm_spans;
mod otlp_http_export;
mod otlp_http_metrics;
mod progress;
mod prompt_attributes;
mod run_report;
mod session_spans;
mod session_store_spans;
mod tool_spans;
