//! observability §8.4.4: a Generation is linked to the Langfuse Prompt entity exactly
//! when the prompt's source exposed a reference (`observability_entities
//! ["langfuse_prompt"]`), with the prompt identity in metadata either way; the
//! reference never reaches a caller's OTel spans.

use std::sync::Arc;

use openarmature_core::vocab::llm::LlmUsage;
use openarmature_graph::{InvokeOptions, NodeCtx};
use openarmature_observability::langfuse::{LangfuseObserver, ObservationType};
use openarmature_observability::OtelObserver;
use openarmature_prompt::prompt_context::{self, scope_prompt, PromptIdentity};
use serde_json::json;

use crate::support::single_node;
use crate::support::{reply, report_completed, request, span_capture, Doc, DocUpdate};

/// One graph whose node reports one completed LLM attempt with `prompt` active.
fn graph(prompt: PromptIdentity) -> openarmature_graph::CompiledGraph<Doc> {
    single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let prompt = prompt.clone();
        async move {
            scope_prompt(prompt, None, async {
                let request = request("call-1").with_prompt_context(prompt_context::current());
                report_completed(&ctx, request, reply(LlmUsage::default(), "stop"), 1.0);
            })
            .await;
            Ok(DocUpdate::default())
        }
    })
}

fn identity() -> PromptIdentity {
    PromptIdentity::new("classify", "v7", "production", "t-hash", "r-hash")
}

async fn generation_link(prompt: PromptIdentity) -> (Option<serde_json::Value>, serde_json::Value) {
    let langfuse = LangfuseObserver::builder().build();
    langfuse
        .invoke(&graph(prompt), Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let traces = langfuse.traces();
    let generation = traces[0]
        .all_observations()
        .into_iter()
        .find(|o| o.kind == ObservationType::Generation)
        .cloned()
        .unwrap();
    (
        generation.prompt_link,
        generation.metadata.get("prompt").cloned().unwrap(),
    )
}

#[tokio::test]
async fn a_reference_links_the_generation_and_metadata_is_set_either_way() {
    let reference = json!({"name": "classify", "version": 7});
    let (link, meta) = generation_link(identity().with_langfuse_prompt(&reference)).await;
    assert_eq!(link, Some(reference));
    assert_eq!(meta["name"], json!("classify"));
    assert_eq!(meta["rendered_hash"], json!("r-hash"));

    let (link, meta) = generation_link(identity()).await;
    assert_eq!(link, None, "no reference: no link is fabricated");
    assert_eq!(meta["version"], json!("v7"));
}

#[tokio::test]
async fn the_reference_never_reaches_a_callers_otel_spans() {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let prompt = identity().with_langfuse_prompt(&json!("lf-prompt-1"));
    otel.invoke(&graph(prompt), Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert!(!spans.is_empty());
    for span in spans {
        for kv in &span.attributes {
            assert!(
                !kv.key.as_str().contains("internal") && kv.value.as_str() != "\"lf-prompt-1\"",
                "{} carries {}",
                span.name,
                kv.key
            );
        }
    }
}
