//! Spec: conformance-adapter §6.9 (metric capture) and §5.8 (`metrics:`), for the
//! observability §11 fixtures.
//!
//! [`Capture`] is the in-memory metric-capture primitive: a private meter provider
//! whose periodic reader feeds an in-memory exporter, flushed once after the case ran.
//! Its export is flattened into [`Point`]s — one per (instrument, dimension set), with
//! the observation count and the histogram sum or counter value.
//!
//! The `metrics:` list is matched per instrument it names (register O10): the entries
//! naming one instrument with one dimension set are the observations of that
//! (instrument, dimensions) point — a histogram point must hold exactly that many
//! observations, and the entries' values (when given) must add up to its sum; a
//! counter's entry values must add up to its value. Every recorded point of a named
//! instrument must be claimed by some entry. `metrics: []` asserts nothing was
//! recorded at all.

use std::collections::BTreeMap;

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use serde_json::Value;

use super::spans::{json_of, value_matches, Binder};
use crate::failure::{Check, Failure};
use crate::yaml::Y;

/// One exported data point.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    /// The instrument name.
    pub(crate) instrument: String,
    /// The dimensions, as JSON values.
    pub(crate) dims: BTreeMap<String, Value>,
    /// Observations aggregated into the point (1 for a counter).
    pub(crate) count: u64,
    /// The histogram sum, or the counter value.
    pub(crate) value: f64,
    /// Whether the instrument is a counter (a sum) rather than a histogram.
    pub(crate) counter: bool,
}

impl Point {
    /// A dimension as a string (`None` when absent or not a string).
    pub(crate) fn dim(&self, key: &str) -> Option<&str> {
        self.dims.get(key).and_then(Value::as_str)
    }
}

/// The in-memory metric-capture primitive of one case.
pub(crate) struct Capture {
    exporter: InMemoryMetricExporter,
    /// The provider the observer's meter comes from.
    pub(crate) provider: SdkMeterProvider,
}

impl Capture {
    /// A fresh private meter provider with an in-memory exporter.
    pub(crate) fn new() -> Capture {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter.clone())
            .build();
        Capture { exporter, provider }
    }

    /// Flushes, shuts the provider down, and returns every recorded point.
    pub(crate) fn finish(self) -> Check<Vec<Point>> {
        self.provider
            .force_flush()
            .map_err(|e| format!("metric capture: flush: {e}"))?;
        let batches = self
            .exporter
            .get_finished_metrics()
            .map_err(|e| format!("metric capture: {e}"))?;
        let _ = self.provider.shutdown();
        // Cumulative temporality: the last export holds everything.
        let Some(last) = batches.last() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for scope in last.scope_metrics() {
            for metric in scope.metrics() {
                flatten(metric.name(), metric.data(), &mut out)?;
            }
        }
        Ok(out)
    }
}

fn dims<'k>(attrs: impl Iterator<Item = &'k KeyValue>) -> BTreeMap<String, Value> {
    attrs
        .map(|kv| (kv.key.to_string(), json_of(&kv.value)))
        .collect()
}

fn flatten(name: &str, data: &AggregatedMetrics, out: &mut Vec<Point>) -> Check {
    let point = |dims, count, value, counter| Point {
        instrument: name.to_owned(),
        dims,
        count,
        value,
        counter,
    };
    match data {
        AggregatedMetrics::U64(MetricData::Histogram(h)) => out.extend(
            h.data_points()
                .map(|p| point(dims(p.attributes()), p.count(), p.sum() as f64, false)),
        ),
        AggregatedMetrics::F64(MetricData::Histogram(h)) => out.extend(
            h.data_points()
                .map(|p| point(dims(p.attributes()), p.count(), p.sum(), false)),
        ),
        AggregatedMetrics::U64(MetricData::Sum(s)) => out.extend(
            s.data_points()
                .map(|p| point(dims(p.attributes()), 1, p.value() as f64, true)),
        ),
        AggregatedMetrics::F64(MetricData::Sum(s)) => out.extend(
            s.data_points()
                .map(|p| point(dims(p.attributes()), 1, p.value(), true)),
        ),
        other => {
            return Err(
                format!("metric capture: `{name}` has an unexpected aggregation {other:?}").into(),
            )
        }
    }
    Ok(())
}

