//! Observability §3.4 through the composite nodes: each fan-out instance and each
//! parallel branch gets its own copy of the invocation metadata, seeded at dispatch;
//! instance middleware writes into its instance's copy; a retried instance or node
//! starts its next attempt without the failed attempt's writes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::single_node;
use openarmature_graph::{
    get_invocation_metadata, middleware_fn, set_invocation_metadata, CategorizedError,
    CompiledGraph, GraphBuilder, InvokeOptions, Middleware, NodeCtx, END,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_pipeline::{
    Branch, CallBranch, FanOutNode, ParallelBranchesNode, RetryMiddleware,
};
use serde_json::{json, Value};

openarmature_graph::state! {
    /// One instance.
    #[derive(Default, PartialEq)]
    pub struct Item => ItemUpdate {
        /// The item.
        pub x: i64,
        /// The instance's metadata read, as JSON text.
        pub seen: String,
    }
}

openarmature_graph::state! {
    /// The parent graph.
    #[derive(Default, PartialEq)]
    pub struct Batch => BatchUpdate {
        /// The items.
        pub xs: Vec<i64>,
        /// Reads collected from instances or branches, as JSON text.
        pub seen: Vec<String> => append,
        /// The read after the join.
        pub after: String,
    }
}

fn text(v: &serde_json::Map<String, Value>) -> String {
    Value::Object(v.clone()).to_string()
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn options() -> InvokeOptions {
    InvokeOptions::default().metadata(json!({"tenantId": "T1"}).as_object().cloned().unwrap())
}

/// Instance middleware: augments with the instance's item, like the §3.4 per-item
/// identifier pattern.
fn tag_item() -> impl Middleware<Item> {
    middleware_fn(|state: Arc<Item>, ctx, next| {
        Box::pin(async move {
            set_invocation_metadata([("item", json!(state.x))])?;
            next.run(state, ctx).await
        })
    })
}

fn parent(node: impl openarmature_graph::Node<Batch>) -> CompiledGraph<Batch> {
    GraphBuilder::new(Batch::default())
        .add_node("fan", node)
        .add_node("after", |_s: Arc<Batch>, _c: NodeCtx| async move {
            Ok(BatchUpdate::default().after(text(&get_invocation_metadata())))
        })
        .add_edge("fan", "after")
        .add_edge("after", END)
        .entry("fan")
        .compile()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn fan_out_instances_get_isolated_copies_and_failed_attempts_roll_back() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let worker = single_node::<Item>("work", move |s: Arc<Item>, _c: NodeCtx| {
        let counter = Arc::clone(&counter);
        async move {
            let seen = text(&get_invocation_metadata());
            // Item 2's first attempt writes, then fails: its retry must not see it.
            if s.x == 2 && counter.fetch_add(1, Ordering::SeqCst) == 0 {
                set_invocation_metadata([("leaked", json!(true))])?;
                return Err(CategorizedError::new(
                    openarmature_graph::Category::PROVIDER_UNAVAILABLE,
                    "flaky",
                )
                .into());
            }
            Ok(ItemUpdate::default().seen(seen))
        }
    });
    let retry = RetryConfig::default()
        .max_attempts(2)
        .backoff(Constant(Duration::ZERO));
    let fan = FanOutNode::over_items(worker, "xs", "x", "seen", "seen")
        .instance_middleware(Arc::new(RetryMiddleware::new(retry)))
        .instance_middleware(Arc::new(tag_item()));
    let done = parent(fan)
        .invoke_with(
            Batch {
                xs: vec![1, 2, 3],
                ..Batch::default()
            },
            options(),
        )
        .await
        .unwrap()
        .state;
    let seen: Vec<Value> = done.seen.iter().map(|s| parse(s)).collect();
    assert_eq!(
        seen,
        vec![
            json!({"tenantId": "T1", "item": 1}),
            json!({"tenantId": "T1", "item": 2}),
            json!({"tenantId": "T1", "item": 3}),
        ]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "item 2 ran twice");
    assert_eq!(parse(&done.after), json!({"tenantId": "T1"}));
}

fn branch(name: &'static str) -> Branch<Batch> {
    Branch::call(CallBranch::new(
        move |_s: Arc<Batch>, _c: NodeCtx| async move {
            set_invocation_metadata([("branch", json!(name))])?;
            tokio::task::yield_now().await;
            Ok(BatchUpdate::default().seen(vec![text(&get_invocation_metadata())]))
        },
    ))
}

#[tokio::test(start_paused = true)]
async fn parallel_branches_write_to_their_own_copies() {
    let node = ParallelBranchesNode::new()
        .branch("a", branch("a"))
        .branch("b", branch("b"));
    let done = parent(node)
        .invoke_with(Batch::default(), options())
        .await
        .unwrap()
        .state;
    let mut seen: Vec<Value> = done.seen.iter().map(|s| parse(s)).collect();
    seen.sort_by_key(Value::to_string);
    assert_eq!(
        seen,
        vec![
            json!({"tenantId": "T1", "branch": "a"}),
            json!({"tenantId": "T1", "branch": "b"}),
        ]
    );
    assert_eq!(parse(&done.after), json!({"tenantId": "T1"}));
}
