//! The graphs the worker processes serve and the parent inspects: a fan-out of
//! LLM items, and an approval that suspends.

use std::num::NonZeroUsize;
use std::sync::Arc;

use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, END};
use openarmature_harness::Harness;
use openarmature_llm::{CompletionRequest, Message, OpenAiProvider, Provider};
use openarmature_pipeline::FanOutNode;
use openarmature_restate::RestateDispatcher;

/// Fan-out concurrency: at most this many items are in flight at once (a worker
/// started with `OA_CONCURRENCY` uses that instead: the benchmark's).
pub const CONCURRENCY: usize = 8;

fn concurrency() -> usize {
    std::env::var("OA_CONCURRENCY")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CONCURRENCY)
}

state! {
    /// One item.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// The item number.
        pub item: i64,
        /// The model's label.
        pub label: String,
    }
}

state! {
    /// The batch.
    #[derive(Default)]
    pub struct Batch => BatchUpdate {
        /// The items.
        pub items: Vec<i64>,
        /// One label per item, in item order.
        pub labels: Vec<String> => append,
        /// The worker that ran the fan-out's parent turn.
        pub prepared_by: String,
    }
}

state! {
    /// An approval.
    #[derive(Default)]
    pub struct Approval => ApprovalUpdate {
        /// Names the awaited signal.
        pub ticket: String,
        /// Set by the signal.
        pub approved: bool,
        /// The worker that ran the first node.
        pub drafted_by: String,
        /// The worker that ran the last node.
        pub finished_by: String,
    }
}

/// This process's worker name (`parent` in the test process).
pub fn me() -> String {
    std::env::var("OA_RESTATE_WORKER").unwrap_or_else(|_| "parent".into())
}

/// The label the mock answers for `item`.
pub fn label(item: i64) -> String {
    format!("label-{item}")
}

/// The per-item subgraph: one LLM call.
pub fn classify(mock_url: &str) -> CompiledGraph<Item> {
    let provider = Arc::new(OpenAiProvider::builder(mock_url, "m").build().unwrap());
    GraphBuilder::new(Item::default())
        .add_node("classify", move |s: Arc<Item>, _c: NodeCtx| {
            let provider = Arc::clone(&provider);
            async move {
                let prompt = format!("item={} worker={}", s.item, me());
                let request = CompletionRequest::new(vec![Message::user(prompt)]);
                let response = provider.complete(&request).await?;
                let label = response.content().unwrap_or_default().to_owned();
                Ok(ItemUpdate::default().label(label))
            }
        })
        .add_edge("classify", END)
        .entry("classify")
        .compile()
        .unwrap()
}

/// A node recording the worker that ran it, then the fan-out over the items: in
/// this process, or each instance a Restate job (`dispatcher`).
pub fn batch(
    store: Arc<dyn Checkpointer>,
    mock_url: &str,
    dispatcher: Option<RestateDispatcher>,
) -> Harness<Batch> {
    let mut fan = FanOutNode::<Batch, Item>::over_items(
        classify(mock_url),
        "items",
        "item",
        "label",
        "labels",
    )
    .concurrency(NonZeroUsize::new(concurrency()));
    if let Some(dispatcher) = dispatcher {
        fan = fan.dispatcher(Arc::new(dispatcher));
    }
    let graph = GraphBuilder::new(Batch::default())
        .add_node("prepare", |_s: Arc<Batch>, _c: NodeCtx| async move {
            Ok(BatchUpdate::default().prepared_by(me()))
        })
        .add_node("fan", fan)
        .add_edge("prepare", "fan")
        .add_edge("fan", END)
        .entry("prepare")
        .checkpointer(store)
        .compile()
        .unwrap();
    Harness::stateless(graph, |payload| {
        let items = serde_json::from_value(payload["items"].clone())?;
        Ok(Batch {
            items,
            ..Batch::default()
        })
    })
}

pub fn approval(store: Arc<dyn Checkpointer>) -> Harness<Approval> {
    let graph = GraphBuilder::new(Approval::default())
        .add_node("draft", |_s: Arc<Approval>, _c: NodeCtx| async move {
            Ok(ApprovalUpdate::default().drafted_by(me()))
        })
        .add_node("gate", |s: Arc<Approval>, _c: NodeCtx| async move {
            if s.approved {
                Ok(ApprovalUpdate::default())
            } else {
                suspend(SignalDescriptor::new(format!("approve-{}", s.ticket)))
            }
        })
        .add_node("finish", |_s: Arc<Approval>, _c: NodeCtx| async move {
            Ok(ApprovalUpdate::default().finished_by(me()))
        })
        .add_edge("draft", "gate")
        .add_edge("gate", "finish")
        .add_edge("finish", END)
        .entry("draft")
        .checkpointer(store)
        .compile()
        .unwrap();
    Harness::stateless(graph, |payload| {
        Ok(Approval {
            ticket: payload["ticket"].as_str().unwrap_or_default().to_owned(),
            ..Approval::default()
        })
    })
}
