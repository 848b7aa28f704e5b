//! A mock OpenAI-compatible LLM (the testkit's scripted server) that counts requests
//! per item and per worker: each prompt reads `item=N worker=W`; the answer is
//! `label-N`, written after a short latency (so several items are in flight at once).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openarmature_testkit::http::{MockServer, Reply, Script};
use serde_json::json;

/// How long each answer takes in the kill tests.
pub const DELAY: Duration = Duration::from_millis(25);

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub at: Instant,
    pub item: i64,
    pub worker: String,
}

pub struct Mock {
    arrivals: Arc<Mutex<Vec<Arrival>>>,
    _server: MockServer,
}

impl Mock {
    /// Starts serving with `latency` per answer; returns the base URL.
    pub async fn start(latency: Duration) -> (Arc<Mock>, String) {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&arrivals);
        let server = Script::handler(move |request| {
            let prompt = request.json().map(|b| b["messages"][0]["content"].to_string()).unwrap_or_default();
            let (item, worker) = parse(&prompt);
            log.lock().unwrap().push(Arrival {
                at: Instant::now(),
                item,
                worker,
            });
            Reply::json(
                200,
                json!({
                    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": super::graphs::label(item)}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
                }),
            )
        })
        .latency(latency)
        .start()
        .await
        .unwrap();
        let url = server.base_url();
        (
            Arc::new(Mock {
                arrivals,
                _server: server,
            }),
            url,
        )
    }

    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.lock().unwrap().clone()
    }

    pub fn total(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }

    /// Requests per item.
    pub fn per_item(&self) -> BTreeMap<i64, usize> {
        let mut counts = BTreeMap::new();
        for a in self.arrivals.lock().unwrap().iter() {
            *counts.entry(a.item).or_default() += 1;
        }
        counts
    }

    /// Requests per worker.
    pub fn per_worker(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for a in self.arrivals.lock().unwrap().iter() {
            *counts.entry(a.worker.clone()).or_default() += 1;
        }
        counts
    }
}

/// `(item, worker)` from a prompt `item=N worker=W`.
fn parse(prompt: &str) -> (i64, String) {
    let after = |key: &str| {
        prompt
            .split(key)
            .nth(1)
            .map(|rest| {
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    (after("item=").parse().unwrap_or(-1), after("worker="))
}
