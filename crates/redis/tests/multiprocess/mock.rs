//! A mock OpenAI-compatible upstream on 127.0.0.1: answers every
//! `POST …/chat/completions` with 503 until told it recovered, then with a completion;
//! records when each request arrived. Bounded: it serves only while the test runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Default)]
pub struct Mock {
    pub healthy: AtomicBool,
    pub arrivals: Mutex<Vec<Instant>>,
}

const OK: &str = r#"{"id":"c1","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;
const DOWN: &str = r#"{"error":{"message":"upstream down","type":"server_error"}}"#;

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
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        let Ok(n) = socket.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            return;
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
                        let Ok(n) = socket.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let completion = head.starts_with("post") && head.contains("/chat/completions");
                    let healthy = mock.healthy.load(Ordering::SeqCst);
                    if completion {
                        mock.arrivals.lock().unwrap().push(Instant::now());
                    }
                    let (status, body) = if healthy || !completion {
                        ("200 OK", if completion { OK } else { r#"{"data":[]}"# })
                    } else {
                        ("503 Service Unavailable", DOWN)
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        (mock, url)
    }

    pub fn count(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }

    /// The most arrivals in any window of `window`.
    pub fn max_in_window(&self, window: std::time::Duration) -> usize {
        let mut times = self.arrivals.lock().unwrap().clone();
        times.sort();
        let mut best = 0;
        let mut start = 0;
        for end in 0..times.len() {
            while times[end].duration_since(times[start]) >= window {
                start += 1;
            }
            best = best.max(end + 1 - start);
        }
        best
    }
}
