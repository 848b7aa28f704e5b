//! Opt-in [`tracing`](https://docs.rs/tracing) spans (feature `tracing-spans`).
//!
//! Opened inline around the real work, so they carry true timing and nest under
//! the node attempt that made the call (the engine's `openarmature.node` span, same
//! feature name in `openarmature-graph`):
//!
//! - `openarmature.llm.complete`: one span per **wire attempt** of a `complete()`
//!   call (a call retried once shows two sibling spans, attempt indices 0 and 1, the
//!   second with its `openarmature.llm.retry_reason`). `otel.name` is the GenAI
//!   `chat {model}`; the fields are the GenAI semantic-convention keys the
//!   OpenTelemetry observer writes (`gen_ai.system`, `gen_ai.request.model`,
//!   `gen_ai.response.*`, `gen_ai.usage.*`, `error.type`) and its
//!   `openarmature.llm.*` keys.
//! - `openarmature.tool.call`: one span per [`crate::ToolScope`], from
//!   [`crate::ToolScopeExt::start_tool`] (or `instrument_tool`) to its outcome;
//!   `otel.name` is `execute_tool {name}` and the fields are `gen_ai.tool.name`,
//!   `gen_ai.tool.call.id` and the `openarmature.tool.*` keys. With
//!   `instrument_tool`, work inside the tool future nests under it.
//!
//! Use either these spans (with `tracing-opentelemetry` to export them) or
//! `openarmature-observability`'s `OtelObserver`, not both: each exports its own copy
//! of every span. Without the feature nothing here is compiled in.

use std::future::Future;

use openarmature_core::vocab::llm::RetryReason;
use openarmature_core::vocab::tool::ToolCallRecord;
use tracing::{field::Empty, Instrument, Span};

use crate::error::LlmError;
use crate::response::Response;

/// Runs one wire attempt inside its `openarmature.llm.complete` span.
pub(crate) async fn wire_attempt<F>(
    provider: &str,
    model: &str,
    index: u32,
    reason: Option<RetryReason>,
    attempt: F,
) -> Result<Response, LlmError>
where
    F: Future<Output = Result<Response, LlmError>>,
{
    let span = tracing::info_span!(
        "openarmature.llm.complete",
        "otel.name" = %format_args!("chat {model}"),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.system" = provider,
        "gen_ai.request.model" = model,
        "openarmature.llm.model" = model,
        "openarmature.llm.attempt_index" = index,
        "openarmature.llm.retry_reason" = reason.map(RetryReason::as_str),
        "gen_ai.response.model" = Empty,
        "gen_ai.response.id" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "error.type" = Empty,
        "openarmature.error.category" = Empty,
        "exception.message" = Empty,
    );
    if span.is_disabled() {
        return attempt.await;
    }
    let result = attempt.instrument(span.clone()).await;
    match &result {
        Ok(response) => {
            span.record("otel.status_code", "OK");
            span.record("gen_ai.response.model", response.response_model());
            span.record("gen_ai.response.id", response.response_id());
            span.record(
                "gen_ai.response.finish_reasons",
                response.finish_reason.as_str(),
            );
            span.record("gen_ai.usage.input_tokens", response.usage.prompt_tokens);
            span.record(
                "gen_ai.usage.output_tokens",
                response.usage.completion_tokens,
            );
        }
        Err(error) => {
            let category = error.category().as_str();
            span.record("otel.status_code", "ERROR");
            span.record("error.type", category);
            span.record("openarmature.error.category", category);
            span.record("exception.message", tracing::field::display(error));
        }
    }
    result
}

/// The `openarmature.tool.call` span of a tool scope entered now (a child of the
/// current span: the node attempt's).
pub(crate) fn tool_call(record: &ToolCallRecord) -> Span {
    let id = record.tool_call_id.as_deref();
    tracing::info_span!(
        "openarmature.tool.call",
        "otel.name" = %format_args!("execute_tool {}", record.tool_name),
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = %record.tool_name,
        "gen_ai.tool.call.id" = id,
        "openarmature.tool.name" = %record.tool_name,
        "openarmature.tool.call.id" = id,
        "error.type" = Empty,
        "exception.message" = Empty,
    )
}

/// Records a tool scope's outcome on its span (`Err`: the failure's type and
/// message).
pub(crate) fn tool_outcome(span: &Span, failure: Option<(Option<&str>, &str)>) {
    match failure {
        None => {
            span.record("otel.status_code", "OK");
        }
        Some((error_type, message)) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", error_type.unwrap_or("tool_error"));
            span.record("exception.message", message);
        }
    }
}
