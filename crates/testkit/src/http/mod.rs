//! The one scripted HTTP/1.1 mock server of the workspace's tests: a real server
//! on 127.0.0.1 (ephemeral port) that answers each request from a [`Script`] and
//! records every exchange.
//!
//! A script is a queue of [`Reply`]s consumed in arrival order, plus fixed
//! routes (a path always answered the same way, never consumed: a health
//! endpoint), or a handler that computes each reply from the request (a
//! collector, an upstream whose health flips). When the queue runs out, the
//! server answers 500 with a `mock_exhausted` JSON error and records an
//! overrun, so a test fails with a clear message instead of hanging.
//!
//! Each connection carries one request and is closed after the reply
//! (`Connection: close`) unless the script keeps connections alive; a
//! [`Reply::Drop`] (read the request, close without answering) therefore never
//! disturbs a pooled connection. Besides well-formed answers a reply can be
//! hostile on purpose: raw bytes, a truncated or endless body, a stalled one; and
//! any reply can come late ([`Reply::after`]).

mod serve;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A complete response: `status`, extra headers (`Content-Type` defaults to
    /// `application/json`), and the body (sent with a `Content-Length`).
    Respond {
        /// The HTTP status.
        status: u16,
        /// Extra headers, in order.
        headers: Vec<(String, String)>,
        /// The body bytes.
        body: Vec<u8>,
    },
    /// Writes these raw bytes, then closes.
    Raw(Vec<u8>),
    /// Reads the request, then closes without answering.
    Drop,
    /// 200 headers, then a chunked body that never ends (one chunk every 20 ms).
    Endless,
    /// 200 headers declaring `declared` bytes, then `sent` bytes, then closes.
    Truncated {
        /// The `Content-Length` announced.
        declared: usize,
        /// The bytes actually sent.
        sent: usize,
    },
    /// 200 headers (chunked, no length), then `bytes` bytes of spaces.
    Chunked {
        /// How many body bytes to send.
        bytes: usize,
    },
    /// 200 headers promising 100 bytes, one byte, then silence for 10 s.
    Stall,
    /// A 200 `text/event-stream` answer (chunked): each entry is sent as one
    /// `data: <entry>` event, `gap` apart (no timer when zero), then the body ends.
    Sse {
        /// The `data:` payloads, in order.
        events: Vec<String>,
        /// The pause between two events.
        gap: Duration,
    },
    /// `reply`, written after `delay` (a slow upstream: the request was read, the
    /// client is waiting for the answer).
    Delayed {
        /// How long to wait before answering.
        delay: Duration,
        /// The answer.
        reply: Box<Reply>,
    },
}

impl Reply {
    /// `status` with `body` serialized as JSON.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::body(status, body.to_string().as_bytes())
    }

    /// `status` with raw body bytes.
    pub fn body(status: u16, body: &[u8]) -> Reply {
        Reply::Respond {
            status,
            headers: Vec::new(),
            body: body.to_vec(),
        }
    }

    /// Adds a header to a [`Reply::Respond`] (other replies are returned as they are).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Reply {
        if let Reply::Respond { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// This reply, written after `delay` ([`Reply::Delayed`]).
    pub fn after(self, delay: Duration) -> Reply {
        Reply::Delayed {
            delay,
            reply: Box::new(self),
        }
    }

    /// The status line this reply writes (`None` for a dropped or raw answer).
    pub fn status(&self) -> Option<u16> {
        match self {
            Reply::Delayed { reply, .. } => reply.status(),
            Reply::Respond { status, .. } => Some(*status),
            Reply::Raw(_) | Reply::Drop => None,
            Reply::Endless
            | Reply::Truncated { .. }
            | Reply::Chunked { .. }
            | Reply::Stall
            | Reply::Sse { .. } => Some(200),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The headers in arrival order (names as sent).
    pub headers: Vec<(String, String)>,
    /// The raw body bytes.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The request line and headers as sent (`\r\n`-separated, no final blank line).
    pub fn head(&self) -> String {
        let mut head = format!("{} {} HTTP/1.1", self.method, self.path);
        for (k, v) in &self.headers {
            head.push_str(&format!("\r\n{k}: {v}"));
        }
        head
    }
}

/// Which part of the script answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The queued reply at this index (0-based, in script order).
    Queue(usize),
    /// A fixed route.
    Route,
    /// The script's handler.
    Handler,
    /// Nothing: the queue had run out (an overrun).
    Exhausted,
}

/// One request and how it was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// What arrived.
    pub request: Request,
    /// What answered it.
    pub source: Source,
    /// The status the server answered with (`None`: no status line was written).
    pub status: Option<u16>,
}

