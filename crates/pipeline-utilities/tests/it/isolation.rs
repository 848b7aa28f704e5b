//! pipeline-utilities §6.3 — failure isolation: degraded updates, the framework
//! event, `catch` through carriers, `predicate`, `on_caught`, uncategorised errors,
//! and the engine's attempt model for a recovered node.

use std::error::Error as StdError;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{
    category_of, middleware_fn, CategorizedError, CauseLink, CompiledGraph, DynSchema, DynState,
    DynUpdate, FieldType, GraphBuilder, Middleware, NodeCtx, NodeError, Phase, State, StateView,
    SubgraphFailure, SubgraphNode, END,
};
use openarmature_pipeline::FailureIsolationMiddleware;
use serde_json::json;

use crate::common::*;

/// A shared log.
type Shared<T> = Arc<Mutex<Vec<T>>>;

fn link(category: Option<&str>, message: &str, carrier: bool) -> CauseLink {
    CauseLink {
        category: category.map(str::to_owned),
        message: message.to_owned(),
        carrier,
    }
}

/// `extract` (wrapped in `middleware`) → `next` → END, with a recording observer.
fn pipeline(
    extract: impl openarmature_graph::Node<S>,
    middleware: Arc<dyn Middleware<S>>,
) -> (CompiledGraph<S>, Events) {
    then_next("extract", extract, vec![middleware])
}

