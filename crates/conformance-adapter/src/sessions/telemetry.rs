//! Spec: sessions §11.1 (observability §5.6 / §7) — the spans and log records a
//! sessions case exports, and the `span_tree` / `log_records` matchers.
//!
//! The case's [`OtelObserver`] writes to private providers with simple processors on
//! in-memory exporters. A span matches on its name, `status`, a subset of its
//! attributes and `attributes_absent`; a `children` list is exhaustive and matched as
//! a multiset (sibling order never matters). `log_records` is exhaustive and in
//! emission order.

use std::collections::HashMap;

use openarmature_observability::OtelObserver;
use opentelemetry::logs::AnyValue;
use opentelemetry::trace::{SpanId, Status};
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Map, Value as Json};

use super::model::{LogExpect, SpanExpect};
use crate::failure::{Check, Failure};
use crate::matchers::{each_pair, json_eq};

/// The case's observer and what it exported.
pub(super) struct Telemetry {
    pub(super) observer: OtelObserver,
    spans: InMemorySpanExporter,
    logs: InMemoryLogExporter,
    _tracer: SdkTracerProvider,
    _logger: SdkLoggerProvider,
}

/// An exported span, reduced to what the matchers read.
#[derive(Debug, Clone)]
pub(super) struct SpanView {
    id: SpanId,
    parent: SpanId,
    pub(super) name: String,
    status: &'static str,
    pub(super) attributes: Map<String, Json>,
}

/// An exported log record, reduced to what the matchers read.
#[derive(Debug, Clone)]
pub(super) struct LogView {
    pub(super) body: String,
    pub(super) attributes: Map<String, Json>,
}

impl Telemetry {
    pub(super) fn new() -> Telemetry {
        let spans = InMemorySpanExporter::default();
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let logs = InMemoryLogExporter::default();
        let logger = SdkLoggerProvider::builder()
            .with_simple_exporter(logs.clone())
            .build();
        let observer = OtelObserver::builder(&tracer)
            .logger_provider(&logger)
            .build();
        Telemetry {
            observer,
            spans,
            logs,
            _tracer: tracer,
            _logger: logger,
        }
    }

    /// Every exported span, in start order.
    pub(super) fn spans(&self) -> Check<Vec<SpanView>> {
        let mut spans = self
            .spans
            .get_finished_spans()
            .map_err(|e| format!("in-memory span exporter: {e}"))?;
        spans.sort_by_key(|s| s.start_time);
        Ok(spans
            .into_iter()
            .map(|s| SpanView {
                id: s.span_context.span_id(),
                parent: s.parent_span_id,
                name: s.name.to_string(),
                status: match s.status {
                    Status::Ok => "OK",
                    Status::Error { .. } => "ERROR",
                    Status::Unset => "UNSET",
                },
                attributes: s
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.as_str().to_owned(), otel_json(&kv.value)))
                    .collect(),
            })
            .collect())
    }

    /// Every exported log record, in emission order.
    pub(super) fn logs(&self) -> Check<Vec<LogView>> {
        let mut logs = self
            .logs
            .get_emitted_logs()
            .map_err(|e| format!("in-memory log exporter: {e}"))?;
        logs.sort_by_key(|l| l.record.timestamp());
        Ok(logs
            .into_iter()
            .map(|l| LogView {
                body: match l.record.body() {
                    Some(AnyValue::String(s)) => s.as_str().to_owned(),
                    Some(other) => format!("{other:?}"),
                    None => String::new(),
                },
                attributes: l
                    .record
                    .attributes_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), any_json(v)))
                    .collect(),
            })
            .collect())
    }
}

