//! The embedded OpenAI-compatible server: `GET /v1/models` and
//! `POST /v1/chat/completions` on 127.0.0.1 (ephemeral port), over plain tokio +
//! `httparse`. It plays a small, deterministic "model" and injects faults by chunk:
//!
//! | chunk (fan-out index) | what the server does |
//! |---|---|
//! | 1 | `503` twice, then answers (the call-level retry absorbs it) |
//! | 2 | `429` with `Retry-After: 1`, then answers |
//! | 3 | JSON that violates the schema until the transcript carries a reask |
//! | 4 | `503` on every request (retries exhaust; failure isolation degrades the node) |
//! | 6 | prose around the JSON (unparseable) until a reask (full run only) |
//!
//! The chunk is read from the request's first user message (`Chunk N:`); the fault
//! state is a per-conversation request counter. Usage is a deterministic estimate
//! (4 characters per token) of what the request sent and the answer returned.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The model id the embedded server serves.
pub const MODEL: &str = "fault-injecting-extractor";

/// A running embedded server (it stops with the process).
pub struct Embedded {
    /// `http://127.0.0.1:<port>/v1`.
    pub base_url: String,
}

type Counters = Arc<Mutex<HashMap<String, u32>>>;

/// Binds 127.0.0.1:0 and serves in the background.
pub async fn start() -> std::io::Result<Embedded> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr()?;
    let counters: Counters = Arc::default();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counters = Arc::clone(&counters);
            tokio::spawn(async move {
                // A connection error only ends that connection.
                let _ = serve(stream, counters).await;
            });
        }
    });
    Ok(Embedded {
        base_url: format!("http://{addr}/v1"),
    })
}

/// One HTTP/1.1 request: method, path and body.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Request::new(&mut headers);
        let status = parsed
            .parse(&buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let httparse::Status::Complete(head_len) = status else {
            continue;
        };
        let length = parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
            .unwrap_or(0usize);
        let method = parsed.method.unwrap_or_default().to_owned();
        let path = parsed.path.unwrap_or_default().to_owned();
        let mut body = buf.split_off(head_len);
        while body.len() < length {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        return Ok(Some(Request { method, path, body }));
    }
}

/// A reply: status, extra headers, JSON body.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Value,
}

impl Reply {
    fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body,
        }
    }
}

async fn serve(mut stream: TcpStream, counters: Counters) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let reply = match (request.method.as_str(), request.path.as_str()) {
        ("GET", p) if p.ends_with("/models") => Reply::json(
            200,
            json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}),
        ),
        ("POST", p) if p.ends_with("/chat/completions") => {
            match serde_json::from_slice::<Value>(&request.body) {
                Ok(body) => chat(&body, &counters),
                Err(e) => Reply::json(
                    400,
                    json!({"error": {"message": format!("bad JSON: {e}"), "type": "invalid_request_error"}}),
                ),
            }
        }
        _ => Reply::json(
            404,
            json!({"error": {"message": "no such route", "type": "not_found"}}),
        ),
    };
    let body = serde_json::to_vec(&reply.body).unwrap_or_default();
    let mut head = format!(
        "HTTP/1.1 {} X\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        reply.status,
        body.len()
    );
    for (name, value) in reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await?;
    stream.shutdown().await
}

fn text_of(message: &Value) -> &str {
    message.get("content").and_then(Value::as_str).unwrap_or("")
}

/// The chat endpoint: finds the chunk, counts the conversation's requests, and
/// answers per the fault table.
fn chat(body: &Value, counters: &Counters) -> Reply {
    let messages: &[Value] = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let first_user = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map_or("", text_of);
    let reasked = messages
        .iter()
        .any(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let (chunk_no, text) = parse_prompt(first_user);
    let seen = {
        let mut counters = counters.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counters.entry(first_user.to_owned()).or_insert(0);
        *count += 1;
        *count - 1
    };
    let prompt_chars: usize = messages.iter().map(|m| text_of(m).len()).sum();

    match (chunk_no, seen) {
        (Some(1), 0 | 1) | (Some(4), _) => Reply::json(
            503,
            json!({"error": {"message": "upstream overloaded (injected fault)", "type": "server_error"}}),
        ),
        (Some(2), 0) => Reply {
            status: 429,
            headers: vec![("Retry-After", "1".to_owned())],
            body: json!({"error": {"message": "rate limit reached for requests (injected fault)", "type": "rate_limit_error"}}),
        },
        (Some(3), _) if !reasked => {
            // Parses, but breaks the schema: no `entities`, an unknown severity.
            let content = json!({"topic": topic_of(text), "severity": "critical"}).to_string();
            completion(&content, prompt_chars)
        }
        (Some(6), _) if !reasked => {
            let content = format!("Sure! Here is the extraction: {}", extract(text));
            completion(&content, prompt_chars)
        }
        _ => completion(&extract(text).to_string(), prompt_chars),
    }
}

/// `Chunk N:\n<text>` → `(Some(N), text)`.
fn parse_prompt(prompt: &str) -> (Option<usize>, &str) {
    let Some(rest) = prompt.strip_prefix("Chunk ") else {
        return (None, prompt);
    };
    let (number, text) = rest.split_once(":\n").unwrap_or((rest, ""));
    (number.trim().parse().ok(), text)
}

fn completion(content: &str, prompt_chars: usize) -> Reply {
    let prompt_tokens = prompt_chars.div_ceil(4);
    let completion_tokens = content.len().div_ceil(4);
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-embedded",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens
            }
        }),
    )
}

/// The "model": capitalised words are entities, keywords pick topic and severity.
fn extract(text: &str) -> Value {
    const NOT_NAMES: [&str; 6] = ["The", "At", "A", "UTC", "Customers", "Latency"];
    let mut entities: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        let capitalised = word.chars().next().is_some_and(char::is_uppercase);
        let new = !entities.iter().any(|e| e == word);
        if capitalised && word.len() > 1 && !NOT_NAMES.contains(&word) && new {
            entities.push(word.to_owned());
        }
    }
    let lower = text.to_lowercase();
    let severity = if ["paged", "double charges", "stale", "above"]
        .iter()
        .any(|k| lower.contains(k))
    {
        "incident"
    } else if ["failed over", "rolled back", "queueing"]
        .iter()
        .any(|k| lower.contains(k))
    {
        "warning"
    } else {
        "info"
    };
    json!({"topic": topic_of(text), "entities": entities, "severity": severity})
}

fn topic_of(text: &str) -> &'static str {
    let lower = text.to_lowercase();
    [
        ("postmortem", "postmortem"),
        ("rolled back", "rollback"),
        ("double charge", "customer impact"),
        ("cache", "session cache"),
        ("failed over", "database failover"),
        ("returned to normal", "recovery"),
        ("latency", "latency"),
    ]
    .iter()
    .find(|(keyword, _)| lower.contains(keyword))
    .map_or("operations", |(_, topic)| topic)
}