fn start() -> S {
    S {
        log: vec!["start".into()],
        ..S::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_state_derived_degraded_update_merges_and_routing_continues() {
    let calls = counter();
    let isolate = FailureIsolationMiddleware::<S>::new("extract_failed", |s: &S| {
        SUpdate::default()
            .result(format!("degraded after {}", s.log.len()))
            .log(vec!["degraded".into()])
    });
    let (graph, events) = pipeline(
        failing(&calls, Some("provider_unavailable")),
        Arc::new(isolate),
    );
    let completed = graph
        .invoke_with(start(), openarmature_graph::InvokeOptions::default())
        .await
        .unwrap();
    graph.drain(None).await;
    let out = completed.state;
    assert_eq!(out.result, "degraded after 1");
    assert_eq!(out.log, vec!["start", "degraded", "next"]);
    assert_eq!(count(&calls), 1);

    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    let ev = &isolation[0];
    assert_eq!(ev.event_name, "extract_failed");
    assert_eq!(&*ev.lineage.namespace, ["extract".to_owned()]);
    assert_eq!(ev.lineage.attempt_index, 0);
    assert_eq!(ev.lineage.fan_out_index, None);
    assert_eq!(ev.lineage.branch_name, None);
    assert_eq!(ev.pre_state.to_json(), State::to_json(&start()));
    assert_eq!(
        ev.post_state,
        json!({"log": ["degraded"], "result": "degraded after 1"})
    );
    assert_eq!(
        ev.caught_exception.category.as_deref(),
        Some("provider_unavailable")
    );
    assert_eq!(ev.caught_exception.message, "fail 0");
    assert_eq!(
        ev.caught_exception.chain,
        vec![link(Some("provider_unavailable"), "fail 0", false)]
    );
    assert_eq!(&*ev.invocation_id, completed.invocation_id.as_str());

    // Event order: the isolation event sits between the node's started and its
    // completed (which carries the merged degraded state), before `next` starts.
    assert_eq!(
        trace(&events),
        vec![
            "started extract#0",
            "isolation extract_failed#0",
            "completed extract#0 ok",
            "started next#0",
            "completed next#0 ok",
        ]
    );
    let extract = node_events_of(&events, "extract");
    assert_eq!(
        extract[1].post_state.as_ref().unwrap().to_json()["result"],
        "degraded after 1"
    );
}

fn dyn_schema() -> Arc<DynSchema> {
    DynSchema::builder()
        .field("result", FieldType::String, json!(""))
        .field("log", FieldType::List(None), json!([]))
        .reducer("log", openarmature_graph::reducers::Reducer::Append)
        .build()
}

#[tokio::test(start_paused = true)]
async fn a_static_degraded_update_on_dyn_state_merges_and_routing_continues() {
    let schema = dyn_schema();
    let (registration, events) = recorder();
    let isolate = FailureIsolationMiddleware::<DynState>::with_update(
        "extract_failed",
        DynUpdate::new().set("result", json!("degraded")),
    );
    let graph = GraphBuilder::new(schema.defaults())
        .add_node("extract", |_s: Arc<DynState>, _c: NodeCtx| async {
            Err::<DynUpdate, NodeError>(
                CategorizedError::new(
                    openarmature_graph::Category::PROVIDER_INVALID_RESPONSE,
                    "garbled",
                )
                .into(),
            )
        })
        .add_node("next", |_s: Arc<DynState>, _c: NodeCtx| async {
            Ok::<DynUpdate, NodeError>(DynUpdate::new().set("log", json!(["next"])))
        })
        .node_middleware("extract", Arc::new(isolate))
        .add_edge("extract", "next")
        .add_edge("next", END)
        .entry("extract")
        .observer(registration)
        .compile()
        .unwrap();
    let out = graph.invoke(schema.defaults()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.get("result"), Some(&json!("degraded")));
    assert_eq!(out.get("log"), Some(&json!(["next"])));
    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    assert_eq!(isolation[0].post_state, json!({"result": "degraded"}));
    assert_eq!(
        isolation[0].pre_state.to_json(),
        json!({"result": "", "log": []})
    );
    assert_eq!(
        isolation[0].caught_exception.category.as_deref(),
        Some("provider_invalid_response")
    );
}

#[tokio::test(start_paused = true)]
async fn a_successful_chain_passes_through_without_an_event() {
    let calls = counter();
    let (graph, events) = pipeline(
        flaky("extract", &calls, 0, None),
        Arc::new(FailureIsolationMiddleware::<S>::new("x", |_| {
            SUpdate::default().result("degraded".into())
        })),
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.result, "ok");
    assert!(isolation_events(&events).is_empty());
}

/// `sub` (subgraph whose `call` raises `error`, wrapped in `middleware`) → `next`.
fn subgraph_pipeline(
    calls: &Arc<AtomicU32>,
    error: impl Fn(u32) -> NodeError + Send + Sync + 'static,
    middleware: Arc<dyn Middleware<S>>,
) -> (CompiledGraph<S>, Events) {
    let child = single_node::<Child>("call", child_flaky(calls, u32::MAX, error));
    then_next(
        "sub",
        SubgraphNode::<S, Child>::new(child),
        vec![middleware],
    )
}

fn unavailable(n: u32) -> NodeError {
    CategorizedError::new(
        openarmature_graph::Category::PROVIDER_UNAVAILABLE,
        format!("down {n}"),
    )
    .into()
}

#[tokio::test(start_paused = true)]
async fn catch_matches_the_derived_category_through_a_subgraph_carrier() {
    let calls = counter();
    let isolate = FailureIsolationMiddleware::<S>::new("sub_failed", |_| {
        SUpdate::default().result("degraded".into())
    })
    .catch(["provider_rate_limit", "provider_unavailable"]);
    let (graph, events) = subgraph_pipeline(&calls, unavailable, Arc::new(isolate));
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.result, "degraded");
    assert_eq!(out.log, vec!["next"]);

    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    let caught = &isolation[0].caught_exception;
    assert_eq!(caught.category.as_deref(), Some("provider_unavailable"));
    assert_eq!(caught.message, "down 0");
    assert_eq!(caught.chain.len(), 2, "{:?}", caught.chain);
    assert!(caught.chain[0].carrier);
    assert_eq!(caught.chain[0].category.as_deref(), Some("node_exception"));
    assert_eq!(
        caught.chain[1],
        link(Some("provider_unavailable"), "down 0", false)
    );
    assert_eq!(&*isolation[0].lineage.namespace, ["sub".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn catch_not_matching_propagates_and_emits_no_event() {
    let calls = counter();
    let caught = counter();
    let c = Arc::clone(&caught);
    let isolate = FailureIsolationMiddleware::<S>::new("sub_failed", |_| SUpdate::default())
        .catch(["provider_rate_limit"])
        .on_caught(move |_e: Arc<dyn StdError + Send + Sync>| {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async {}
        });
    let (graph, events) = subgraph_pipeline(&calls, unavailable, Arc::new(isolate));
    let err = graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;
    assert_eq!(err.original_message(), "down 0");
    assert_eq!(err.node(), "sub");
    assert!(isolation_events(&events).is_empty());
    assert_eq!(count(&caught), 0);
    assert!(node_events_of(&events, "next").is_empty());
}

#[tokio::test(start_paused = true)]
async fn predicate_sees_the_surface_error() {
    // Through a subgraph the surface error is the carrier.
    let seen: Shared<(bool, Option<String>)> = Arc::default();
    let s = Arc::clone(&seen);
    let isolate = FailureIsolationMiddleware::<S>::new("sub_failed", |_| SUpdate::default())
        .predicate(move |e: &(dyn StdError + 'static)| {
            s.lock().unwrap().push((
                e.is::<SubgraphFailure>(),
                category_of(e).map(|c| c.as_str().to_owned()),
            ));
            e.is::<SubgraphFailure>()
        });
    let (graph, events) = subgraph_pipeline(&counter(), unavailable, Arc::new(isolate));
    graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(true, Some("node_exception".to_owned()))]
    );
    assert_eq!(isolation_events(&events).len(), 1);

    // A surface-category predicate misses the carrier-wrapped transient.
    let isolate = FailureIsolationMiddleware::<S>::new("sub_failed", |_| SUpdate::default())
        .predicate(|e: &(dyn StdError + 'static)| {
            category_of(e).map(|c| c.as_str()) == Some("provider_unavailable")
        });
    let (graph, events) = subgraph_pipeline(&counter(), unavailable, Arc::new(isolate));
    graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;
    assert!(isolation_events(&events).is_empty());

    // At node level the surface error is the raw one.
    let isolate = FailureIsolationMiddleware::<S>::new("x", |_| SUpdate::default()).predicate(
        |e: &(dyn StdError + 'static)| {
            category_of(e).map(|c| c.as_str()) == Some("provider_unavailable")
        },
    );
    let (graph, _) = pipeline(
        failing(&counter(), Some("provider_unavailable")),
        Arc::new(isolate),
    );
    graph.invoke(S::default()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn catch_and_predicate_compose_as_a_conjunction() {
    let make = |catch: &'static str, pass: bool| {
        FailureIsolationMiddleware::<S>::new("x", |_| SUpdate::default().result("degraded".into()))
            .catch([catch])
            .predicate(move |_e: &(dyn StdError + 'static)| pass)
    };
    for (catch, pass, degrades) in [
        ("provider_unavailable", true, true),
        ("provider_unavailable", false, false),
        ("provider_rate_limit", true, false),
    ] {
        let (graph, events) = pipeline(
            failing(&counter(), Some("provider_unavailable")),
            Arc::new(make(catch, pass)),
        );
        let result = graph.invoke(S::default()).await;
        graph.drain(None).await;
        assert_eq!(result.is_ok(), degrades, "catch={catch} predicate={pass}");
        assert_eq!(isolation_events(&events).len(), usize::from(degrades));
    }
}

#[tokio::test(start_paused = true)]
async fn on_caught_runs_once_after_the_event_with_the_original_error() {
    let (registration, events) = recorder();
    let record: Shared<(String, Option<String>, bool)> = Arc::default();
    let r = Arc::clone(&record);
    let observed = Arc::clone(&events);
    let isolate = FailureIsolationMiddleware::<S>::new("extract_failed", |_| SUpdate::default())
        .on_caught(move |e: Arc<dyn StdError + Send + Sync>| {
            let r = Arc::clone(&r);
            let observed = Arc::clone(&observed);
            async move {
                // The event was dispatched before this callback: give the serial
                // queue (virtual) time to deliver it.
                let mut delivered = false;
                for _ in 0..100 {
                    if !isolation_events(&observed).is_empty() {
                        delivered = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let category = e
                    .downcast_ref::<CategorizedError>()
                    .and_then(|c| c.category().map(|c| c.as_str().to_owned()));
                r.lock().unwrap().push((e.to_string(), category, delivered));
            }
        });
    let calls = counter();
    let graph = GraphBuilder::new(S::default())
        .add_node("extract", failing(&calls, Some("provider_invalid_request")))
        .node_middleware("extract", Arc::new(isolate))
        .add_edge("extract", END)
        .entry("extract")
        .observer(registration)
        .compile()
        .unwrap();
    graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(
        *record.lock().unwrap(),
        vec![(
            "fail 0".to_owned(),
            Some("provider_invalid_request".to_owned()),
            true
        )]
    );
    assert_eq!(isolation_events(&events).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_uncategorised_error_has_no_category_and_catch_does_not_match_it() {
    let node =
        |_s: Arc<S>, _c: NodeCtx| async { Err::<SUpdate, NodeError>("plain failure".into()) };

    let (graph, events) = pipeline(
        node,
        Arc::new(FailureIsolationMiddleware::<S>::new("x", |_| {
            SUpdate::default().result("degraded".into())
        })),
    );
    assert_eq!(graph.invoke(S::default()).await.unwrap().result, "degraded");
    graph.drain(None).await;
    let isolation = isolation_events(&events);
    assert_eq!(isolation.len(), 1);
    assert_eq!(isolation[0].caught_exception.category, None);
    assert_eq!(isolation[0].caught_exception.message, "plain failure");
    assert_eq!(
        isolation[0].caught_exception.chain,
        vec![link(None, "plain failure", false)]
    );

    let (graph, events) = pipeline(
        node,
        Arc::new(
            FailureIsolationMiddleware::<S>::new("x", |_| SUpdate::default())
                .catch(["provider_unavailable", "node_exception"]),
        ),
    );
    let err = graph.invoke(S::default()).await.unwrap_err();
    graph.drain(None).await;
    assert_eq!(err.original_message(), "plain failure");
    assert!(isolation_events(&events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn derived_category_is_the_outermost_categorised_non_carrier_link() {
    // A re-categorising wrapper over a transient: the outermost wins; the chain keeps both.
    let node = |_s: Arc<S>, _c: NodeCtx| async {
        let inner =
            CategorizedError::new(openarmature_graph::Category::PROVIDER_RATE_LIMIT, "slow");
        Err::<SUpdate, NodeError>(
            CategorizedError::new(
                openarmature_graph::Category::PROVIDER_INVALID_RESPONSE,
                "bad json",
            )
            .with_source(inner)
            .into(),
        )
    };
    let (graph, events) = pipeline(
        node,
        Arc::new(
            FailureIsolationMiddleware::<S>::new("x", |_| SUpdate::default())
                .catch(["provider_invalid_response"]),
        ),
    );
    graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    let caught = &isolation_events(&events)[0].caught_exception;
    assert_eq!(
        caught.category.as_deref(),
        Some("provider_invalid_response")
    );
    assert_eq!(caught.message, "bad json");
    assert_eq!(
        caught.chain,
        vec![
            link(Some("provider_invalid_response"), "bad json", false),
            link(Some("provider_rate_limit"), "slow", false),
        ]
    );
}

/// Catches any failure of `next` and returns `result = "recovered"`.
fn recover() -> impl Middleware<S> {
    middleware_fn(|state: Arc<S>, ctx, next| {
        Box::pin(async move {
            match next.run(state, ctx).await {
                Ok(update) => Ok(update),
                Err(_) => Ok(SUpdate::default().result("recovered".into())),
            }
        })
    })
}

#[tokio::test(start_paused = true)]
async fn a_recovered_node_completes_with_post_state_and_no_error() {
    let calls = counter();
    let (graph, events) = pipeline(
        failing(&calls, Some("provider_unavailable")),
        Arc::new(recover()),
    );
    let out = graph.invoke(S::default()).await.unwrap();
    graph.drain(None).await;
    assert_eq!(out.result, "recovered");
    assert_eq!(out.log, vec!["next"]);
    let evs = node_events_of(&events, "extract");
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].phase, Phase::Started);
    assert_eq!(evs[1].phase, Phase::Completed);
    assert!(evs[1].error.is_none(), "{:?}", evs[1].error);
    assert_eq!(
        evs[1].post_state.as_ref().expect("post_state").to_json()["result"],
        "recovered"
    );
    assert!(isolation_events(&events).is_empty());
}

/// Keeps the type-erased `StateView` import exercised for downcasting.
#[tokio::test(start_paused = true)]
async fn the_event_pre_state_downcasts_to_the_typed_state() {
    let (graph, events) = pipeline(
        failing(&counter(), Some("provider_unavailable")),
        Arc::new(FailureIsolationMiddleware::<S>::new("x", |_| {
            SUpdate::default()
        })),
    );
    graph.invoke(start()).await.unwrap();
    graph.drain(None).await;
    let ev = &isolation_events(&events)[0];
    let pre: &dyn StateView = &*ev.pre_state;
    assert_eq!(pre.as_any().downcast_ref::<S>(), Some(&start()));
}