fn otel_json(v: &OtelValue) -> Json {
    match v {
        OtelValue::Bool(b) => Json::Bool(*b),
        OtelValue::I64(i) => Json::from(*i),
        OtelValue::F64(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        other => Json::String(other.as_str().into_owned()),
    }
}

fn any_json(v: &AnyValue) -> Json {
    match v {
        AnyValue::Int(i) => Json::from(*i),
        AnyValue::Boolean(b) => Json::Bool(*b),
        AnyValue::Double(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        AnyValue::String(s) => Json::String(s.as_str().to_owned()),
        other => Json::String(format!("{other:?}")),
    }
}

/// The attribute checks shared by spans and log records.
fn attributes(
    want: &Map<String, Json>,
    absent: &[String],
    got: &Map<String, Json>,
    path: &str,
) -> Check {
    for (key, value) in want {
        match got.get(key) {
            Some(actual) if json_eq(value, actual) => {}
            Some(actual) => {
                return Err(format!("{path}: `{key}` is {actual}, expected {value}").into())
            }
            None => return Err(format!("{path}: attribute `{key}` is missing").into()),
        }
    }
    if let Some(key) = absent.iter().find(|k| got.contains_key(k.as_str())) {
        return Err(format!("{path}: attribute `{key}` must be absent").into());
    }
    Ok(())
}

/// `span_tree`: the exported roots against the expected roots.
pub(super) fn check_span_tree(expected: &[SpanExpect], spans: &[SpanView]) -> Check {
    let ids: Vec<SpanId> = spans.iter().map(|s| s.id).collect();
    let mut children: HashMap<SpanId, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        if ids.contains(&s.parent) {
            children.entry(s.parent).or_default().push(i);
        } else {
            roots.push(i);
        }
    }
    let tree = Tree { spans, children };
    tree.set(expected, &roots, "span_tree")
}

struct Tree<'a> {
    spans: &'a [SpanView],
    children: HashMap<SpanId, Vec<usize>>,
}

impl Tree<'_> {
    /// An exhaustive, order-free match of `expected` against the spans `actual`.
    fn set(&self, expected: &[SpanExpect], actual: &[usize], path: &str) -> Check {
        if expected.len() != actual.len() {
            let names: Vec<&str> = actual
                .iter()
                .map(|i| self.spans[*i].name.as_str())
                .collect();
            return Err(format!(
                "{path}: {} spans {names:?}, expected {}",
                actual.len(),
                expected.len()
            )
            .into());
        }
        let mut used = vec![false; actual.len()];
        self.assign(expected, actual, &mut used, path)
    }

    fn assign(
        &self,
        expected: &[SpanExpect],
        actual: &[usize],
        used: &mut [bool],
        path: &str,
    ) -> Check {
        let Some((first, rest)) = expected.split_first() else {
            return Ok(());
        };
        let mut last = Failure::mismatch(format!("{path}: no span named `{}`", first.name));
        for (slot, &i) in actual.iter().enumerate() {
            if used[slot] {
                continue;
            }
            match self.span(first, i, &format!("{path}/{}", first.name)) {
                Ok(()) => {
                    used[slot] = true;
                    match self.assign(rest, actual, used, path) {
                        Ok(()) => return Ok(()),
                        Err(e) => last = e,
                    }
                    used[slot] = false;
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn span(&self, want: &SpanExpect, i: usize, path: &str) -> Check {
        let got = &self.spans[i];
        if got.name != want.name {
            return Err(format!("{path}: span is `{}`", got.name).into());
        }
        if let Some(status) = &want.status {
            if got.status != status {
                return Err(format!("{path}: status {}, expected {status}", got.status).into());
            }
        }
        attributes(
            &want.attributes,
            &want.attributes_absent,
            &got.attributes,
            path,
        )?;
        let kids = self.children.get(&got.id).cloned().unwrap_or_default();
        self.set(&want.children, &kids, path)
    }
}

/// `log_records`: exhaustive, in emission order.
pub(super) fn check_logs(expected: &[LogExpect], logs: &[LogView]) -> Check {
    each_pair(
        expected,
        logs,
        || {
            let bodies: Vec<&str> = logs.iter().map(|l| l.body.as_str()).collect();
            format!(
                "log_records: {} records {bodies:?}, expected {}",
                logs.len(),
                expected.len()
            )
        },
        |i, want, got| {
            let path = format!("log_records[{i}]");
            if want.body != got.body {
                return Err(
                    format!("{path}: body `{}`, expected `{}`", got.body, want.body).into(),
                );
            }
            attributes(
                &want.attributes,
                &want.attributes_absent,
                &got.attributes,
                &path,
            )?;
            Ok(())
        },
    )?;
    Ok(())
}
