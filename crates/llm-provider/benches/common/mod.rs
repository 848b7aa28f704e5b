//! Shared by `benches/call_overhead.rs` and `examples/call_overhead_paired.rs`: a
//! keep-alive HTTP/1.1 server on 127.0.0.1 answering every request with one fixed
//! chat-completions body, and the four ways of calling it.

#![allow(clippy::expect_used, dead_code)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use openarmature_graph::{
    observer_fn, state, sync_observer_fn, CompiledGraph, GraphBuilder, NodeCtx, NodeError,
    ObserverEvent, Registration, END,
};
use openarmature_llm::{
    CompletionRequest, Message, OpenAiProvider, Provider, RuntimeConfig, Transport, WireRequest,
};
use openarmature_pipeline::retry::{Constant, RetryConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// A typical small non-streamed chat-completions answer.
pub const COMPLETION: &str = r#"{"id":"chatcmpl-bench-0001","object":"chat.completion","created":1735689600,"model":"bench-model","system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris. It has been the country's capital since the 10th century and is its largest city.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":27,"total_tokens":69}}"#;

/// The bound model.
pub const MODEL: &str = "bench-model";

// ---------------------------------------------------------------- the server

/// The answer to a failed attempt: a retryable 503 with a small JSON error body (the
/// connection stays open).
pub const UNAVAILABLE: &str = r#"{"error":{"message":"overloaded","type":"server_error"}}"#;

/// Starts the server on its own thread and single-thread runtime; returns its address.
/// `failures`: how many `503` answers precede every `200` (counted over all
/// connections; `0`: every request succeeds).
pub fn start_server(failures: usize) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            tx.send(listener.local_addr().expect("addr")).expect("send");
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                COMPLETION.len()
            );
            let ok: Arc<[u8]> = [head.as_bytes(), COMPLETION.as_bytes()].concat().into();
            let head = format!(
                "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                UNAVAILABLE.len()
            );
            let failed: Arc<[u8]> = [head.as_bytes(), UNAVAILABLE.as_bytes()].concat().into();
            let script = Arc::new(Script {
                ok,
                failed,
                failures,
                served: AtomicUsize::new(0),
            });
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, Arc::clone(&script)));
            }
        });
    });
    rx.recv().expect("server address")
}

/// What the server answers: `failures` times `failed`, then `ok`, round and round.
struct Script {
    ok: Arc<[u8]>,
    failed: Arc<[u8]>,
    failures: usize,
    served: AtomicUsize,
}

impl Script {
    fn next(&self) -> &[u8] {
        let n = self.served.fetch_add(1, Ordering::Relaxed);
        if n % (self.failures + 1) == self.failures {
            &self.ok
        } else {
            &self.failed
        }
    }
}