/// Numeric equality with a relative tolerance (ratios are floating point).
pub(crate) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// One `metrics:` entry.
struct Entry {
    instrument: String,
    dims: BTreeMap<String, Value>,
    value: Option<f64>,
}

fn parse(y: &Y<'_>) -> Check<Entry> {
    y.check_keys(&["instrument", "dimensions", "value"])?;
    let instrument = y.req("instrument").and_then(|i| i.str())?;
    let dims = match y.get("dimensions") {
        Some(d) => match d.json()? {
            Value::Object(m) => m.into_iter().collect(),
            _ => return Err(Failure::from(d.invalid("dimensions must be a mapping"))),
        },
        None => BTreeMap::new(),
    };
    let value = y.opt_f64("value")?;
    Ok(Entry {
        instrument: instrument.to_owned(),
        dims,
        value,
    })
}

/// Whether `point` carries exactly the entry's dimension set, each value matching.
fn same_dims(entry: &Entry, point: &Point) -> bool {
    entry.dims.len() == point.dims.len()
        && entry.dims.iter().all(|(k, want)| {
            point
                .dims
                .get(k)
                .is_some_and(|got| value_matches(want, got, &mut Binder::default(), k).is_ok())
        })
}

/// `expected.metrics` (see the module docs).
pub(crate) fn check(list: &Y<'_>, points: &[Point]) -> Check {
    let entries: Vec<Entry> = list.seq()?.iter().map(parse).collect::<Result<_, _>>()?;
    if entries.is_empty() {
        if let Some(p) = points.first() {
            return Err(format!(
                "metrics: expected no measurements, `{}` recorded {:?}",
                p.instrument, p.dims
            )
            .into());
        }
        return Ok(());
    }
    let mut claimed = vec![false; points.len()];
    let mut groups: Vec<(usize, Vec<&Entry>)> = Vec::new();
    for entry in &entries {
        let found = points
            .iter()
            .position(|p| p.instrument == entry.instrument && same_dims(entry, p))
            .ok_or_else(|| {
                let seen: Vec<_> = points
                    .iter()
                    .filter(|p| p.instrument == entry.instrument)
                    .map(|p| &p.dims)
                    .collect();
                format!(
                    "metrics: no `{}` observation with dimensions {:?} (recorded: {seen:?})",
                    entry.instrument, entry.dims
                )
            })?;
        claimed[found] = true;
        match groups.iter_mut().find(|(i, _)| *i == found) {
            Some((_, g)) => g.push(entry),
            None => groups.push((found, vec![entry])),
        }
    }
    for (i, group) in groups {
        let p = &points[i];
        let n = u64::try_from(group.len()).unwrap_or(u64::MAX);
        if !p.counter && p.count != n {
            return Err(format!(
                "metrics: `{}` {:?} holds {} observations, expected {n}",
                p.instrument, p.dims, p.count
            )
            .into());
        }
        let values: Option<Vec<f64>> = group.iter().map(|e| e.value).collect();
        if let Some(values) = values {
            let want: f64 = values.iter().sum();
            if !close(want, p.value) {
                return Err(format!(
                    "metrics: `{}` {:?} recorded {}, expected {want}",
                    p.instrument, p.dims, p.value
                )
                .into());
            }
        }
    }
    for (p, claimed) in points.iter().zip(claimed) {
        let named = entries.iter().any(|e| e.instrument == p.instrument);
        if named && !claimed {
            return Err(format!(
                "metrics: unexpected `{}` observation {:?} (value {}, count {})",
                p.instrument, p.dims, p.value, p.count
            )
            .into());
        }
    }
    Ok(())
}
