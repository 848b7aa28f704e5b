//! The HTTP harness's request handling: raw bytes on one connection, parsed by the
//! server's HTTP/1.1 connection ([`openarmature_harness_http::serve_io`], the
//! settings `serve` uses) and routed to the chat and workflow routes (body limit,
//! JSON body, chat-message shape, session and signal handling), on a paused clock.
//!
//! Input: the bytes a client sends before closing its side. Properties: nothing
//! panics; whatever is answered is HTTP/1.1 responses; no answer is a 500 (every
//! bad request is a typed 4xx); a 4xx JSON body names its category.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::app;
use openarmature_harness_http::{serve_io, Limits};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `data`, closes the write side, and reads what the server answers (at most
/// 1 MiB, within 60 virtual seconds: an event stream never ends on its own).
fn exchange(data: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let limits = Limits::default();
        let (client, server) = tokio::io::duplex(64 * 1024);
        let router = app::router(&limits);
        tokio::spawn(async move {
            let _ = serve_io(server, router, &limits).await;
        });
        let (read, mut write) = tokio::io::split(client);
        let mut read = read.take(1 << 20);
        let send = async {
            let _ = write.write_all(data).await;
            let _ = write.shutdown().await;
        };
        let mut out = Vec::new();
        let receive = read.read_to_end(&mut out);
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            tokio::join!(send, receive)
        })
        .await;
        out
    })
}

/// The status codes of the responses in `out`, with the body that follows each head
/// when it is one JSON value (a chunked or streamed body is not read).
fn responses(out: &[u8]) -> Vec<(u16, Option<Value>)> {
    let mut found = Vec::new();
    let mut rest = out;
    while let Some(at) = find(rest, b"HTTP/1.") {
        rest = &rest[at + 9..];
        let status = std::str::from_utf8(&rest[..rest.len().min(3)])
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or_else(|| {
                panic!(
                    "a response without a status: {:?}",
                    String::from_utf8_lossy(rest)
                )
            });
        let body = find(rest, b"\r\n\r\n").and_then(|end| {
            let tail = &rest[end + 4..];
            let next = find(tail, b"HTTP/1.").unwrap_or(tail.len());
            serde_json::from_slice(&tail[..next]).ok()
        });
        found.push((status, body));
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let out = exchange(data);
    assert!(
        out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
        "not an HTTP response: {:?}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
    for (status, body) in responses(&out) {
        assert_ne!(status, 500, "a 500 answer: {body:?}");
        if (400..500).contains(&status) {
            if let Some(body) = body {
                let category = body["error"]["category"]
                    .as_str()
                    .or_else(|| body["error_category"].as_str())
                    .or_else(|| body["payload"]["category"].as_str());
                assert!(
                    category.is_some(),
                    "a {status} body without a category: {body}"
                );
            }
        }
    }
});
