//! observability §3.4 / §5.6 / §6 on exported spans: mid-invocation metadata lands
//! on the spans opened afterwards and, in place, on the spans still open on the
//! writer's call-stack path — not on siblings, not on shared parents.

use std::sync::Arc;

use openarmature_graph::{
    middleware_fn, set_invocation_metadata, state, CompiledGraph, GraphBuilder, InvokeOptions,
    Middleware, NodeCtx, END,
};
use openarmature_observability::OtelObserver;
use openarmature_pipeline::FanOutNode;
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;
use serde_json::json;

use crate::support::single_node;
use crate::support::{attr, int, span_capture};

/// The attribute carrying a fan-out instance's index.
const FAN_OUT_INDEX: &str = "openarmature.node.fan_out_index";

state! {
    /// The parent state.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// Items to fan out over.
        pub xs: Vec<i64>,
        /// Collected results.
        pub ys: Vec<i64> => append,
    }
}

state! {
    /// One instance.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// The item.
        pub x: i64,
        /// Its result.
        pub y: i64,
    }
}

fn user(span: &SpanData, key: &str) -> Option<Value> {
    let key = format!("openarmature.user.{key}");
    span.attributes
        .iter()
        .rev()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

async fn spans<S: openarmature_graph::State>(
    graph: &CompiledGraph<S>,
    initial: S,
) -> Vec<SpanData> {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let options =
        InvokeOptions::default().metadata(json!({"tenantId": "T1"}).as_object().cloned().unwrap());
    otel.invoke(graph, initial, options).await.unwrap();
    exporter.get_finished_spans().unwrap()
}

/// The spans of one run of a graph whose only node is `fan`, over items 1 and 2.
async fn fan_spans(fan: FanOutNode<Doc, Item>) -> Vec<SpanData> {
    let graph = single_node::<Doc>("fan", fan);
    let initial = Doc {
        xs: vec![1, 2],
        ..Doc::default()
    };
    spans(&graph, initial).await
}

fn one<'s>(spans: &'s [SpanData], name: &str) -> &'s SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name}");
    found[0]
}

#[tokio::test]
async fn a_serial_write_updates_the_open_invocation_and_node_spans() {
    let graph = GraphBuilder::new(Doc::default())
        .add_node("before", |_s: Arc<Doc>, _c: NodeCtx| async {
            Ok(DocUpdate::default())
        })
        .add_node("ask", |_s: Arc<Doc>, _c: NodeCtx| async {
            set_invocation_metadata([("requestId", json!("req-xyz"))])?;
            Ok(DocUpdate::default())
        })
        .add_node("later", |_s: Arc<Doc>, _c: NodeCtx| async {
            Ok(DocUpdate::default())
        })
        .add_edge("before", "ask")
        .add_edge("ask", "later")
        .add_edge("later", END)
        .entry("before")
        .compile()
        .unwrap();
    let spans = spans(&graph, Doc::default()).await;
    let req = Some(Value::from("req-xyz"));
    assert_eq!(
        user(one(&spans, "openarmature.invocation"), "requestId"),
        req
    );
    assert_eq!(user(one(&spans, "ask"), "requestId"), req, "open node span");
    assert_eq!(user(one(&spans, "later"), "requestId"), req, "forward flow");
    assert_eq!(
        user(one(&spans, "before"), "requestId"),
        None,
        "closed spans"
    );
    for s in &spans {
        assert_eq!(user(s, "tenantId"), Some(Value::from("T1")), "{}", s.name);
    }
}

#[tokio::test]
async fn instance_writes_stay_on_their_instance_path() {
    let worker = single_node::<Item>("work", |s: Arc<Item>, _c: NodeCtx| async move {
        set_invocation_metadata([("productId", json!(s.x))])?;
        Ok(ItemUpdate::default().y(s.x))
    });
    let spans = fan_spans(FanOutNode::over_items(worker, "xs", "x", "y", "ys")).await;
    let fan: Vec<&SpanData> = spans.iter().filter(|s| s.name == "fan").collect();
    // The fan-out node span plus one span per instance.
    assert_eq!(fan.len(), 3);
    for s in fan {
        let want = match attr(s, FAN_OUT_INDEX) {
            // An instance span: its own item, in place.
            Some(Value::I64(i)) => Some(Value::I64(i + 1)),
            // The fan-out node span is a shared parent.
            _ => None,
        };
        assert_eq!(user(s, "productId"), want);
    }
    for s in spans.iter().filter(|s| s.name == "work") {
        let index = int(s, FAN_OUT_INDEX).unwrap();
        assert_eq!(user(s, "productId"), Some(Value::I64(index + 1)));
    }
    let root = one(&spans, "openarmature.invocation");
    assert_eq!(user(root, "productId"), None, "a fork is on the path");
}

/// Instance middleware tagging each instance with its item before it runs.
fn tag_item() -> impl Middleware<Item> {
    middleware_fn(|state: Arc<Item>, ctx, next| {
        Box::pin(async move {
            set_invocation_metadata([("productId", json!(state.x))])?;
            next.run(state, ctx).await
        })
    })
}

#[tokio::test]
async fn instance_middleware_writes_skip_the_shared_fan_out_node_span() {
    let worker = single_node::<Item>("work", |s: Arc<Item>, _c: NodeCtx| async move {
        Ok(ItemUpdate::default().y(s.x))
    });
    let fan = FanOutNode::over_items(worker, "xs", "x", "y", "ys")
        .instance_middleware(Arc::new(tag_item()));
    let spans = fan_spans(fan).await;
    let index = |s: &SpanData| int(s, FAN_OUT_INDEX);
    let mut instances = 0;
    for s in spans.iter().filter(|s| s.name == "fan" || s.name == "work") {
        match index(s) {
            Some(i) => {
                instances += 1;
                assert_eq!(user(s, "productId"), Some(Value::I64(i + 1)), "{}", s.name);
            }
            None => assert_eq!(user(s, "productId"), None, "the fan-out node span"),
        }
    }
    assert_eq!(instances, 4, "two instance spans, two work spans");
    assert_eq!(
        user(one(&spans, "openarmature.invocation"), "productId"),
        None
    );
}
