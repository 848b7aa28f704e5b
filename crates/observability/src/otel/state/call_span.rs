//! Spec: observability §5.5 *Lineage-resolved parent* — the spans of calls a node's
//! own work makes (LLM attempts §5.5, tool executions §5.5.11, embedding and rerank
//! calls §5.5.8 / §5.5.13), each made from its terminal event.
//!
//! Shared by every such span: the call's unit is entered (its enclosing spans opened)
//! with the call's metadata snapshot; the span is parented under the calling node's
//! open span, else the nearest enclosing wrapper; it ends when the call ended (the
//! event's `at`, never after delivery) and starts the call's latency earlier, never
//! before its parent span.

use std::time::{Duration, SystemTime};

use openarmature_graph::CallSite;
use opentelemetry::trace::{Span, SpanBuilder, Status};
use opentelemetry::KeyValue;

use super::{InvState, Key, Open, TracerDyn};
use crate::attributes as attr;
use crate::otel::Config;

/// One finished call, as its terminal event describes it.
pub(crate) struct FinishedCall<'a> {
    /// The calling node.
    pub(crate) site: &'a CallSite,
    /// How long the call took, when measured.
    pub(crate) latency_ms: Option<f64>,
    /// When it ended.
    pub(crate) at: SystemTime,
}

impl InvState {
    /// Enters the call's unit (opening the spans that enclose it) with the call's
    /// metadata snapshot; returns the unit.
    pub(crate) fn enter_call(
        &mut self,
        tracer: &dyn TracerDyn,
        config: &Config,
        site: &CallSite,
        now: SystemTime,
    ) -> Key {
        self.use_metadata(Some(&site.metadata));
        let unit = Key::of_lineage(&site.lineage);
        self.enter(tracer, config, &unit, now);
        unit
    }

    /// Starts the span `name` of `call` (after [`InvState::enter_call`] returned
    /// `unit`) with `attrs` plus the cross-cutting attributes; returns it with the time
    /// to end it at.
    pub(crate) fn start_call_span(
        &mut self,
        tracer: &dyn TracerDyn,
        name: &'static str,
        unit: &Key,
        call: &FinishedCall<'_>,
        mut attrs: Vec<KeyValue>,
        now: SystemTime,
    ) -> (Open, SystemTime) {
        let end = call.at.min(now);
        let (parent, parent_start) = self.parent_of_call(unit, call.site.lineage.attempt_index);
        attrs.extend(self.cross_cutting());
        let mut start = call
            .latency_ms
            .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
            .and_then(|d| end.checked_sub(d))
            .unwrap_or(end);
        if let Some(floor) = parent_start.filter(|p| *p > start) {
            start = floor.min(now);
        }
        let open = Open::start(
            tracer,
            SpanBuilder::from_name(name)
                .with_start_time(start)
                .with_attributes(attrs),
            Some(&parent),
        );
        (open, end.max(start))
    }
}

/// Marks `span` failed (§4.2): an `exception` event at `at` with `error_type` and
/// `message`, and an ERROR status carrying the message.
pub(crate) fn fail_span(open: &mut Open, error_type: String, message: &str, at: SystemTime) {
    open.span.add_event_with_timestamp(
        attr::EXCEPTION_EVENT,
        at,
        vec![
            KeyValue::new(attr::EXCEPTION_TYPE, error_type),
            KeyValue::new(attr::EXCEPTION_MESSAGE, message.to_owned()),
        ],
    );
    open.span.set_status(Status::error(message.to_owned()));
}
