//! The few bytes of HTTP/1.1 the embedded server speaks, over plain tokio +
//! `httparse`: read one request (head and `Content-Length` body), write one reply
//! (JSON, raw bytes, or no answer at all), then close the connection.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP/1.1 request: method, path and body.
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target.
    pub path: String,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// Reads one request; `None` when the client closed the connection first.
pub async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Request::new(&mut headers);
        let status = parsed
            .parse(&buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let httparse::Status::Complete(head_len) = status else {
            continue;
        };
        let length = parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
            .unwrap_or(0usize);
        let method = parsed.method.unwrap_or_default().to_owned();
        let path = parsed.path.unwrap_or_default().to_owned();
        let mut body = buf.split_off(head_len);
        while body.len() < length {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        return Ok(Some(Request { method, path, body }));
    }
}

/// A reply: status, extra headers, body, and how long to wait before sending it.
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Body,
    /// How long to wait before answering.
    pub delay: Duration,
}

/// What a reply's body is.
pub enum Body {
    /// A JSON document.
    Json(Value),
    /// Bytes sent as they are, with this content type (a malformed answer).
    Raw(&'static str, &'static str),
    /// No answer at all: the connection is closed.
    HangUp,
}

impl Reply {
    /// `status` with a JSON body, at once.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Body::Json(body),
            delay: Duration::ZERO,
        }
    }

    /// The same reply, sent after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// Writes `reply` (after its delay) and closes the connection.
pub async fn write_reply(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let (content_type, body) = match reply.body {
        Body::Json(value) => (
            "application/json",
            serde_json::to_vec(&value).unwrap_or_default(),
        ),
        Body::Raw(content_type, text) => (content_type, text.as_bytes().to_vec()),
        Body::HangUp => return stream.shutdown().await,
    };
    let mut head = format!(
        "HTTP/1.1 {} X\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        reply.status,
        body.len()
    );
    for (name, value) in reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await?;
    stream.shutdown().await
}
