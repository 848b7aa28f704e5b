//! A minimal HTTP/1.1 mock on 127.0.0.1: answers each request with the next scripted
//! `(status, JSON body)` and records every request's path, JSON body and
//! `Authorization` header.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A running mock.
pub struct Mock {
    pub origin: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

impl Mock {
    /// Starts serving `replies` in order.
    pub async fn start(replies: Vec<(u16, Value)>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let auth = Arc::new(Mutex::new(Vec::new()));
        let auth_seen = Arc::clone(&auth);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let queue = Arc::clone(&queue);
                let seen = Arc::clone(&seen);
                let auth_seen = Arc::clone(&auth_seen);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let (head_end, length) = loop {
                        let n = stream.read(&mut chunk).await.unwrap();
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..pos]).to_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                            break (pos + 4, length);
                        }
                    };
                    while buf.len() < head_end + length {
                        let n = stream.read(&mut chunk).await.unwrap();
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let body = serde_json::from_slice(&buf[head_end..head_end + length])
                        .unwrap_or(Value::Null);
                    let authorization = head.lines().find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_owned())
                    });
                    auth_seen.lock().unwrap().push(authorization);
                    seen.lock().unwrap().push((path, body));
                    let (status, reply) = queue
                        .lock()
                        .unwrap()
                        .pop_front()
                        .unwrap_or((500, Value::Null));
                    let text = reply.to_string();
                    let response = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        Mock {
            origin,
            requests,
            auth,
        }
    }

    /// Every request so far: `(path, JSON body)`.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }

    /// Every request's `Authorization` header so far, in arrival order.
    #[allow(dead_code)]
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.auth.lock().unwrap().clone()
    }
}
