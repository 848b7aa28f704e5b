//! A scripted HTTP/1.1 server on 127.0.0.1 for the provider's integration tests:
//! one script step per connection, including hostile behaviours.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one connection.
#[derive(Debug, Clone)]
pub enum Step {
    /// A complete response with a JSON (or any) body.
    Respond {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// Writes these raw bytes, then closes.
    Raw(Vec<u8>),
    /// Reads the request, then closes without answering.
    Drop,
    /// Sends 200 headers, then a chunked body that never ends (one chunk every 20 ms).
    Endless,
    /// Sends 200 headers with a Content-Length, then `n` bytes of body, then closes.
    Truncated { declared: usize, sent: usize },
    /// Sends 200 headers (chunked, no length), then `bytes` bytes of JSON-ish data.
    Chunked { bytes: usize },
    /// Sends 200 headers promising 100 bytes, one byte, then goes silent for 10 s.
    Stall,
    /// A 200 `text/event-stream` answer (chunked): each entry is sent as one
    /// `data: <entry>` event, `gap` apart, then the body ends.
    Sse { events: Vec<String>, gap: Duration },
}

impl Step {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: serde_json::Value) -> Step {
        Step::Respond {
            status,
            headers: Vec::new(),
            body: serde_json::to_vec(&body).unwrap(),
        }
    }

    /// `status` with raw body bytes.
    pub fn body(status: u16, body: &[u8]) -> Step {
        Step::Respond {
            status,
            headers: Vec::new(),
            body: body.to_vec(),
        }
    }
}

/// A running server.
pub struct Server {
    pub base_url: String,
    pub requests: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Each request's head (request line and headers) as sent, in arrival order;
    /// lowercase it to match header names.
    pub heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts serving `steps`, one per connection.
    pub async fn start(steps: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let steps = Arc::new(Mutex::new(VecDeque::from(steps)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (log, head_log) = (Arc::clone(&requests), Arc::clone(&heads));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let step = steps.lock().unwrap().pop_front();
                let (log, head_log) = (Arc::clone(&log), Arc::clone(&head_log));
                tokio::spawn(async move {
                    let _ = handle(stream, step, log, head_log).await;
                });
            }
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            requests,
            heads,
        }
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// The JSON bodies received.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap_or(serde_json::Value::Null))
            .collect()
    }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok((String::new(), Vec::new()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let raw_head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let head = raw_head.to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = buf.split_off(end + 4);
            while body.len() < length {
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            return Ok((raw_head, body));
        }
    }
}

async fn handle(
    mut stream: TcpStream,
    step: Option<Step>,
    log: Arc<Mutex<Vec<Vec<u8>>>>,
    head_log: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let (head, body) = read_request(&mut stream).await?;
    log.lock().unwrap().push(body);
    head_log.lock().unwrap().push(head);
    let step = step.unwrap_or_else(|| Step::body(599, b"script exhausted"));
    match step {
        Step::Respond {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
        }
        Step::Raw(bytes) => stream.write_all(&bytes).await?,
        Step::Drop => {}
        Step::Endless => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            stream.write_all(b"1\r\n{\r\n").await?;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                stream.write_all(b"1\r\n \r\n").await?;
            }
        }
        Step::Truncated { declared, sent } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&vec![b' '; sent]).await?;
        }
        Step::Stall => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
                .await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Step::Sse { events, gap } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            for (i, event) in events.iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(gap).await;
                }
                let piece = format!("data: {event}\n\n");
                stream
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                stream.write_all(piece.as_bytes()).await?;
                stream.write_all(b"\r\n").await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await?;
        }
        Step::Chunked { bytes } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            let piece = vec![b' '; 64 * 1024];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(piece.len());
                stream.write_all(format!("{n:x}\r\n").as_bytes()).await?;
                stream.write_all(&piece[..n]).await?;
                stream.write_all(b"\r\n").await?;
                left -= n;
            }
            stream.write_all(b"0\r\n\r\n").await?;
        }
    }
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
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