/// Computes a reply from a request.
pub type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// What the server answers; build one, then [`Script::start`] it.
#[derive(Clone, Default)]
pub struct Script {
    queue: VecDeque<Reply>,
    routes: Vec<(String, Reply)>,
    handler: Option<Arc<Handler>>,
    keep_alive: bool,
    latency: Duration,
}

impl Script {
    /// Answers requests with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> Script {
        Script {
            queue: replies.into_iter().collect(),
            ..Script::default()
        }
    }

    /// Answers every request with `reply`.
    pub fn always(reply: Reply) -> Script {
        Script::handler(move |_| reply.clone())
    }

    /// Answers every request with what `handler` returns for it.
    pub fn handler(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Script {
        Script {
            handler: Some(Arc::new(handler)),
            ..Script::default()
        }
    }

    /// Answers every request to `path` with `reply`, without consuming the queue.
    pub fn route(mut self, path: impl Into<String>, reply: Reply) -> Script {
        self.routes.push((path.into(), reply));
        self
    }

    /// Keeps connections open after a [`Reply::Respond`] (HTTP/1.1 keep-alive), so
    /// one connection carries many requests.
    pub fn keep_alive(mut self) -> Script {
        self.keep_alive = true;
        self
    }

    /// Writes each reply `latency` after its request arrived (a latency-bound
    /// upstream: several requests are then in flight at once).
    pub fn latency(mut self, latency: Duration) -> Script {
        self.latency = latency;
        self
    }

    /// Binds 127.0.0.1:0 and starts serving on the current runtime.
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub async fn start(self) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let keep_alive = self.keep_alive;
        let shared = Arc::new(Shared {
            state: Mutex::new(Log {
                script: self,
                served: 0,
                exchanges: Vec::new(),
                overruns: Vec::new(),
            }),
            arrived: Notify::new(),
        });
        let serving = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve::connection(stream, Arc::clone(&serving), keep_alive));
            }
        });
        Ok(MockServer { addr, shared, task })
    }
}

struct Log {
    script: Script,
    served: usize,
    exchanges: Vec<Exchange>,
    overruns: Vec<String>,
}

struct Shared {
    state: Mutex<Log>,
    arrived: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Picks the reply for `request` and records the exchange.
    fn answer(&self, request: Request) -> Reply {
        let mut log = self.lock();
        let route = log
            .script
            .routes
            .iter()
            .find(|(p, _)| *p == request.path)
            .map(|(_, r)| r.clone());
        let (source, reply) = if let Some(reply) = route {
            (Source::Route, reply)
        } else if let Some(handler) = log.script.handler.clone() {
            (Source::Handler, handler(&request))
        } else if let Some(reply) = log.script.queue.pop_front() {
            log.served += 1;
            (Source::Queue(log.served - 1), reply)
        } else {
            let note = format!(
                "request #{} ({} {}) arrived after the scripted responses ran out",
                log.exchanges.len() + 1,
                request.method,
                request.path
            );
            log.overruns.push(note.clone());
            let body = serde_json::json!({"error": {"type": "mock_exhausted", "message": note}});
            (Source::Exhausted, Reply::json(500, body))
        };
        log.exchanges.push(Exchange {
            request,
            source,
            status: reply.status(),
        });
        drop(log);
        self.arrived.notify_waiters();
        reply
    }
}

/// A running mock server; it stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Starts a server answering with `replies` in order ([`Script::new`]).
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub async fn scripted(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<MockServer> {
        Script::new(replies).start().await
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/v1`, the base URL OpenAI-compatible clients expect.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// Every exchange so far, in arrival order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.lock().exchanges.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        let log = self.shared.lock();
        log.exchanges.iter().map(|e| e.request.clone()).collect()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.lock().exchanges.len()
    }

    /// Queued replies not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.queue.len()
    }

    /// One line per request that arrived after the queue ran out.
    pub fn overruns(&self) -> Vec<String> {
        self.shared.lock().overruns.clone()
    }

    /// Waits until at least `count` requests arrived, or `timeout` passed; returns
    /// the requests so far either way.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Request> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.shared.arrived.notified();
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.requests();
            }
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests;