/// Answers every request of one keep-alive connection until the client closes it.
async fn serve(mut stream: TcpStream, script: Arc<Script>) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // One complete request (head + Content-Length body) off the buffer.
        let consumed = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(head)) = request.parse(&buf) {
                let length = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= head + length {
                    break head + length;
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        buf.drain(..consumed);
        if stream.write_all(script.next()).await.is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------- the clients

fn messages() -> Vec<Message> {
    vec![
        Message::system("You are a concise assistant. Answer in one or two sentences."),
        Message::user("What is the capital of France, and since when?"),
    ]
}

fn config() -> RuntimeConfig {
    RuntimeConfig::default().temperature(0.2).max_tokens(256)
}

/// A `complete()` request; with `retry`, call-level retry of 3 attempts, zero backoff.
pub fn request(retry: bool) -> CompletionRequest {
    let request = CompletionRequest::new(messages()).config(config());
    if retry {
        request.retry(
            RetryConfig::default()
                .max_attempts(3)
                .backoff(Constant(Duration::ZERO)),
        )
    } else {
        request
    }
}

/// The multi-thread client runtime (one worker per core).
pub fn client_runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Everything the four variants need.
pub struct Fixture {
    /// The bare client: the provider's client settings (`OpenAiProvider::builder`
    /// defaults plus `no_proxy`): keep-alive pool, rustls, 300 s / 10 s timeouts.
    pub client: reqwest::Client,
    /// `POST` target of the bare client.
    pub url: String,
    /// The provider's request body for [`request`], as a JSON value.
    pub body: Value,
    /// The provider.
    pub provider: Arc<OpenAiProvider>,
    /// The same provider against a second server that answers two `503`s before every
    /// `200`.
    pub flaky: Arc<OpenAiProvider>,
    /// Built once and shared by every call (as the bare body value is).
    pub plain: CompletionRequest,
    /// The same, with call-level retry.
    pub retrying: CompletionRequest,
}

impl Fixture {
    /// Starts the server and builds the clients; checks both paths get the answer.
    pub fn new(rt: &Runtime) -> Fixture {
        let base_url = format!("http://{}/v1", start_server(0));
        let provider = OpenAiProvider::builder(&base_url, MODEL)
            .transport(Transport::default().no_proxy())
            .build()
            .expect("provider");
        let flaky_url = format!("http://{}/v1", start_server(2));
        let flaky = OpenAiProvider::builder(&flaky_url, MODEL)
            .transport(Transport::default().no_proxy())
            .build()
            .expect("flaky provider");
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .connect_timeout(Duration::from_secs(10))
            .user_agent("openarmature-rust/bench")
            .no_proxy()
            .build()
            .expect("client");
        let plain = request(false);
        let bytes = provider
            .request_body(&WireRequest::of(&plain, &plain.messages, &plain.config))
            .expect("body");
        let fixture = Fixture {
            client,
            url: format!("{base_url}/chat/completions"),
            body: serde_json::from_slice(&bytes).expect("json"),
            provider: Arc::new(provider),
            flaky: Arc::new(flaky),
            plain,
            retrying: request(true),
        };
        let reply = rt.block_on(fixture.bare(1));
        assert_eq!(reply, 1);
        assert_eq!(rt.block_on(fixture.complete(1, false)), 1);
        assert_eq!(rt.block_on(fixture.flaky()), 1);
        fixture
    }

    /// (a) `n` concurrent bare POSTs of the body, each answer parsed as a JSON value.
    pub async fn bare(&self, n: usize) -> usize {
        let calls = (0..n).map(|_| async {
            let response = self
                .client
                .post(&self.url)
                .header(reqwest::header::ACCEPT, "application/json")
                .json(&self.body)
                .send()
                .await
                .expect("send");
            assert!(response.status().is_success());
            let bytes = response.bytes().await.expect("body");
            let value: Value = serde_json::from_slice(&bytes).expect("json");
            value.get("model").is_some()
        });
        join_all(calls).await.into_iter().filter(|ok| *ok).count()
    }

    /// (b)/(c) `n` concurrent `complete()` calls, with or without call-level retry.
    pub async fn complete(&self, n: usize, retry: bool) -> usize {
        let request = if retry { &self.retrying } else { &self.plain };
        // Each response is read and dropped where it completes, as the bare answers are.
        let calls = (0..n).map(|_| async {
            let response = self.provider.complete(request).await.expect("complete");
            response.content().is_some()
        });
        join_all(calls).await.into_iter().filter(|ok| *ok).count()
    }

    /// (e) One `complete()` call with call-level retry (3 attempts, zero backoff)
    /// against the server answering `503`, `503`, `200`: three requests per call.
    /// Concurrency 1 only: the server's script is shared by all connections, so
    /// concurrent calls would not each see exactly two failures.
    pub async fn flaky(&self) -> usize {
        let response = self
            .flaky
            .complete(&self.retrying)
            .await
            .expect("third attempt succeeds");
        usize::from(response.content().is_some())
    }

    /// (d) One node issuing `n` concurrent `complete()` calls inside itself; with
    /// `observed`, a no-op observer is attached (typed LLM events built and
    /// delivered; the parts built on first read stay unbuilt). With `SYNC_OBSERVER` set
    /// in the environment the no-op observer handles events at once
    /// (`sync_observer_fn`, no future per event, as the OTel observer and the run
    /// report do); otherwise it is an async `observer_fn`.
    pub fn graph(&self, n: usize, observed: bool) -> CompiledGraph<Calls> {
        let graph = self.graph_plain(n);
        if observed && std::env::var_os("SYNC_OBSERVER").is_some() {
            graph.attach_observer(Registration::new(
                "noop",
                sync_observer_fn(|event| {
                    black_box(event);
                    Ok(())
                }),
            ));
        } else if observed {
            graph.attach_observer(Registration::new(
                "noop",
                observer_fn(|event| async move {
                    black_box(event);
                    Ok(())
                }),
            ));
        }
        graph
    }

    /// (d') The same node with an observer that reads every LLM event's request
    /// messages and parameters and its response text, as a span or trace exporter
    /// does (the parts built on first read are built, on the delivery worker).
    pub fn graph_reading(&self, n: usize) -> CompiledGraph<Calls> {
        let graph = self.graph_plain(n);
        graph.attach_observer(Registration::new(
            "reader",
            observer_fn(|event| async move {
                let (request, response) = match &*event {
                    ObserverEvent::LlmAttempt(e) => (Some(&e.request), None),
                    ObserverEvent::LlmCompletion(e) => (Some(&e.request), Some(&e.response)),
                    _ => (None, None),
                };
                if let Some(request) = request {
                    black_box(request.input_messages.len() + request.request_params.len());
                }
                if let Some(response) = response {
                    black_box(response.output_content.as_deref().map(str::len));
                }
                Ok(())
            }),
        ));
        graph
    }

    fn graph_plain(&self, n: usize) -> CompiledGraph<Calls> {
        let provider = Arc::clone(&self.provider);
        GraphBuilder::new(Calls::default())
            .add_node("ask", move |_s: Arc<Calls>, ctx: NodeCtx| {
                let provider = Arc::clone(&provider);
                async move {
                    let calls = (0..n).map(|_| {
                        let request = request(false).in_node(&ctx);
                        let provider = &provider;
                        async move { provider.complete(&request).await.map(|r| r.usage) }
                    });
                    for result in join_all(calls).await {
                        result?;
                    }
                    Ok::<_, NodeError>(CallsUpdate::default().n(n as u64))
                }
            })
            .add_edge("ask", END)
            .entry("ask")
            .compile()
            .expect("graph")
    }
}

/// One invocation of `graph`, then a drain (every event delivered).
pub async fn run_node(graph: &CompiledGraph<Calls>) -> u64 {
    let out = graph.invoke(Calls::default()).await.expect("run");
    graph.drain(None).await;
    out.n
}

/// One invocation of `graph`, without a drain (its events are delivered meanwhile).
pub async fn invoke_node(graph: &CompiledGraph<Calls>) -> u64 {
    graph.invoke(Calls::default()).await.expect("run").n
}

state! {
    /// The node's state: how many calls it made.
    #[derive(Default)]
    pub struct Calls => CallsUpdate {
        /// Calls made.
        pub n: u64,
    }
}
