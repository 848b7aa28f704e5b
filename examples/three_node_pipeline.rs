//! A three-node pipeline over typed state: split a document into chunks, classify
//! each chunk, and summarise — with an observer printing every node event.
//!
//! Run it with `cargo run --example three_node_pipeline`.

use std::collections::BTreeMap;
use std::sync::Arc;

use openarmature::graph::{
    observer_fn, state, CompileError, GraphBuilder, InvokeOptions, NodeCtx, ObserverEvent,
    Registration, Target, END,
};

state! {
    /// The pipeline's state. Each field names the reducer that merges node updates.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// The input text.
        pub text: String,
        /// Chunks produced by `split`; `append` concatenates updates.
        pub chunks: Vec<String> => append,
        /// Label per chunk; `merge` is a shallow map merge.
        pub labels: BTreeMap<String, String> => merge,
        /// Which nodes ran, in order.
        pub trail: Vec<String> => append,
        /// The final summary.
        pub summary: String,
    }
}

async fn split(doc: Arc<Doc>, _ctx: NodeCtx) -> Result<DocUpdate, openarmature::graph::NodeError> {
    let chunks: Vec<String> = doc
        .text
        .split(". ")
        .map(|s| s.trim_end_matches('.').to_owned())
        .collect();
    Ok(DocUpdate::default()
        .chunks(chunks)
        .trail(vec!["split".into()]))
}

async fn classify(
    doc: Arc<Doc>,
    _ctx: NodeCtx,
) -> Result<DocUpdate, openarmature::graph::NodeError> {
    let labels = doc
        .chunks
        .iter()
        .map(|c| {
            let label = if c.contains("error") || c.contains("fail") {
                "incident"
            } else {
                "info"
            };
            (c.clone(), label.to_owned())
        })
        .collect();
    Ok(DocUpdate::default()
        .labels(labels)
        .trail(vec!["classify".into()]))
}

async fn summarize(
    doc: Arc<Doc>,
    _ctx: NodeCtx,
) -> Result<DocUpdate, openarmature::graph::NodeError> {
    let incidents = doc.labels.values().filter(|l| *l == "incident").count();
    let summary = format!("{} chunks, {incidents} incident(s)", doc.chunks.len());
    Ok(DocUpdate::default()
        .summary(summary)
        .trail(vec!["summarize".into()]))
}

fn build() -> Result<openarmature::graph::CompiledGraph<Doc>, CompileError> {
    GraphBuilder::new(Doc::default())
        .add_node("split", split)
        .add_node("classify", classify)
        .add_node("summarize", summarize)
        .add_edge("split", "classify")
        // A conditional edge sees the state after `classify` merged its update.
        .add_conditional_edge(
            "classify",
            |doc: &Doc| {
                Ok(if doc.labels.is_empty() {
                    END
                } else {
                    Target::from("summarize")
                })
            },
            Some(vec![Target::from("summarize"), END]),
        )
        .add_edge("summarize", END)
        .entry("split")
        .compile()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = build()?;
    let printer = observer_fn(|event: Arc<ObserverEvent>| async move {
        if let Some(node) = event.as_node() {
            println!(
                "  event step={} {:<9} {}",
                node.step,
                node.phase.as_str(),
                node.namespace.join("/")
            );
        }
        Ok(())
    });
    let input = Doc {
        text: "Deploy started. Disk error on node 3. Retry succeeded. Deploy finished.".into(),
        ..Doc::default()
    };
    let options = InvokeOptions::default().observer(Registration::new("printer", printer));
    let done = graph.invoke_with(input, options).await?;
    // Observers run off the hot path; drain before reading their output or exiting.
    let summary = graph.drain(Some(std::time::Duration::from_secs(5))).await;

    println!("trail:   {:?}", done.state.trail);
    println!("labels:  {:?}", done.state.labels);
    println!("summary: {}", done.state.summary);
    println!(
        "drain:   {} undelivered, timeout reached: {}",
        summary.undelivered_count, summary.timeout_reached
    );
    Ok(())
}
