//! Spec: conformance-adapter §6 / llm-provider §9 / retrieval-provider conformance
//! §5.15 — the mock provider every runner shares: a real HTTP/1.1 server on 127.0.0.1
//! (ephemeral port) that replays scripted answers in order (`mock_provider.responses`,
//! `mock_embedding`, `mock_rerank`, ...) and records every request (target, headers,
//! body, and what it answered).
//!
//! Each connection carries one request and is closed after the reply
//! (`Connection: close`), so a `connection_failure` entry (drop the connection
//! after reading the request, without answering) never disturbs a pooled
//! connection. `health_endpoint` answers every request to its path and is never
//! consumed. When the queue is exhausted the server answers 500 and records the
//! overrun, which fails the case with a clear message instead of hanging.
//!
//! A streamed answer ([`Reply::Sse`]) is a 200 `text/event-stream` body of `data:`
//! events; a mid-stream failure marker becomes an OpenAI-style error chunk
//! (`{error: {message, type, code: <status>}}`), which the mapping categorizes like
//! an HTTP answer of that status. `served` records a stream as the list of its chunks.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The client options every runner's LLM provider uses against the mock: no proxy
/// (the mock is on loopback), a 20 s deadline and 5 s to connect.
pub(crate) fn transport() -> openarmature_llm::Transport {
    openarmature_llm::Transport::default()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .connect_timeout(Duration::from_secs(5))
}

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One scripted answer.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// An HTTP response; `body` is serialized as JSON (`None`: empty body).
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: Option<Value>,
    },
    /// Read the request, then close the connection without answering.
    Drop,
    /// A 200 `text/event-stream` answer: one `data:` event per item.
    Sse(Vec<SseItem>),
}

/// One event of a streamed answer.
#[derive(Debug, Clone)]
pub(crate) enum SseItem {
    /// A chunk, serialized as JSON.
    Chunk(Value),
    /// The `[DONE]` sentinel.
    Done,
    /// A mid-stream failure: an OpenAI-style error chunk whose `code` is `status`.
    Error(u16),
}

impl SseItem {
    /// The `data:` line of this item.
    fn line(&self) -> String {
        let data = match self {
            SseItem::Chunk(v) => v.to_string(),
            SseItem::Done => "[DONE]".to_owned(),
            SseItem::Error(status) => serde_json::json!({"error": {
                "message": format!("mock mid-stream failure (HTTP {status})"),
                "type": "mock_stream_error",
                "code": status,
            }})
            .to_string(),
        };
        format!("data: {data}\n\n")
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    /// The request target, e.g. `/v1/chat/completions`.
    pub(crate) path: String,
    /// The request headers, in arrival order (names as sent).
    pub(crate) headers: Vec<(String, String)>,
    /// The HTTP status the server answered with (`None` for a dropped connection).
    pub(crate) status: Option<u16>,
    /// The raw body bytes.
    pub(crate) body: Vec<u8>,
    /// The body parsed as JSON, when it is JSON.
    pub(crate) json: Option<Value>,
    /// The body the server answered with (`None` for a dropped connection).
    pub(crate) served: Option<Value>,
    /// True when this request hit the health endpoint.
    pub(crate) health: bool,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    health: Option<(String, Reply)>,
    captured: Vec<Captured>,
    overruns: Vec<String>,
}

/// A running mock server; stopped when dropped.
pub(crate) struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MockServer {
    /// Binds 127.0.0.1:0 and starts serving.
    pub(crate) async fn start(
        responses: Vec<Reply>,
        health: Option<(String, Reply)>,
    ) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            queue: responses.into(),
            health,
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(30), serve(stream, state)).await;
                });
            }
        });
        Ok(MockServer { addr, state, task })
    }

    /// The provider base URL (`/v1` prefix, as the OpenAI-compatible mapping expects).
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The socket address the server listens on (for a client that resolves a
    /// fixture's host name to it).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, for mappings with another version prefix.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub(crate) fn captured(&self) -> Vec<Captured> {
        lock(&self.state).captured.clone()
    }

    /// Scripted responses not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        lock(&self.state).queue.len()
    }

    /// Requests that arrived after the script ran out.
    pub(crate) fn overruns(&self) -> Vec<String> {
        lock(&self.state).overruns.clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let (method, path, headers, content_length, head_len) = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let length = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let headers = request
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (
                    request.method.unwrap_or_default().to_owned(),
                    request.path.unwrap_or_default().to_owned(),
                    headers,
                    length,
                    head_len,
                );
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => return write_reply(&mut stream, 400, &[], Some(b"bad request".to_vec())).await,
        }
    };
    if content_length > MAX_BODY {
        return write_reply(&mut stream, 413, &[], None).await;
    }
    let mut body = buf.split_off(head_len);
    while body.len() < content_length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(content_length);

    let reply = {
        let mut s = lock(&state);
        let is_health = s.health.as_ref().is_some_and(|(p, _)| *p == path);
        let reply = if is_health {
            s.health.as_ref().map(|(_, r)| r.clone())
        } else {
            s.queue.pop_front()
        };
        let reply = reply.unwrap_or_else(|| {
            let note = format!(
                "request #{} ({method} {path}) arrived after the scripted responses ran out",
                s.captured.len() + 1
            );
            s.overruns.push(note.clone());
            Reply::Http {
                status: 500,
                headers: Vec::new(),
                body: Some(
                    serde_json::json!({"error": {"type": "mock_exhausted", "message": note}}),
                ),
            }
        });
        let status = match &reply {
            Reply::Http { status, .. } => Some(*status),
            Reply::Drop => None,
            Reply::Sse(_) => Some(200),
        };
        let served = match &reply {
            Reply::Http { body, .. } => body.clone(),
            Reply::Drop => None,
            Reply::Sse(items) => Some(Value::Array(
                items
                    .iter()
                    .filter_map(|i| match i {
                        SseItem::Chunk(v) => Some(v.clone()),
                        _ => None,
                    })
                    .collect(),
            )),
        };
        s.captured.push(Captured {
            path,
            headers,
            status,
            json: serde_json::from_slice(&body).ok(),
            body,
            served,
            health: is_health,
        });
        reply
    };
    match reply {
        Reply::Drop => Ok(()),
        Reply::Sse(items) => {
            let body: String = items.iter().map(SseItem::line).collect();
            let headers = [("Content-Type".to_owned(), "text/event-stream".to_owned())];
            write_reply(&mut stream, 200, &headers, Some(body.into_bytes())).await
        }
        Reply::Http {
            status,
            headers,
            body,
        } => {
            let bytes = body.map(|b| serde_json::to_vec(&b).unwrap_or_default());
            write_reply(&mut stream, status, &headers, bytes).await
        }
    }
}

async fn write_reply(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: Option<Vec<u8>>,
) -> std::io::Result<()> {
    let body = body.unwrap_or_default();
    let mut head = format!("HTTP/1.1 {status} Mock\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await?;
    stream.shutdown().await
}
