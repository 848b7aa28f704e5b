//! The mock LLM server, in the parent process (so it outlives every kill): the
//! workspace's scripted server with a handler that answers each structured-output
//! request from its prompt (deterministically: equal prompts, equal answers) after a
//! seeded delay, and logs which process asked for which key. Each child sends its
//! generation number as its API key: a request a child sent just before it was
//! killed may be read after the next child started, and must still count as its own.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use openarmature_testkit::{MockServer, Reply, Request, Script};
use serde_json::{json, Value};

/// FNV-1a: a stable digest (the "model"'s answer and the latency are functions of it).
pub fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The running mock.
pub struct LlmMock {
    server: MockServer,
    log: Arc<Mutex<Vec<(u32, String)>>>,
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-crash",
        "object": "chat.completion",
        "model": "crash-mock",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

impl LlmMock {
    /// Starts serving on the current runtime; `seed` varies the latencies.
    pub async fn start(seed: u64) -> LlmMock {
        let log: Arc<Mutex<Vec<(u32, String)>>> = Arc::default();
        let sink = Arc::clone(&log);
        let server = Script::handler(move |request: &Request| {
            let body = request.json().unwrap_or(Value::Null);
            let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
            let (key, text) = prompt.split_once('\n').unwrap_or((prompt, ""));
            let generation = request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer gen-"))
                .and_then(|g| g.parse::<u32>().ok())
                .unwrap_or(u32::MAX);
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((generation, key.to_owned()));
            let content = json!({
                "key": key,
                "digest": format!("{:016x}", fnv(text)),
                "words": text.split_whitespace().count(),
            })
            .to_string();
            // Items 3-20 ms; the two single calls 20-40 ms (a kill aimed 0.5-2.5 ms
            // after their node starts lands inside the call, whatever the load).
            let jitter = fnv(&format!("{seed}/{generation}/{key}"));
            let ms = if key.starts_with("item-") {
                3 + jitter % 18
            } else {
                20 + jitter % 21
            };
            Reply::json(200, completion(&content)).after(Duration::from_millis(ms))
        })
        .start()
        .await
        .expect("mock LLM server");
        LlmMock { server, log }
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The keys process `generation` asked for, in arrival order.
    pub fn requests_of(&self, generation: u32) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter()
            .filter(|(g, _)| *g == generation)
            .map(|(_, k)| k.clone())
            .collect()
    }
}
