//! One connection: read a request (head and `Content-Length` body), let the script
//! answer it, write the reply; again while the connection is kept alive.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Reply, Request, Shared};

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// How long one connection may take, whatever its reply does.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(30);

/// What reading a request found.
enum Read {
    Request(Request),
    /// The client closed the connection (or sent nothing).
    Closed,
    /// Unparseable or oversized: answer with this status and close.
    Refuse(u16),
}

pub(super) async fn connection(mut stream: TcpStream, shared: Arc<Shared>, keep_alive: bool) {
    let _ = tokio::time::timeout(CONNECTION_DEADLINE, async {
        let mut buf = Vec::new();
        loop {
            let request = match read_request(&mut stream, &mut buf).await {
                Ok(Read::Request(request)) => request,
                Ok(Read::Refuse(status)) => {
                    let _ = respond(&mut stream, status, &[], b"bad request", false).await;
                    return;
                }
                Ok(Read::Closed) | Err(_) => return,
            };
            let reply = match shared.answer(request) {
                Reply::Delayed { delay, reply } => {
                    tokio::time::sleep(delay).await;
                    *reply
                }
                reply => reply,
            };
            let latency = shared.lock().script.latency;
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            let again = keep_alive && matches!(reply, Reply::Respond { .. });
            if write_reply(&mut stream, reply, again).await.is_err() || !again {
                break;
            }
        }
        let _ = stream.flush().await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Reads one request off `buf` (refilled from the stream), leaving what follows it.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Read> {
    let mut chunk = [0u8; 8192];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        (h.name.to_owned(), value)
                    })
                    .collect();
                let length = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if length > MAX_BODY {
                    return Ok(Read::Refuse(413));
                }
                let (method, path) = (
                    parsed.method.unwrap_or_default().to_owned(),
                    parsed.path.unwrap_or_default().to_owned(),
                );
                while buf.len() < head_len + length {
                    let n = stream.read(&mut chunk).await?;
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let end = buf.len().min(head_len + length);
                let body = buf[head_len..end].to_vec();
                buf.drain(..end);
                return Ok(Read::Request(Request {
                    method,
                    path,
                    headers,
                    body,
                }));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => return Ok(Read::Refuse(400)),
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Read::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A complete response with a `Content-Length` body.
async fn respond(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
) -> std::io::Result<()> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut head = format!("HTTP/1.1 {status} Mock\r\nConnection: {connection}\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// The head of a 200 answer with a chunked body of `content_type`.
fn chunked_head(content_type: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: {content_type}\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    )
}

async fn write_chunk(stream: &mut TcpStream, piece: &[u8]) -> std::io::Result<()> {
    stream
        .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
        .await?;
    stream.write_all(piece).await?;
    stream.write_all(b"\r\n").await
}

async fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    keep_alive: bool,
) -> std::io::Result<()> {
    match reply {
        Reply::Respond {
            status,
            headers,
            body,
        } => respond(stream, status, &headers, &body, keep_alive).await,
        Reply::Raw(bytes) => stream.write_all(&bytes).await,
        Reply::Drop => Ok(()),
        // `connection` unwraps the outer delay; a nested one waits here.
        Reply::Delayed { delay, reply } => {
            tokio::time::sleep(delay).await;
            Box::pin(write_reply(stream, *reply, keep_alive)).await
        }
        Reply::Endless => {
            stream
                .write_all(chunked_head("application/json").as_bytes())
                .await?;
            write_chunk(stream, b"{").await?;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                write_chunk(stream, b" ").await?;
            }
        }
        Reply::Truncated { declared, sent } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&vec![b' '; sent]).await
        }
        Reply::Chunked { bytes } => {
            stream
                .write_all(chunked_head("application/json").as_bytes())
                .await?;
            let piece = vec![b' '; 64 * 1024];
            let mut left = bytes;
            while left > 0 {
                let n = left.min(piece.len());
                write_chunk(stream, &piece[..n]).await?;
                left -= n;
            }
            stream.write_all(b"0\r\n\r\n").await
        }
        Reply::Stall => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
                )
                .await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(())
        }
        Reply::Sse { events, gap } => {
            stream
                .write_all(chunked_head("text/event-stream").as_bytes())
                .await?;
            for (i, event) in events.iter().enumerate() {
                if i > 0 && !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
                write_chunk(stream, format!("data: {event}\n\n").as_bytes()).await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await
        }
    }
}
