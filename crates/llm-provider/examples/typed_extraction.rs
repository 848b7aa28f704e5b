//! Typed structured output: a model's answer deserialized into a user struct.
//!
//! `cargo run -p openarmature-llm --example typed_extraction`
//!
//! By default the call goes to an embedded stand-in server on 127.0.0.1 whose first
//! answer is invalid, so the run shows one reask. Point it at a local
//! OpenAI-compatible server (llama.cpp `llama-server`, vLLM, Ollama) with
//! `OPENAI_BASE_URL=http://127.0.0.1:8080/v1` (and `OPENAI_MODEL`, optionally
//! `OPENAI_API_KEY`).
//!
//! The output is bounded twice, so a small model finishes instead of running on until
//! the server's context fills: `max_tokens` on the request, and `maxLength` /
//! `maxItems` in the schema (`#[schemars(length(max = N))]`). A truncated answer is
//! re-asked once with a larger bound (the per-attempt override), never with the same
//! one.

#![allow(clippy::print_stdout, missing_docs)]

use std::time::Duration;

use openarmature_llm::{
    CompletionRequest, LlmError, LlmRetryConfig, Message, OpenAiProvider, RuntimeConfig,
    StructuredOutputInvalid, Transport, TypedCompletion,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use openarmature_testkit::{MockServer, Reply};
use serde::Deserialize;
use serde_json::json;

/// What we want out of the text.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Recipe {
    /// The dish.
    #[schemars(length(max = 60))]
    title: String,
    /// At most five ingredients.
    #[schemars(length(min = 1, max = 5))]
    ingredients: Vec<Ingredient>,
    /// Total time in minutes.
    minutes: u16,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ingredient {
    #[schemars(length(max = 30))]
    name: String,
    #[schemars(length(max = 20))]
    quantity: String,
}

const TEXT: &str = "Pancakes for two: whisk 200 g flour, 2 eggs and 300 ml milk, \
                    rest ten minutes, then fry in butter for about fifteen minutes.";

fn answer(content: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "cc-1", "object": "chat.completion", "model": "stand-in",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}}),
    )
}

/// The embedded stand-in: an answer missing `minutes`, then a valid one.
async fn stand_in() -> std::io::Result<MockServer> {
    MockServer::scripted([
        answer(r#"{"title": "Pancakes", "ingredients": [{"name": "flour", "quantity": "200 g"}]}"#),
        answer(
            r#"{"title": "Pancakes", "minutes": 25, "ingredients": [
                {"name": "flour", "quantity": "200 g"}, {"name": "eggs", "quantity": "2"},
                {"name": "milk", "quantity": "300 ml"}, {"name": "butter", "quantity": "a knob"}]}"#,
        ),
    ])
    .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = std::env::var("OPENAI_BASE_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let server = match local {
        Some(_) => None,
        None => Some(stand_in().await?),
    };
    let base_url = local.unwrap_or_else(|| {
        server
            .as_ref()
            .map(MockServer::base_url)
            .unwrap_or_default()
    });
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "local".into());
    let mut transport = Transport::default().timeout(Duration::from_secs(120));
    if server.is_some() {
        transport = transport.no_proxy();
    }
    let mut builder = OpenAiProvider::builder(&base_url, model).transport(transport);
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        builder = builder.api_key(key);
    }
    let provider = builder.build()?;

    let retry = LlmRetryConfig::from(
        RetryConfig::default()
            .max_attempts(3)
            .backoff(Constant(Duration::from_millis(200))),
    )
    // A truncated first answer gets one reask with a larger bound.
    .per_attempt_override(vec![RuntimeConfig::default().max_tokens(512)])
    .reask(|f: &StructuredOutputInvalid| {
        format!(
            "That JSON was invalid: {}. Reply with the corrected JSON object only.",
            f.describe()
        )
    });
    let request = CompletionRequest::new(vec![
        Message::system("Extract the recipe as a JSON object matching the schema. JSON only."),
        Message::user(TEXT),
    ])
    .config(RuntimeConfig::default().max_tokens(256).temperature(0.0))
    .retry(retry);

    match provider.complete_typed::<Recipe>(&request).await {
        Ok(typed) => {
            let recipe = typed.value;
            println!("{} ({} min)", recipe.title, recipe.minutes);
            for i in &recipe.ingredients {
                println!("  - {}: {}", i.name, i.quantity);
            }
            println!("usage: {:?} tokens", typed.response.usage.total_tokens);
        }
        Err(e) => report(&e),
    }
    if let Some(server) = server {
        let requests = server.request_count();
        let reasks = requests.saturating_sub(1);
        println!("(embedded stand-in: {requests} requests, {reasks} reask)");
    }
    Ok(())
}

fn report(e: &LlmError) {
    println!("failed ({}): {e}", e.category());
    if e.is_context_window_exceeded() {
        println!("the prompt and max_tokens do not fit the model's context; not retried");
    }
}
