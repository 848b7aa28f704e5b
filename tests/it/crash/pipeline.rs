//! The crash test's pipeline: `outline` (one LLM call) → `extract_all` (a fan-out with
//! one `extract` LLM call per item, four at a time) → `summarize` (one LLM call over
//! every result, so a lost, duplicated or misplaced item changes its answer).
//!
//! The process announces where it is on stdout, one line per event, so the parent can
//! aim its kills and tell afterwards where each landed: a graph middleware prints
//! `PHASE enter <path>` / `PHASE exit <path>` around every node attempt (instances as
//! `extract_all/extract#3`), and a Checkpointer wrapper prints `PHASE save-begin` /
//! `PHASE save-end <µs>` around every save.

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature::graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer,
};
use openarmature::graph::{
    state, BoxError, CompileError, CompiledGraph, GraphBuilder, Middleware, Next, NodeCtx,
    NodeError, State, END,
};
use openarmature::llm::{CompletionRequest, Message, OpenAiProvider, Provider};
use openarmature::pipeline::{ErrorPolicy, FanOutNode};
use serde_json::{json, Value};

state! {
    /// The whole job.
    #[derive(Default)]
    pub struct Job => JobUpdate {
        /// The input: one text per item.
        pub items: Vec<String>,
        /// Written by `outline`.
        pub outline: Value,
        /// One extraction per item, in item order (the fan-in).
        pub results: Vec<Value> => append,
        /// Failed instances (none expected).
        pub errors: Vec<Value> => append,
        /// Written by `summarize`.
        pub summary: Value,
    }
}

state! {
    /// One fan-out instance.
    #[derive(Default)]
    pub struct Item => ItemUpdate {
        /// The item's text.
        pub text: String,
        /// Its extraction.
        pub result: Value,
    }
}

/// How many items the job fans out over.
pub const ITEMS: usize = 32;

/// The request key of item `i` (the first line of its prompt; the mock counts by it).
pub fn item_key(i: usize) -> String {
    format!("item-{i:02}")
}

/// The job's input: `ITEMS` texts of about 1.5 KB each (so a record is ~100 KB and a
/// save takes long enough for kills to land inside it).
pub fn input() -> Job {
    let words = [
        "ledger", "invoice", "refund", "audit", "payment", "order", "carrier",
    ];
    let items = (0..ITEMS)
        .map(|i| {
            let body: Vec<&str> = (0..200)
                .map(|k| words[(i * 7 + k * k) % words.len()])
                .collect();
            format!("{} {}", item_key(i), body.join(" "))
        })
        .collect();
    Job {
        items,
        ..Job::default()
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "digest": {"type": "string"},
            "words": {"type": "integer"}
        },
        "required": ["key", "digest", "words"],
        "additionalProperties": false
    })
}

/// One structured-output call: the prompt's first line is `key`, the rest `text`.
async fn ask(
    provider: &OpenAiProvider,
    ctx: &NodeCtx,
    key: &str,
    text: &str,
) -> Result<Value, NodeError> {
    let request = CompletionRequest::new(vec![Message::user(format!("{key}\n{text}"))])
        .response_schema(schema())
        .in_node(ctx);
    let response = provider.complete(&request).await?;
    Ok(response.parsed.unwrap_or(Value::Null))
}

/// Prints `PHASE enter` / `PHASE exit` around every node attempt.
struct Phases;

fn path_of(ctx: &NodeCtx) -> String {
    let path = ctx.namespace().join("/");
    match ctx.fan_out_index() {
        Some(i) => format!("{path}#{i}"),
        None => path,
    }
}

impl<S: State> Middleware<S> for Phases {
    fn call<'a>(
        &'a self,
        state: Arc<S>,
        ctx: NodeCtx,
        next: Next<'a, S>,
    ) -> BoxFuture<'a, Result<S::Update, NodeError>> {
        Box::pin(async move {
            let path = path_of(&ctx);
            println!("PHASE enter {path}");
            let out = next.run(state, ctx).await;
            println!("PHASE exit {path}");
            out
        })
    }
}

/// A Checkpointer that prints `PHASE save-begin` / `PHASE save-end <µs taken>` around
/// each save.
pub struct Traced(pub Arc<dyn Checkpointer>);

impl Traced {
    fn traced<'a>(
        save: BoxFuture<'a, Result<(), BoxError>>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            println!("PHASE save-begin");
            let started = std::time::Instant::now();
            let out = save.await;
            println!("PHASE save-end {}", started.elapsed().as_micros());
            out
        })
    }
}

impl Checkpointer for Traced {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Traced::traced(self.0.save(invocation_id, record))
    }

    fn save_fan_out_internal<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Traced::traced(self.0.save_fan_out_internal(invocation_id, record))
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        self.0.load(invocation_id)
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        self.0.list(filter)
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.0.delete(invocation_id)
    }
}

/// The graph over `provider`, saving through `checkpointer`.
pub fn build(
    provider: Arc<OpenAiProvider>,
    checkpointer: Arc<dyn Checkpointer>,
) -> Result<CompiledGraph<Job>, CompileError> {
    let extract = {
        let provider = Arc::clone(&provider);
        move |item: Arc<Item>, ctx: NodeCtx| {
            let provider = Arc::clone(&provider);
            async move {
                let key = item_key(ctx.fan_out_index().unwrap_or(usize::MAX));
                let result = ask(&provider, &ctx, &key, &item.text).await?;
                Ok(ItemUpdate::default().result(result))
            }
        }
    };
    let per_item = GraphBuilder::new(Item::default())
        .add_node("extract", extract)
        .graph_middleware(Phases)
        .add_edge("extract", END)
        .entry("extract")
        .compile()?;
    let fan_out =
        FanOutNode::<Job, Item>::over_items(per_item, "items", "text", "result", "results")
            .concurrency(std::num::NonZeroUsize::new(4))
            .error_policy(ErrorPolicy::Collect)
            .errors_field("errors");
    let outline = {
        let provider = Arc::clone(&provider);
        move |job: Arc<Job>, ctx: NodeCtx| {
            let provider = Arc::clone(&provider);
            async move {
                let text = format!("{} items", job.items.len());
                Ok(JobUpdate::default().outline(ask(&provider, &ctx, "outline", &text).await?))
            }
        }
    };
    let summarize = move |job: Arc<Job>, ctx: NodeCtx| {
        let provider = Arc::clone(&provider);
        async move {
            // Every result, in fan-in order: the answer depends on all of them.
            let text = serde_json::to_string(&job.results).unwrap_or_default();
            Ok(JobUpdate::default().summary(ask(&provider, &ctx, "summarize", &text).await?))
        }
    };
    GraphBuilder::new(Job::default())
        .add_node("outline", outline)
        .add_node("extract_all", fan_out)
        .add_node("summarize", summarize)
        .graph_middleware(Phases)
        .add_edge("outline", "extract_all")
        .add_edge("extract_all", "summarize")
        .add_edge("summarize", END)
        .entry("outline")
        .checkpointer(checkpointer)
        .compile()
}
