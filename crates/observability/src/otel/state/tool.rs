//! Spec: observability §5.5.11 (tool-execution span) and §5.5.12 (typed tool events).
//!
//! One `openarmature.tool.call` span per instrumented tool execution, made from its
//! terminal event ([`ToolCallEvent`] or [`ToolCallFailedEvent`]) and parented under
//! the calling node's span (lineage-resolved, with the orphan fallback). It carries
//! the `openarmature.tool.*` attributes (never `gen_ai.tool.*` in v1); arguments and
//! result only with provider payload enabled, truncated to the payload cap. A failure
//! sets the standard `error.type`, an `exception` event and an ERROR status.

use std::time::SystemTime;

use openarmature_core::vocab::tool::{ToolCallEvent, ToolCallFailedEvent, ToolCallRecord};
use opentelemetry::trace::{Span, Status};
use opentelemetry::KeyValue;
use serde_json::Value;

use super::call_span::{fail_span, FinishedCall};
use super::{InvState, TracerDyn};
use crate::attributes as attr;
use crate::otel::Config;
use crate::payload::{canonical_json, truncate};

/// `error.type` when the failure names no type (the OTel convention for "unknown").
const UNKNOWN_ERROR_TYPE: &str = "_OTHER";

/// How one tool execution ended.
pub(crate) enum ToolOutcome<'a> {
    /// It returned `result`.
    Returned(&'a Value),
    /// It failed.
    Failed {
        error_type: Option<&'a str>,
        message: &'a str,
    },
}

impl<'a> ToolOutcome<'a> {
    pub(crate) fn of_success(e: &'a ToolCallEvent) -> (&'a ToolCallRecord, Self) {
        (&e.call, ToolOutcome::Returned(&e.result))
    }

    pub(crate) fn of_failure(e: &'a ToolCallFailedEvent) -> (&'a ToolCallRecord, Self) {
        (
            &e.call,
            ToolOutcome::Failed {
                error_type: e.error_type.as_deref(),
                message: &e.error_message,
            },
        )
    }
}

impl InvState {
    /// Makes the span of one finished tool execution.
    pub(crate) fn on_tool(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        call: &ToolCallRecord,
        outcome: ToolOutcome<'_>,
    ) {
        let now = SystemTime::now();
        let unit = self.enter_call(tracer, config, &call.site, now);
        let attrs = tool_attributes(call, &outcome, config);
        let finished = FinishedCall {
            site: &call.site,
            latency_ms: call.latency_ms,
            at: call.at,
        };
        let (mut open, end) =
            self.start_call_span(tracer, attr::TOOL_SPAN, &unit, &finished, attrs, now);
        match outcome {
            ToolOutcome::Returned(_) => open.span.set_status(Status::Ok),
            ToolOutcome::Failed {
                error_type,
                message,
            } => {
                let error_type = error_type.unwrap_or(UNKNOWN_ERROR_TYPE).to_owned();
                fail_span(&mut open, error_type, message, end);
            }
        }
        open.span.end_with_timestamp(end);
    }
}

/// The §5.5.11 attributes of one execution's span.
fn tool_attributes(
    call: &ToolCallRecord,
    outcome: &ToolOutcome<'_>,
    config: &Config,
) -> Vec<KeyValue> {
    let mut attrs = vec![KeyValue::new(attr::TOOL_NAME, call.tool_name.clone())];
    if let Some(id) = &call.tool_call_id {
        attrs.push(KeyValue::new(attr::TOOL_CALL_ID, id.clone()));
    }
    if !config.disable_provider_payload {
        let cap = config.payload_byte_cap;
        if let Some(arguments) = &call.arguments {
            attrs.push(KeyValue::new(
                attr::TOOL_CALL_ARGUMENTS,
                truncate(canonical_json(arguments), cap),
            ));
        }
        if let ToolOutcome::Returned(result) = outcome {
            attrs.push(KeyValue::new(
                attr::TOOL_CALL_RESULT,
                truncate(canonical_json(result), cap),
            ));
        }
    }
    if let ToolOutcome::Failed { error_type, .. } = outcome {
        attrs.push(KeyValue::new(
            attr::ERROR_TYPE,
            error_type.unwrap_or(UNKNOWN_ERROR_TYPE).to_owned(),
        ));
    }
    attrs
}
