//! Observability §3.4 in the engine: invocation metadata read and written from node
//! bodies and middleware — visibility to later nodes and serial subgraphs, isolation
//! of dispatched instances, rollback of a failed attempt's writes, call-site
//! validation, ambient access outside an invocation, and the augmentation event.

use std::sync::{Arc, Mutex};

use crate::support::Reattempt;
use openarmature_graph::{
    category_of, get_invocation_metadata, observer_fn, set_invocation_metadata, state, Boundary,
    CategorizedError, CompiledGraph, GraphBuilder, InvokeOptions, MetadataError, NodeCtx,
    NodeFuture, ObserverEvent, Registration, StateRef, END,
};
use openarmature_testkit::graphs::single_node;
use serde_json::{json, Map, Value};

state! {
    /// What the nodes read.
    #[derive(Default, PartialEq)]
    pub struct Doc => DocUpdate {
        /// Each read, as JSON text, in order.
        pub reads: Vec<String> => append,
    }
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn read(meta: &Map<String, Value>) -> DocUpdate {
    DocUpdate::default().reads(vec![Value::Object(meta.clone()).to_string()])
}

fn reads(doc: &Doc) -> Vec<Value> {
    doc.reads
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

fn baseline() -> InvokeOptions {
    InvokeOptions::default().metadata(map(json!({"tenantId": "T1"})))
}

async fn run(graph: &CompiledGraph<Doc>, options: InvokeOptions) -> Doc {
    graph
        .invoke_with(Doc::default(), options)
        .await
        .unwrap()
        .state
}

#[tokio::test]
async fn writes_are_visible_to_later_nodes_and_reads_are_snapshots() {
    let graph = GraphBuilder::new(Doc::default())
        .add_node("write", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            let before = ctx.invocation_metadata();
            ctx.set_invocation_metadata([("audit", json!("fraud"))])?;
            // The ambient helper writes to the same context.
            set_invocation_metadata([("seats", json!(3))])?;
            // A snapshot taken earlier does not change.
            assert!(before.get("audit").is_none());
            Ok(read(&get_invocation_metadata()))
        })
        .add_node("later", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            Ok(read(&ctx.invocation_metadata()))
        })
        .add_edge("write", "later")
        .add_edge("later", END)
        .entry("write")
        .compile()
        .unwrap();
    let done = run(&graph, baseline()).await;
    let want = json!({"tenantId": "T1", "audit": "fraud", "seats": 3});
    assert_eq!(reads(&done), vec![want.clone(), want]);

    // A fresh invocation starts from its own caller metadata again.
    let again = run(&graph, InvokeOptions::default()).await;
    assert_eq!(reads(&again)[1], json!({"audit": "fraud", "seats": 3}));
}

#[tokio::test]
async fn serial_subgraph_writes_flow_on_in_the_parent_context() {
    let child = single_node::<Doc>("inner", |_s: Arc<Doc>, _c: NodeCtx| async move {
        set_invocation_metadata([("from_child", json!(true))])?;
        Ok(read(&get_invocation_metadata()))
    });
    let graph = GraphBuilder::new(Doc::default())
        .add_node(
            "sub",
            openarmature_graph::SubgraphNode::<Doc, Doc>::new(child),
        )
        .add_node("after", |_s: Arc<Doc>, _c: NodeCtx| async move {
            Ok(read(&get_invocation_metadata()))
        })
        .add_edge("sub", "after")
        .add_edge("after", END)
        .entry("sub")
        .compile()
        .unwrap();
    let done = run(&graph, baseline()).await;
    assert_eq!(
        reads(&done).last(),
        Some(&json!({"tenantId": "T1", "from_child": true}))
    );
}

type Body = NodeFuture<'static, Doc>;

/// Runs `child` once per index as concurrent dispatched instances (what a fan-out
/// node does): each writes its own `item` and reads back.
fn dispatcher(child: CompiledGraph<Doc>) -> impl Fn(Arc<Doc>, NodeCtx) -> Body + Send + Sync {
    move |state: Arc<Doc>, ctx: NodeCtx| {
        let child = child.clone();
        Box::pin(async move {
            ctx.set_invocation_metadata([("before_fork", json!(1))])?;
            let runs = (0..3).map(|i| {
                let ictx = ctx.enter(Arc::clone(&state) as StateRef, Boundary::FanOutInstance(i));
                let child = child.clone();
                async move {
                    ictx.set_invocation_metadata([("item", json!(i))])?;
                    child.run_within(Doc::default(), &ictx).await
                }
            });
            let mut all = Vec::new();
            for done in futures::future::join_all(runs).await {
                all.extend(done?.reads);
            }
            Ok(DocUpdate::default().reads(all))
        })
    }
}

