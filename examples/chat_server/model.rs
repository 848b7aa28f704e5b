//! The embedded OpenAI-compatible model of `chat_server`: `POST /v1/chat/completions`
//! (atomic or streamed) on 127.0.0.1, a small deterministic "assistant" that calls the
//! example's tools, and injected faults — every fifth request answers `503` once (the
//! call-level retry absorbs it) — so the chat survives a flaky provider on screen.
//!
//! It reads the conversation and answers:
//! - after tool results: a sentence built from them;
//! - "weather … in <City>": a `get_weather` call;
//! - "convert <amount> <FROM> to <TO>": a `convert_currency` call;
//! - "email <address>": a `send_email` call (the tool asks for approval);
//! - anything else: what it can do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// The model id the embedded server serves.
pub const MODEL: &str = "embedded-chat-model";

/// What the model decided to say.
enum Turn {
    Text(String),
    Call {
        name: &'static str,
        arguments: Value,
    },
}

fn last_user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| match &m["content"] {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

fn word_after<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    let i = words.iter().position(|w| w.eq_ignore_ascii_case(key))?;
    words.get(i + 1).copied()
}

fn trim(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '@' && c != '.' && c != '-')
        .trim_end_matches('.')
        .to_owned()
}

fn decide(messages: &[Value]) -> Turn {
    if let Some(last) = messages.last().filter(|m| m["role"] == "tool") {
        let raw = last["content"].as_str().unwrap_or_default();
        return Turn::Text(summarize(
            &serde_json::from_str(raw).unwrap_or(Value::Null),
            raw,
        ));
    }
    let text = last_user_text(messages);
    let words: Vec<&str> = text.split_whitespace().collect();
    let lower = text.to_lowercase();
    if lower.contains("weather") {
        let city = word_after(&words, "in").map_or("Paris".to_owned(), trim);
        return Turn::Call {
            name: "get_weather",
            arguments: json!({"city": city}),
        };
    }
    if lower.contains("convert") {
        let amount = words
            .iter()
            .find_map(|w| w.parse::<f64>().ok())
            .unwrap_or(100.0);
        let to = word_after(&words, "to").map_or("EUR".to_owned(), |w| trim(w).to_uppercase());
        let from = words
            .iter()
            .position(|w| w.parse::<f64>().is_ok())
            .and_then(|i| words.get(i + 1))
            .map_or("USD".to_owned(), |w| trim(w).to_uppercase());
        return Turn::Call {
            name: "convert_currency",
            arguments: json!({"amount": amount, "from": from, "to": to}),
        };
    }
    if lower.contains("email") {
        let to = words
            .iter()
            .find(|w| w.contains('@'))
            .map_or("bob@example.com".to_owned(), |w| trim(w));
        return Turn::Call {
            name: "send_email",
            arguments: json!({"to": to, "subject": "From your assistant", "body": text}),
        };
    }
    Turn::Text(
        "I can check the weather (\"weather in Lyon\"), convert money (\"convert 20 USD to EUR\") \
         or send an email (\"email bob@example.com\")."
            .to_owned(),
    )
}

/// A sentence from a tool's result.
fn summarize(result: &Value, raw: &str) -> String {
    if let Some(message) = result["error"]["message"].as_str() {
        return format!("That did not work: {message}.");
    }
    if let Some(sky) = result["sky"].as_str() {
        return format!(
            "It is {sky} and {}°C in {}.",
            result["celsius"],
            result["city"].as_str().unwrap_or("?")
        );
    }
    if let Some(value) = result["value"].as_f64() {
        return format!(
            "{} {} is {value} {}.",
            result["amount"],
            result["from"].as_str().unwrap_or("?"),
            result["to"].as_str().unwrap_or("?")
        );
    }
    if let Some(to) = result["sent_to"].as_str() {
        return format!("Done: the email to {to} is sent.");
    }
    format!("Here is what I found: {raw}")
}

#[derive(Default)]
struct Model {
    requests: AtomicU64,
    calls: AtomicU64,
}

/// Starts the model on 127.0.0.1 (an ephemeral port); returns its `…/v1` base URL.
pub async fn start() -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(Arc::new(Model::default()));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

async fn complete(State(model): State<Arc<Model>>, Json(request): Json<Value>) -> Response {
    let n = model.requests.fetch_add(1, Ordering::Relaxed) + 1;
    if n % 5 == 0 {
        let error =
            json!({"error": {"message": "overloaded (injected fault)", "type": "server_error"}});
        return (StatusCode::SERVICE_UNAVAILABLE, Json(error)).into_response();
    }
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let turn = decide(&messages);
    let (message, finish) = match &turn {
        Turn::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
        Turn::Call { name, arguments } => {
            let id = format!("call_{}", model.calls.fetch_add(1, Ordering::Relaxed) + 1);
            let call = json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}});
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                "tool_calls",
            )
        }
    };
    let prompt_chars: usize = messages.iter().map(|m| m.to_string().len()).sum();
    let usage = json!({"prompt_tokens": prompt_chars / 4, "completion_tokens": message.to_string().len() / 4,
        "total_tokens": (prompt_chars + message.to_string().len()) / 4});
    if request["stream"] == true {
        return stream(message, finish, usage);
    }
    Json(
        json!({"id": format!("cmpl-{n}"), "object": "chat.completion", "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}),
    )
    .into_response()
}

/// The same answer as OpenAI-style `chat.completion.chunk` events: text word by word,
/// a tool call in one delta.
fn stream(message: Value, finish: &str, usage: Value) -> Response {
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"id": "cmpl", "object": "chat.completion.chunk", "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut body = String::new();
    match message["content"].as_str() {
        Some(text) => {
            let words: Vec<&str> = text.split_inclusive(' ').collect();
            for (i, w) in words.iter().enumerate() {
                let delta = if i == 0 {
                    json!({"role": "assistant", "content": w})
                } else {
                    json!({"content": w})
                };
                body.push_str(&chunk(delta, None));
            }
        }
        None => {
            let mut call = message["tool_calls"][0].clone();
            call["index"] = json!(0);
            body.push_str(&chunk(
                json!({"role": "assistant", "tool_calls": [call]}),
                None,
            ));
        }
    }
    body.push_str(&chunk(json!({}), Some(finish)));
    let tail =
        json!({"id": "cmpl", "object": "chat.completion.chunk", "choices": [], "usage": usage});
    body.push_str(&format!("data: {tail}\n\ndata: [DONE]\n\n"));
    ([("content-type", "text/event-stream")], body).into_response()
}
