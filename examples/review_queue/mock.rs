//! An embedded OpenAI-compatible server on 127.0.0.1 for the example: every chat
//! completion answers the same low-confidence extraction, and requests are counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The model name the server answers as.
pub const MODEL: &str = "review-mock";

/// A running server.
pub struct Mock {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// Chat completions served so far.
    pub requests: Arc<AtomicUsize>,
}

const BODY: &str = r#"{"id":"c1","object":"chat.completion","created":0,"model":"review-mock","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"label\":\"invoice\",\"confidence\":0.42}"}}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}"#;

/// Starts the server on an ephemeral port.
pub async fn start() -> std::io::Result<Mock> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}/v1", listener.local_addr()?);
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read the head, then as many body bytes as Content-Length says.
                loop {
                    let Ok(n) = socket.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break;
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
                    BODY.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    Ok(Mock { base_url, requests })
}
