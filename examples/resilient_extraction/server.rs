//! The embedded OpenAI-compatible server: `GET /v1/models` and
//! `POST /v1/chat/completions` on 127.0.0.1 (ephemeral port), over the minimal
//! HTTP/1.1 of `http.rs`. It plays a small, deterministic "model" and injects faults by chunk:
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
//!
//! The soak (`--soak`, `soak.rs`) starts it with [`Faults::Soak`] instead: every
//! request draws its fault from a seeded sequence, whatever its chunk — `503`, `429`
//! with `Retry-After: 1`, a truncated JSON body, an HTML page, a schema violation
//! (until re-asked), a slow answer, an answer later than the client's timeout, a
//! connection closed without an answer — and the server keeps no per-request state,
//! so its memory stays flat however long it runs.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};

use super::http::{read_request, write_reply, Body, Reply};

/// The model id the embedded server serves.
pub const MODEL: &str = "fault-injecting-extractor";

/// A running embedded server (it stops with the process).
pub struct Embedded {
    /// `http://127.0.0.1:<port>/v1`.
    pub base_url: String,
    /// What it answered so far.
    pub tally: Arc<Tally>,
}

/// Which faults the server injects.
#[derive(Debug, Clone, Copy)]
pub enum Faults {
    /// The demo's table above, by chunk.
    Demo,
    /// The soak's mix, drawn per request from a sequence seeded with `seed`.
    Soak {
        /// The sequence's seed.
        seed: u64,
    },
}

/// The soak's faults, in the order [`Tally::injected`] counts them.
pub const SOAK_FAULTS: [&str; 8] = [
    "503",
    "429 Retry-After",
    "truncated JSON",
    "HTML page",
    "schema violation",
    "slow answer",
    "answer after the timeout",
    "hang-up",
];

/// Requests served and faults injected (soak mode), counted as they happen.
#[derive(Debug, Default)]
pub struct Tally {
    /// Chat completions requested.
    pub requests: AtomicU64,
    /// Per [`SOAK_FAULTS`] entry (soak mode only).
    pub injected: [AtomicU64; SOAK_FAULTS.len()],
    /// Demo mode: the good answers (no fault injected) sent per chunk. More than one
    /// for a chunk means the pipeline asked again for an answer it had already been
    /// given (e.g. its worker was lost before the result was recorded).
    pub answered: Mutex<BTreeMap<usize, u32>>,
}

struct Shared {
    faults: Faults,
    latency: Duration,
    counters: Mutex<HashMap<String, u32>>,
    tally: Arc<Tally>,
}

/// Binds 127.0.0.1:0 and serves the demo's faults in the background.
pub async fn start() -> std::io::Result<Embedded> {
    start_with(Faults::Demo).await
}

/// Binds 127.0.0.1:0 and serves `faults` in the background (on the current runtime).
pub async fn start_with(faults: Faults) -> std::io::Result<Embedded> {
    start_slow(faults, Duration::ZERO).await
}

/// Like [`start_with`], every chat answer sent `latency` late at the earliest (a
/// latency-bound model, for the fleet example).
pub async fn start_slow(faults: Faults, latency: Duration) -> std::io::Result<Embedded> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr()?;
    let tally = Arc::new(Tally::default());
    let shared = Arc::new(Shared {
        faults,
        latency,
        counters: Mutex::default(),
        tally: Arc::clone(&tally),
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                // A connection error only ends that connection.
                let _ = serve(stream, &shared).await;
            });
        }
    });
    Ok(Embedded {
        base_url: format!("http://{addr}/v1"),
        tally,
    })
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
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
                Ok(body) => {
                    let n = shared.tally.requests.fetch_add(1, Ordering::Relaxed);
                    let reply = match shared.faults {
                        Faults::Demo => chat(&body, shared),
                        Faults::Soak { seed } => {
                            soak_chat(&body, seed ^ splitmix(n), &shared.tally)
                        }
                    };
                    if reply.delay < shared.latency {
                        reply.after(shared.latency)
                    } else {
                        reply
                    }
                }
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
    write_reply(&mut stream, reply).await
}