#[tokio::test]
async fn dispatched_instances_are_isolated_and_nothing_flows_back() {
    let child = single_node::<Doc>("work", |_s: Arc<Doc>, _c: NodeCtx| async move {
        tokio::task::yield_now().await;
        Ok(read(&get_invocation_metadata()))
    });
    let graph = GraphBuilder::new(Doc::default())
        .add_node("fan", dispatcher(child))
        .add_node("after", |_s: Arc<Doc>, _c: NodeCtx| async move {
            Ok(read(&get_invocation_metadata()))
        })
        .add_edge("fan", "after")
        .add_edge("after", END)
        .entry("fan")
        .compile()
        .unwrap();
    let done = run(&graph, baseline()).await;
    let got = reads(&done);
    for (i, instance) in got[..3].iter().enumerate() {
        assert_eq!(
            instance,
            &json!({"tenantId": "T1", "before_fork": 1, "item": i}),
            "each instance sees its own write and the pre-dispatch baseline only"
        );
    }
    assert_eq!(got[3], json!({"tenantId": "T1", "before_fork": 1}));
}

#[tokio::test]
async fn a_failed_attempts_writes_are_rolled_back() {
    let graph = GraphBuilder::new(Doc::default())
        .add_node("retried", |_s: Arc<Doc>, ctx: NodeCtx| async move {
            let seen = get_invocation_metadata();
            if ctx.attempt_index() == 0 {
                set_invocation_metadata([("marker", json!("first"))])?;
                return Err(CategorizedError::new(
                    openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                    "flaky",
                )
                .into());
            }
            set_invocation_metadata([("marker", json!("second"))])?;
            Ok(read(&seen))
        })
        .node_middleware("retried", Arc::new(Reattempt { attempts: 2 }))
        .add_node("downstream", |_s: Arc<Doc>, _c: NodeCtx| async move {
            Ok(read(&get_invocation_metadata()))
        })
        .add_edge("retried", "downstream")
        .add_edge("downstream", END)
        .entry("retried")
        .compile()
        .unwrap();
    let done = run(&graph, baseline()).await;
    assert_eq!(
        reads(&done),
        vec![
            json!({"tenantId": "T1"}),
            json!({"tenantId": "T1", "marker": "second"})
        ]
    );
}

#[tokio::test]
async fn invalid_entries_are_rejected_at_the_call_site_all_or_nothing() {
    let graph = single_node::<Doc>("bad", |_s: Arc<Doc>, ctx: NodeCtx| async move {
        let err = ctx
            .set_invocation_metadata([("fine", json!(1)), ("step", json!("checkout"))])
            .unwrap_err();
        assert!(matches!(err, MetadataError::ReservedName { ref key } if key == "step"));
        let err = set_invocation_metadata([("k", json!({"nested": 1}))]).unwrap_err();
        assert!(matches!(err, MetadataError::InvalidValue { .. }));
        // Nothing of the rejected calls was merged.
        assert_eq!(ctx.invocation_metadata().get("fine"), None);
        set_invocation_metadata([("gen_ai.system", json!("openai"))])?;
        Ok(DocUpdate::default())
    });
    let err = graph
        .invoke_with(Doc::default(), baseline())
        .await
        .unwrap_err();
    assert_eq!(err.category_name(), "node_exception");
    let cause = std::error::Error::source(&err).unwrap();
    assert_eq!(
        category_of(cause).map(|c| c.as_str()),
        Some("invocation_metadata_invalid")
    );
    assert!(cause.downcast_ref::<MetadataError>().is_some());
}

/// An observer named `name` keeping every event it is delivered, and those events.
fn every_event(name: &'static str) -> (Registration, Arc<Mutex<Vec<Arc<ObserverEvent>>>>) {
    let events: Arc<Mutex<Vec<Arc<ObserverEvent>>>> = Arc::default();
    let sink = Arc::clone(&events);
    let registration = Registration::new(
        name,
        observer_fn(move |e: Arc<ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                sink.lock().unwrap().push(e);
                Ok(())
            }
        }),
    );
    (registration, events)
}

