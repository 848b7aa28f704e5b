//! Spec: observability §7 and conformance-adapter §5.8 — exported log records: read
//! from the in-memory log exporter, and matched against `log_records`.

use opentelemetry::logs::AnyValue;
use opentelemetry_sdk::logs::InMemoryLogExporter;
use serde_json::Value;

use super::spans::{value_matches, Binder};
use super::LogView;
use crate::failure::Check;
use crate::matchers::each_pair;
use crate::yaml::Y;

pub(super) fn log_views(exporter: &InMemoryLogExporter) -> Check<Vec<LogView>> {
    let mut logs = exporter
        .get_emitted_logs()
        .map_err(|e| format!("in-memory log exporter: {e}"))?;
    logs.sort_by_key(|l| l.record.timestamp());
    Ok(logs
        .into_iter()
        .map(|l| {
            let r = &l.record;
            let (trace_id, span_id) = r
                .trace_context()
                .map(|t| (t.trace_id.to_string(), t.span_id.to_string()))
                .unwrap_or_default();
            LogView {
                body: r
                    .body()
                    .map(any_json)
                    .map_or_else(String::new, |v| match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }),
                trace_id,
                span_id,
                attributes: r
                    .attributes_iter()
                    .map(|(k, v)| (k.as_str().to_owned(), any_json(v)))
                    .collect(),
            }
        })
        .collect())
}

fn any_json(v: &AnyValue) -> Value {
    match v {
        AnyValue::Int(i) => Value::from(*i),
        AnyValue::Double(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        AnyValue::String(s) => Value::String(s.as_str().to_owned()),
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::ListAny(items) => Value::Array(items.iter().map(any_json).collect()),
        AnyValue::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_owned(), any_json(v)))
                .collect(),
        ),
        _ => Value::Null,
    }
}

pub(super) fn check_logs(expected: &[Y<'_>], logs: &[LogView], binder: &mut Binder) -> Check {
    each_pair(
        expected,
        logs,
        || {
            let bodies: Vec<&str> = logs.iter().map(|l| l.body.as_str()).collect();
            format!(
                "log_records: {} records, expected {}: {bodies:?}",
                logs.len(),
                expected.len()
            )
        },
        |i, want, got| {
            let path = format!("log_records[{i}]");
            want.check_keys(&["body", "attributes"])?;
            if let Some(body) = want.get("body") {
                let body = body.str()?;
                if body != got.body {
                    return Err(format!("{path}: body `{}`, expected `{body}`", got.body).into());
                }
            }
            if let Some(attrs) = want.get("attributes") {
                for (key, v) in attrs.entries()? {
                    let v = v.json()?;
                    let actual = match key.as_str() {
                        "trace_id" => Value::from(got.trace_id.clone()),
                        "span_id" => Value::from(got.span_id.clone()),
                        _ => got
                            .attributes
                            .get(&key)
                            .cloned()
                            .ok_or_else(|| format!("{path}: attribute `{key}` is missing"))?,
                    };
                    value_matches(&v, &actual, binder, &format!("{path}.{key}"))?;
                }
            }
            Ok(())
        },
    )?;
    Ok(())
}