fn text_of(message: &Value) -> &str {
    message.get("content").and_then(Value::as_str).unwrap_or("")
}

/// What the server reads off a chat request: the first user message, whether the
/// transcript carries a reask (an assistant turn), and how many characters it sent.
struct Conversation<'a> {
    first_user: &'a str,
    reasked: bool,
    prompt_chars: usize,
}

fn conversation(body: &Value) -> Conversation<'_> {
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
    let prompt_chars = messages.iter().map(|m| text_of(m).len()).sum();
    Conversation {
        first_user,
        reasked,
        prompt_chars,
    }
}

/// One step of SplitMix64: the soak's fault sequence.
fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The soak's chat endpoint: `draw` (the run's seed mixed with the request's number)
/// picks the fault; about one request in three misbehaves.
fn soak_chat(body: &Value, draw: u64, tally: &Tally) -> Reply {
    let draw = splitmix(draw);
    let conv = conversation(body);
    let (_, text) = parse_prompt(conv.first_user);
    let fault = match draw % 100 {
        0..8 => Some(0),
        8..10 => Some(1),
        10..14 => Some(2),
        14..16 => Some(3),
        16..21 if !conv.reasked => Some(4),
        21..26 => Some(5),
        26..28 => Some(6),
        28..30 => Some(7),
        _ => None,
    };
    if let Some(i) = fault {
        tally.injected[i].fetch_add(1, Ordering::Relaxed);
    }
    let ok = || completion(&extract(text).to_string(), conv.prompt_chars);
    let raw = |content_type, text| Reply {
        body: Body::Raw(content_type, text),
        ..Reply::json(200, Value::Null)
    };
    match fault {
        Some(0) => Reply::json(
            503,
            json!({"error": {"message": "upstream overloaded (injected fault)", "type": "server_error"}}),
        ),
        Some(1) => Reply {
            headers: vec![("Retry-After", "1".to_owned())],
            ..Reply::json(
                429,
                json!({"error": {"message": "rate limit reached (injected fault)", "type": "rate_limit_error"}}),
            )
        },
        Some(2) => raw(
            "application/json",
            r#"{"id":"chatcmpl-embedded","choices":[{"index":0,"message":{"role":"assi"#,
        ),
        Some(3) => raw(
            "text/html",
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        ),
        Some(4) => {
            let content = json!({"topic": topic_of(text), "severity": "critical"}).to_string();
            completion(&content, conv.prompt_chars)
        }
        Some(5) => ok().after(Duration::from_millis(20 + (draw >> 8) % 80)),
        Some(6) => ok().after(Duration::from_secs(3)),
        Some(_) => Reply {
            body: Body::HangUp,
            ..Reply::json(200, Value::Null)
        },
        None => ok(),
    }
}

/// The chat endpoint: finds the chunk, counts the conversation's requests, and
/// answers per the fault table.
fn chat(body: &Value, shared: &Shared) -> Reply {
    let Conversation {
        first_user,
        reasked,
        prompt_chars,
    } = conversation(body);
    let (chunk_no, text) = parse_prompt(first_user);
    let seen = {
        let mut counters = shared
            .counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = counters.entry(first_user.to_owned()).or_insert(0);
        *count += 1;
        *count - 1
    };

    match (chunk_no, seen) {
        (Some(1), 0 | 1) | (Some(4), _) => Reply::json(
            503,
            json!({"error": {"message": "upstream overloaded (injected fault)", "type": "server_error"}}),
        ),
        (Some(2), 0) => Reply {
            headers: vec![("Retry-After", "1".to_owned())],
            ..Reply::json(
                429,
                json!({"error": {"message": "rate limit reached for requests (injected fault)", "type": "rate_limit_error"}}),
            )
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
        _ => {
            if let Some(chunk) = chunk_no {
                let mut answered = shared
                    .tally
                    .answered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                *answered.entry(chunk).or_insert(0) += 1;
            }
            completion(&extract(text).to_string(), prompt_chars)
        }
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
