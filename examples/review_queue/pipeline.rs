//! The review pipeline of the `review_queue` example (shared with the workspace's
//! cross-process test, which runs it in two OS processes).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use openarmature::graph::suspension::{suspend, Outcome, SignalDescriptor};
use openarmature::graph::{
    state, BoxError, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, END,
};
use openarmature::llm::{CompletionRequest, Message, OpenAiProvider, Provider, Transport};
use openarmature::pipeline::SqliteCheckpointer;
use serde::{Deserialize, Serialize};

use super::mock;

state! {
    /// One document moving through extraction and review.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// The document text.
        pub text: String,
        /// The model's label.
        pub label: String,
        /// The model's confidence in it.
        pub confidence: f64,
        /// The reviewer's label (set by the resume signal).
        pub reviewed_label: String,
        /// The label that was published.
        pub published: String,
    }
}

/// What the reviewer is asked (the descriptor's typed metadata).
#[derive(Debug, Serialize, Deserialize)]
pub struct ReviewRequest {
    /// The model's label.
    pub label: String,
    /// Its confidence.
    pub confidence: f64,
}

/// The signal the gate awaits.
pub const SIGNAL: &str = "review:doc-1";

/// The compiled pipeline, checkpointing to the SQLite database `db`.
pub fn graph(provider: Arc<OpenAiProvider>, db: &str) -> Result<CompiledGraph<Doc>, BoxError> {
    let checkpointer = SqliteCheckpointer::open(db)?;
    Ok(GraphBuilder::new(Doc::default())
        .add_node("extract", move |s: Arc<Doc>, _c: NodeCtx| {
            let provider = Arc::clone(&provider);
            async move {
                let request = CompletionRequest::new(vec![Message::user(format!(
                    "Classify this document; answer JSON {{label, confidence}}: {}",
                    s.text
                ))]);
                let response = provider.complete(&request).await?;
                let parsed: ReviewRequest =
                    serde_json::from_str(response.content().unwrap_or("{}"))?;
                Ok(DocUpdate::default()
                    .label(parsed.label)
                    .confidence(parsed.confidence))
            }
        })
        .add_node("gate", |s: Arc<Doc>, _c: NodeCtx| async move {
            if s.confidence >= 0.8 {
                return Ok(DocUpdate::default());
            }
            let ask = ReviewRequest {
                label: s.label.clone(),
                confidence: s.confidence,
            };
            suspend(SignalDescriptor::new(SIGNAL).with_metadata(&ask)?)
        })
        .add_node("publish", |s: Arc<Doc>, _c: NodeCtx| async move {
            let label = if s.reviewed_label.is_empty() {
                s.label.clone()
            } else {
                s.reviewed_label.clone()
            };
            Ok(DocUpdate::default().published(label))
        })
        .add_edge("extract", "gate")
        .add_edge("gate", "publish")
        .add_edge("publish", END)
        .entry("extract")
        .checkpointer(checkpointer)
        .compile()?)
}

/// What one run did.
pub struct Report {
    /// The lines the example prints.
    pub lines: Vec<String>,
    /// The final `published` label, when the run completed.
    pub published: Option<String>,
    /// Chat completions this process's server received.
    pub llm_requests: usize,
}

/// Runs `start` (extract, then suspend at the gate) or `resume` (find the paused run
/// by its signal and resume it with `label`) against the database `db`.
pub async fn run(command: &str, db: &str, label: &str) -> Result<Report, BoxError> {
    let server = mock::start().await?;
    let provider = OpenAiProvider::builder(server.base_url.as_str(), mock::MODEL)
        .transport(
            Transport::default()
                .no_proxy()
                .timeout(Duration::from_secs(10)),
        )
        .build()?;
    let graph = graph(Arc::new(provider), db)?;
    let mut lines = Vec::new();
    let outcome = match command {
        "start" => {
            let doc = Doc {
                text: "ACME Corp — total due 1,204.00 EUR by 30 days".into(),
                ..Doc::default()
            };
            graph.run(doc, InvokeOptions::default()).await?
        }
        "resume" => {
            // The signal coordinator's lookup: which invocation awaits this signal?
            let paused = graph.paused_records(Some(SIGNAL)).await?;
            let Some(record) = paused.first() else {
                lines.push(format!("no invocation awaits `{SIGNAL}` in {db}"));
                return Ok(Report {
                    lines,
                    published: None,
                    llm_requests: 0,
                });
            };
            if let Some(Ok(ask)) = record.descriptor.metadata_as::<ReviewRequest>() {
                lines.push(format!(
                    "reviewing `{}` (model said {} at {:.2})",
                    record.invocation_id, ask.label, ask.confidence
                ));
            }
            graph
                .resume(
                    &record.invocation_id,
                    serde_json::json!({"reviewed_label": label}),
                )
                .await?
        }
        other => return Err(format!("unknown command `{other}` (start | resume)").into()),
    };
    let published = match outcome {
        Outcome::Suspended(s) => {
            lines.push(format!(
                "suspended: invocation {} awaits `{}` at node `{}`",
                s.invocation_id, s.descriptor.signal_id, s.node_name
            ));
            lines.push(format!(
                "resume with: cargo run --example review_queue -- resume --db {db} --label receipt"
            ));
            None
        }
        Outcome::Completed(done) => {
            lines.push(format!("completed: invocation {}", done.invocation_id));
            Some(done.state.published)
        }
        _ => None,
    };
    let llm_requests = server.requests.load(Ordering::SeqCst);
    Ok(Report {
        lines,
        published,
        llm_requests,
    })
}
