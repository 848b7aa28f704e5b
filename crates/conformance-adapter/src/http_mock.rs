//! Spec: conformance-adapter §6 / llm-provider §9 / retrieval-provider conformance
//! §5.15 — the mock provider every runner shares: the workspace's scripted server
//! ([`openarmature_testkit::MockServer`], a real HTTP/1.1 server on 127.0.0.1) fed the
//! fixture's answers in order (`mock_provider.responses`, `mock_embedding`,
//! `mock_rerank`, ...); every request is recorded with what it was answered.
//!
//! A `connection_failure` entry drops the connection after reading the request.
//! `health_endpoint` is a fixed route, never consumed. When the queue is exhausted
//! the server answers 500 and records the overrun, which fails the case with a
//! clear message instead of hanging.
//!
//! A streamed answer ([`Reply::Sse`]) is a 200 `text/event-stream` body of `data:`
//! events; a mid-stream failure marker becomes an OpenAI-style error chunk
//! (`{error: {message, type, code: <status>}}`), which the mapping categorizes like
//! an HTTP answer of that status. `served` records a stream as the list of its chunks.

use std::net::SocketAddr;
use std::time::Duration;

use openarmature_testkit::http::{self, Script, Source};
use serde_json::Value;

/// The client options every runner's LLM provider uses against the mock: no proxy
/// (the mock is on loopback), a 20 s deadline and 5 s to connect.
pub(crate) fn transport() -> openarmature_llm::Transport {
    openarmature_llm::Transport::default()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .connect_timeout(Duration::from_secs(5))
}

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

impl Reply {
    /// The testkit reply that sends this answer.
    fn wire(&self) -> http::Reply {
        match self {
            Reply::Http {
                status,
                headers,
                body,
            } => http::Reply::Respond {
                status: *status,
                headers: headers.clone(),
                body: body
                    .as_ref()
                    .map(|b| serde_json::to_vec(b).unwrap_or_default())
                    .unwrap_or_default(),
            },
            Reply::Drop => http::Reply::Drop,
            Reply::Sse(items) => http::Reply::Sse {
                events: items.iter().map(SseItem::data).collect(),
                gap: Duration::ZERO,
            },
        }
    }

    /// What `served` records for this answer: the JSON body, or a stream's chunks.
    fn served(&self) -> Option<Value> {
        match self {
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
        }
    }
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
    /// The `data:` payload of this item.
    fn data(&self) -> String {
        match self {
            SseItem::Chunk(v) => v.to_string(),
            SseItem::Done => "[DONE]".to_owned(),
            SseItem::Error(status) => serde_json::json!({"error": {
                "message": format!("mock mid-stream failure (HTTP {status})"),
                "type": "mock_stream_error",
                "code": status,
            }})
            .to_string(),
        }
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

/// A running mock server; stopped when dropped.
pub(crate) struct MockServer {
    server: openarmature_testkit::MockServer,
    responses: Vec<Reply>,
    health: Option<Reply>,
}

impl MockServer {
    /// Binds 127.0.0.1:0 and starts serving.
    pub(crate) async fn start(
        responses: Vec<Reply>,
        health: Option<(String, Reply)>,
    ) -> std::io::Result<MockServer> {
        let mut script = Script::new(responses.iter().map(Reply::wire));
        if let Some((path, reply)) = &health {
            script = script.route(path.clone(), reply.wire());
        }
        Ok(MockServer {
            server: script.start().await?,
            responses,
            health: health.map(|(_, reply)| reply),
        })
    }

    /// The provider base URL (`/v1` prefix, as the OpenAI-compatible mapping expects).
    pub(crate) fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The socket address the server listens on (for a client that resolves a
    /// fixture's host name to it).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:<port>`, for mappings with another version prefix.
    pub(crate) fn origin(&self) -> String {
        self.server.origin()
    }

    /// Every request so far, in arrival order.
    pub(crate) fn captured(&self) -> Vec<Captured> {
        self.server
            .exchanges()
            .into_iter()
            .map(|e| {
                let answered = match e.source {
                    Source::Queue(i) => self.responses.get(i),
                    Source::Route => self.health.as_ref(),
                    Source::Handler | Source::Exhausted => None,
                };
                // An overrun's 500 is not the fixture's answer: nothing was served.
                let served = answered.and_then(Reply::served);
                Captured {
                    json: e.request.json(),
                    path: e.request.path,
                    headers: e.request.headers,
                    status: e.status,
                    body: e.request.body,
                    served,
                    health: e.source == Source::Route,
                }
            })
            .collect()
    }

    /// Scripted responses not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.server.remaining()
    }

    /// Requests that arrived after the script ran out.
    pub(crate) fn overruns(&self) -> Vec<String> {
        self.server.overruns()
    }
}
