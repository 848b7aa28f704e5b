//! Shared by the §11 metric tests: the test state, an in-memory metric capture
//! flattened into [`Point`]s, and a driver running a graph under an observer with
//! metrics on a private meter provider.
#![allow(dead_code)]

use std::collections::BTreeMap;

use openarmature_graph::{CompiledGraph, InvokeOptions};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

pub use crate::support::{Doc, DocUpdate};

/// One exported data point: instrument, unit, dimensions, observation count, sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub name: String,
    pub unit: String,
    pub dims: BTreeMap<String, String>,
    pub count: u64,
    pub sum: f64,
    pub bounds: Vec<f64>,
}

pub fn points(exporter: &InMemoryMetricExporter, provider: &SdkMeterProvider) -> Vec<Point> {
    provider.force_flush().unwrap();
    let batches = exporter.get_finished_metrics().unwrap();
    let mut out = Vec::new();
    let Some(last) = batches.last() else {
        return out;
    };
    for scope in last.scope_metrics() {
        for m in scope.metrics() {
            let dims = |attrs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                attrs
                    .map(|kv| (kv.key.to_string(), kv.value.as_str().into_owned()))
                    .collect::<BTreeMap<_, _>>()
            };
            let mut push = |dims, count, sum, bounds| {
                out.push(Point {
                    name: m.name().to_owned(),
                    unit: m.unit().to_owned(),
                    dims,
                    count,
                    sum,
                    bounds,
                })
            };
            match m.data() {
                AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                    for p in h.data_points() {
                        let b = p.bounds().collect();
                        push(dims(&mut p.attributes()), p.count(), p.sum() as f64, b);
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                    for p in h.data_points() {
                        let b = p.bounds().collect();
                        push(dims(&mut p.attributes()), p.count(), p.sum(), b);
                    }
                }
                AggregatedMetrics::U64(MetricData::Sum(s)) => {
                    for p in s.data_points() {
                        push(dims(&mut p.attributes()), 1, p.value() as f64, Vec::new());
                    }
                }
                other => panic!("unexpected aggregation {other:?}"),
            }
        }
    }
    out
}

pub fn dims(extra: &[(&str, &str)], model: &str, system: &str) -> BTreeMap<String, String> {
    let mut d: BTreeMap<String, String> = [
        (a::METRIC_OPERATION, "chat"),
        (a::GEN_AI_REQUEST_MODEL, model),
        (a::GEN_AI_SYSTEM, system),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    d.retain(|_, v| !v.is_empty());
    d
}

pub fn of<'p>(all: &'p [Point], name: &str) -> Vec<&'p Point> {
    all.iter().filter(|p| p.name == name).collect()
}

pub async fn drive(graph: CompiledGraph<Doc>, enable: bool, llm_spans: bool) -> Vec<Point> {
    let exporter = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(exporter.clone())
        .build();
    let tracer = SdkTracerProvider::builder().build();
    let otel = OtelObserver::builder(&tracer)
        .disable_llm_spans(!llm_spans)
        .meter_provider(&meters)
        .enable_metrics(enable)
        .build();
    let _ = otel
        .invoke(&graph, Doc::default(), InvokeOptions::default())
        .await;
    graph.drain(None).await;
    let out = points(&exporter, &meters);
    meters.shutdown().unwrap();
    out
}
