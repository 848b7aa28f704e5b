//! A mock OpenAI-compatible LLM on 127.0.0.1 that counts requests per item and per
//! worker: each prompt reads `item=N worker=W`; the answer is `label-N` after a short
//! delay (so several items are in flight at once). Bounded: it serves only while the
//! test runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long each answer takes.
pub const DELAY: Duration = Duration::from_millis(25);

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub at: Instant,
    pub item: i64,
    pub worker: String,
}

#[derive(Default)]
pub struct Mock {
    arrivals: Mutex<Vec<Arrival>>,
}

impl Mock {
    /// Starts serving; returns the base URL.
    pub async fn start() -> (Arc<Mock>, String) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let mock = Arc::new(Mock::default());
        let served = Arc::clone(&mock);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mock = Arc::clone(&served);
                tokio::spawn(async move {
                    let Some(body) = read_request(&mut socket).await else {
                        return;
                    };
                    let (item, worker) = parse(&body);
                    mock.arrivals.lock().unwrap().push(Arrival {
                        at: Instant::now(),
                        item,
                        worker,
                    });
                    tokio::time::sleep(DELAY).await;
                    let content = super::graphs::label(item);
                    let body = format!(
                        r#"{{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{{"index":0,"message":{{"role":"assistant","content":"{content}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}}}"#
                    );
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        (mock, url)
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

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(String::from_utf8_lossy(&buf[head_end..]).into_owned())
}

/// `(item, worker)` from a prompt `item=N worker=W`.
fn parse(body: &str) -> (i64, String) {
    let after = |key: &str| {
        body.split(key)
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