#[tokio::test]
async fn invalid_caller_metadata_is_rejected_at_invoke_before_any_work() {
    let ran = Arc::new(Mutex::new(0_u32));
    let (registration, events) = every_event("count");
    let ran_in = Arc::clone(&ran);
    let graph = GraphBuilder::new(Doc::default())
        .add_node("only", move |_s: Arc<Doc>, _ctx: NodeCtx| {
            let ran = Arc::clone(&ran_in);
            async move {
                *ran.lock().unwrap() += 1;
                Ok(DocUpdate::default())
            }
        })
        .add_edge("only", END)
        .entry("only")
        .observer(registration)
        .compile()
        .unwrap();
    for (bad, key) in [
        (
            json!({"tenantId": "T1", "openarmature.node": "x"}),
            "openarmature.node",
        ),
        (json!({"correlation_id": "c"}), "correlation_id"),
        (json!({"nested": {"a": 1}}), "nested"),
        (json!({"mixed": [1, "two"]}), "mixed"),
    ] {
        let options = InvokeOptions::default()
            .metadata(map(bad))
            .invocation_id("inv-bad");
        let err = graph
            .invoke_with(Doc::default(), options)
            .await
            .unwrap_err();
        assert_eq!(err.category_name(), "invocation_metadata_invalid");
        assert_eq!(err.invocation_id(), "inv-bad");
        let cause = std::error::Error::source(&err).unwrap();
        assert_eq!(cause.downcast_ref::<MetadataError>().unwrap().key(), key);
    }
    graph.drain(None).await;
    assert_eq!(*ran.lock().unwrap(), 0, "no node ran");
    assert_eq!(events.lock().unwrap().len(), 0, "no event was emitted");
    // Valid metadata still runs.
    run(&graph, baseline()).await;
    graph.drain(None).await;
    assert_eq!(*ran.lock().unwrap(), 1);
    assert!(!events.lock().unwrap().is_empty());
}

#[tokio::test]
async fn outside_an_invocation_reads_are_empty_and_writes_are_dropped() {
    assert!(get_invocation_metadata().is_empty());
    set_invocation_metadata([("tenantId", json!("acme"))]).unwrap();
    assert!(get_invocation_metadata().is_empty());
    assert!(set_invocation_metadata([("openarmature.x", json!(1))]).is_err());
    // A task spawned from a node body is outside the node's context.
    let graph = single_node::<Doc>("spawns", |_s: Arc<Doc>, _c: NodeCtx| async move {
        let spawned = tokio::spawn(async { get_invocation_metadata().is_empty() });
        assert!(spawned.await.unwrap());
        Ok(read(&get_invocation_metadata()))
    });
    assert_eq!(
        reads(&run(&graph, baseline()).await),
        vec![json!({"tenantId": "T1"})]
    );
}

#[tokio::test]
async fn writes_dispatch_an_augmentation_event_and_node_events_carry_the_view() {
    let (registration, events) = every_event("recorder");
    let graph = GraphBuilder::new(Doc::default())
        .add_node("write", |_s: Arc<Doc>, _c: NodeCtx| async move {
            set_invocation_metadata([("requestId", json!("r1"))])?;
            Ok(DocUpdate::default())
        })
        .add_edge("write", END)
        .entry("write")
        .observer(registration)
        .compile()
        .unwrap();
    run(&graph, baseline()).await;
    graph.drain(None).await;
    let events = events.lock().unwrap();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &**e {
            ObserverEvent::Node(n) => format!("{}:{}", n.phase.as_str(), n.metadata.len()),
            ObserverEvent::MetadataAugmented(m) => {
                assert_eq!(
                    m.entries.as_arc().as_ref(),
                    &map(json!({"requestId": "r1"}))
                );
                assert_eq!(m.metadata.len(), 2);
                assert_eq!(&*m.lineage.namespace, ["write".to_owned()]);
                "augmented".into()
            }
            other => format!("{other:?}"),
        })
        .collect();
    // Delivered between the writer's started and completed events; the completed
    // event's snapshot includes the write.
    assert_eq!(kinds, ["started:1", "augmented", "completed:2"]);
}
