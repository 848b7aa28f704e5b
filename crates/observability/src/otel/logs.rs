//! Spec: observability §7 — log correlation: records made inside an invocation carry
//! the active span's `trace_id` / `span_id` and `openarmature.correlation_id` plus
//! the `openarmature.user.*` attributes.
//!
//! Node bodies run concurrently with observer delivery, so when a record is made its
//! node's span may not be open yet. The record is therefore captured with its
//! lineage and timestamp, and the observer emits it through the OpenTelemetry Logs
//! SDK as soon as the span it belongs to is open — at the latest when that node's
//! `completed` event is handled (the body has returned by then), or on the invocation
//! span when the invocation ends. Timestamps are those of the original call.

use std::time::SystemTime;

use opentelemetry::logs::{AnyValue, LogRecord, Logger, Severity};
use opentelemetry::trace::SpanContext;
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::logs::SdkLogger;

/// One captured log record.
pub(crate) struct LogLine {
    pub(crate) time: SystemTime,
    pub(crate) severity: Severity,
    pub(crate) body: String,
    /// Correlation id and user metadata.
    pub(crate) attributes: Vec<KeyValue>,
}

impl LogLine {
    /// Emits the record in the context of `span` (uncorrelated with `None`).
    pub(crate) fn emit(&self, logger: &SdkLogger, span: Option<&SpanContext>) {
        let mut record = logger.create_log_record();
        record.set_timestamp(self.time);
        record.set_observed_timestamp(self.time);
        record.set_severity_number(self.severity);
        record.set_severity_text(self.severity.name());
        record.set_body(AnyValue::from(self.body.clone()));
        for kv in &self.attributes {
            record.add_attribute(kv.key.clone(), any_value(&kv.value));
        }
        if let Some(span) = span {
            record.set_trace_context(span.trace_id(), span.span_id(), Some(span.trace_flags()));
        }
        logger.emit(record);
    }
}

fn any_value(v: &Value) -> AnyValue {
    match v {
        Value::Bool(b) => AnyValue::Boolean(*b),
        Value::I64(i) => AnyValue::Int(*i),
        Value::F64(f) => AnyValue::Double(*f),
        Value::String(s) => AnyValue::String(s.clone()),
        Value::Array(a) => AnyValue::ListAny(Box::new(match a {
            Array::Bool(v) => v.iter().map(|x| AnyValue::Boolean(*x)).collect(),
            Array::I64(v) => v.iter().map(|x| AnyValue::Int(*x)).collect(),
            Array::F64(v) => v.iter().map(|x| AnyValue::Double(*x)).collect(),
            Array::String(v) => v.iter().map(|x| AnyValue::String(x.clone())).collect(),
            _ => Vec::new(),
        })),
        _ => AnyValue::String(v.as_str().into_owned().into()),
    }
}
