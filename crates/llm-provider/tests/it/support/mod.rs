//! The provider's integration tests run against the workspace's scripted mock
//! server (`openarmature_testkit`): one script step per request, including hostile
//! behaviours ([`Step`] is the testkit's `Reply`).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use openarmature_testkit::MockServer;
pub use openarmature_testkit::Reply as Step;

/// A running server.
pub struct Server {
    pub base_url: String,
    inner: MockServer,
}

impl Server {
    /// Starts serving `steps`, one per request.
    pub async fn start(steps: Vec<Step>) -> Server {
        let inner = MockServer::scripted(steps).await.unwrap();
        Server {
            base_url: inner.base_url(),
            inner,
        }
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.inner.request_count()
    }

    /// The raw request bodies received, in arrival order.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.inner.requests().into_iter().map(|r| r.body).collect()
    }

    /// Each request's head (request line and headers) as sent, in arrival order;
    /// lowercase it to match header names.
    pub fn heads(&self) -> Vec<String> {
        self.inner.requests().iter().map(|r| r.head()).collect()
    }

    /// The JSON bodies received.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.inner
            .requests()
            .iter()
            .map(|r| r.json().unwrap_or(serde_json::Value::Null))
            .collect()
    }
}

/// A streamed answer: one content chunk per piece (the last with `finish_reason:
/// stop`), the usage chunk, then `[DONE]`.
pub fn sse(pieces: &[&str], gap: Duration) -> Step {
    let mut events: Vec<String> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let finish = if i + 1 == pieces.len() {
                serde_json::json!("stop")
            } else {
                serde_json::Value::Null
            };
            serde_json::json!({"id": "cc-s", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": finish}]})
            .to_string()
        })
        .collect();
    events.push(
        serde_json::json!({"id": "cc-s", "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": pieces.len(), "total_tokens": 3 + pieces.len()}})
        .to_string(),
    );
    events.push("[DONE]".into());
    Step::Sse { events, gap }
}

/// An OpenAI chat-completion body with `content`.
pub fn completion(content: &str) -> serde_json::Value {
    serde_json::json!({
        "id": "cc-test", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    })
}

/// The tests' transport: no proxy (the server is on 127.0.0.1), a 5 s bound.
pub fn transport() -> openarmature_llm::Transport {
    openarmature_llm::Transport::default()
        .no_proxy()
        .timeout(Duration::from_secs(5))
}

/// An OpenAI-compatible provider bound to `model` at `server`, without a proxy.
pub fn openai_at(server: &Server, model: &str) -> openarmature_llm::OpenAiProvider {
    openarmature_llm::OpenAiProvider::builder(&server.base_url, model)
        .transport(openarmature_llm::Transport::default().no_proxy())
        .build()
        .unwrap()
}

/// A server serving `steps` and an OpenAI-compatible provider (`gpt-test`) on it.
pub async fn openai(steps: Vec<Step>) -> (Server, openarmature_llm::OpenAiProvider) {
    let server = Server::start(steps).await;
    let provider = openai_at(&server, "gpt-test");
    (server, provider)
}

/// The events an observer registration records, in delivery order.
pub type Recorded =
    std::sync::Arc<std::sync::Mutex<Vec<std::sync::Arc<openarmature_graph::ObserverEvent>>>>;

/// An observer registration recording every event it is delivered.
pub fn recorder() -> (openarmature_graph::Registration, Recorded) {
    use std::sync::Arc;
    let events: Recorded = Arc::default();
    let sink = Arc::clone(&events);
    let reg = openarmature_graph::Registration::new(
        "rec",
        openarmature_graph::observer_fn(move |e: Arc<openarmature_graph::ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                sink.lock().unwrap().push(e);
                Ok::<(), openarmature_graph::BoxError>(())
            }
        }),
    );
    (reg, events)
}
