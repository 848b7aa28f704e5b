//! The §11 metrics exported through the real OTLP/HTTP metric exporter (periodic
//! reader, its own thread) to a collector stand-in on 127.0.0.1 that decodes the
//! protobuf `ExportMetricsServiceRequest`s it receives: one LLM attempt recorded with
//! `enable_metrics` arrives on `/v1/metrics` as the token-usage and duration
//! histograms, with their §11.3 dimensions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_observability::attributes as a;
use openarmature_observability::export::{OtlpExport, Protocol};
use openarmature_observability::OtelObserver;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::otlp_support;
use crate::support::{reply, report_completed, request, usage, Doc, DocUpdate};

fn report(ctx: &NodeCtx) {
    let usage = usage(Some(7), Some(3), Some(10));
    report_completed(ctx, request("call-1"), reply(usage, "stop"), 250.0);
}

/// `(instrument, sorted dimensions) -> (count, sum)` of every histogram point.
type Histograms = BTreeMap<(String, Vec<(String, String)>), (u64, f64)>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_metrics_arrive_over_otlp_http() {
    let (collector, mut rx) = otlp_support::collector::<ExportMetricsServiceRequest>().await;
    let addr = collector.addr();

    let meters = OtlpExport::from_env()
        .protocol(Protocol::HttpProtobuf)
        .endpoint(format!("http://{addr}"))
        .timeout(Duration::from_secs(5))
        .meter_provider()
        .expect("meter provider");
    let tracer = SdkTracerProvider::builder().build();
    let otel = OtelObserver::builder(&tracer)
        .meter_provider(&meters)
        .enable_metrics(true)
        .build();
    let graph = GraphBuilder::new(Doc::default())
        .add_node("ask", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            report(&ctx);
            Ok(DocUpdate::default())
        })
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .expect("compile");
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .expect("invoke");

    // Shutdown collects and exports once more (blocking: the reader's thread talks to
    // the collector running on this runtime).
    tokio::task::spawn_blocking(move || meters.shutdown())
        .await
        .expect("join")
        .expect("shutdown flushes");

    let mut seen = Histograms::new();
    while seen.len() < 3 {
        let (path, req) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an export within 10 s")
            .expect("collector alive");
        assert_eq!(path, "/v1/metrics");
        for rm in req.resource_metrics {
            for sm in rm.scope_metrics {
                assert_eq!(sm.scope.map(|s| s.name).as_deref(), Some("openarmature"));
                for m in sm.metrics {
                    let Some(Data::Histogram(h)) = m.data else {
                        panic!("`{}` is not a histogram", m.name);
                    };
                    for p in h.data_points {
                        let mut dims: Vec<(String, String)> = p
                            .attributes
                            .iter()
                            .map(
                                |kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                    Some(AnyValue::StringValue(s)) => (kv.key.clone(), s.clone()),
                                    other => panic!("dimension `{}` = {other:?}", kv.key),
                                },
                            )
                            .collect();
                        dims.sort();
                        seen.insert((m.name.clone(), dims), (p.count, p.sum.unwrap_or(0.0)));
                    }
                }
            }
        }
    }
    let base = |extra: Option<(&str, &str)>| {
        let mut d: Vec<(String, String)> = [
            (a::METRIC_OPERATION, "chat"),
            (a::GEN_AI_REQUEST_MODEL, "gpt-test"),
            (a::GEN_AI_SYSTEM, "openai"),
        ]
        .into_iter()
        .chain(extra)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        d.sort();
        d
    };
    let get = |name: &str, extra| seen[&(name.to_owned(), base(extra))];
    assert_eq!(
        get(a::METRIC_TOKEN_USAGE, Some((a::METRIC_TOKEN_TYPE, "input"))),
        (1, 7.0)
    );
    assert_eq!(
        get(
            a::METRIC_TOKEN_USAGE,
            Some((a::METRIC_TOKEN_TYPE, "output"))
        ),
        (1, 3.0)
    );
    assert_eq!(get(a::METRIC_OPERATION_DURATION, None), (1, 0.25));
}
