//! Hostile clients of the HTTP harness (reliability): slow headers, slow bodies, many
//! idle connections and a flood of sends to one session. The server keeps answering
//! healthy clients, closes what stalls, and answers every bad request with a typed
//! 4xx.
#![allow(clippy::unwrap_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
use openarmature_graph::{state, GraphBuilder, NodeCtx, END};
use openarmature_harness_chat::ChatHarness;
use openarmature_harness_http::{chat_router, serve_with, Limits, Shutdown};
use openarmature_llm::Message;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

state! {
    /// A conversation.
    #[derive(Default)]
    pub struct Chat => ChatUpdate {
        /// History.
        pub messages: Vec<Message> => append,
    }
}

async fn server(limits: Limits) -> (String, Shutdown) {
    let graph = GraphBuilder::new(Chat::default())
        .add_node("echo", |s: Arc<Chat>, _c: NodeCtx| async move {
            let n = s.messages.len();
            Ok(ChatUpdate::default().messages(vec![Message::assistant(format!("{n}"))]))
        })
        .add_edge("echo", END)
        .entry("echo")
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()
        .unwrap();
    let shutdown = Shutdown::new();
    let router = chat_router(
        ChatHarness::new(graph).unwrap(),
        limits.clone(),
        shutdown.clone(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let s = shutdown.clone();
    tokio::spawn(async move { serve_with(listener, router, s, &limits).await });
    (addr, shutdown)
}

async fn healthy(addr: &str, session: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/chat/{session}/messages"))
        .body(json!({"role": "user", "content": "hi"}).to_string())
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Whether the server closed `conn` within `within` (EOF or reset on read).
async fn closed(conn: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, conn.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {} // a 408 from hyper before closing: keep reading
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_cut_off_while_healthy_clients_are_served() {
    let limits = Limits::default().header_read_timeout(Duration::from_millis(300));
    let (addr, _shutdown) = server(limits).await;
    let before = rss_kib();
    // 300 idle connections, and 20 that trickle a request line a byte at a time.
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    let mut slow = Vec::new();
    for _ in 0..20 {
        let mut c = TcpStream::connect(&addr).await.unwrap();
        c.write_all(b"PO").await.unwrap();
        slow.push(c);
    }
    let trickle = tokio::spawn(async move {
        for byte in b"ST /chat/x/messages HTTP/1.1\r\n".iter().take(6) {
            for c in &mut slow {
                let _ = c.write_all(&[*byte]).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        slow
    });
    for i in 0..20 {
        let (status, body) = healthy(&addr, &format!("h{i}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let grown = rss_kib().saturating_sub(before);
    println!("RSS growth with 320 hostile connections: {grown} KiB");
    assert!(grown < 64 * 1024, "memory grew by {grown} KiB");
    let mut slow = trickle.await.unwrap();
    for c in idle.iter_mut().take(20).chain(slow.iter_mut()) {
        assert!(
            closed(c, Duration::from_secs(5)).await,
            "a stalled connection stayed open"
        );
    }
    let (status, _) = healthy(&addr, "after").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_body_trickled_past_the_timeout_is_a_408() {
    let limits = Limits::default().body_timeout(Duration::from_millis(300));
    let (addr, _shutdown) = server(limits).await;
    let mut c = TcpStream::connect(&addr).await.unwrap();
    c.write_all(b"POST /chat/s/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{")
        .await
        .unwrap();
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            let _ = c.write_all(b" ").await;
            match tokio::time::timeout(Duration::from_millis(100), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => {
                    response.extend_from_slice(&buf[..n]);
                    if response.windows(4).any(|w| w == b"\r\n\r\n") && response.ends_with(b"}}") {
                        break;
                    }
                }
                Err(_) => {}
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to a trickled body");
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
    // The session saw nothing.
    let (_, body) = healthy(&addr, "s").await;
    assert_eq!(body["final_state"]["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_sends_to_one_session_is_answered_in_order() {
    let (addr, _shutdown) = server(Limits::default()).await;
    let sends: Vec<_> = (0..100)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move { healthy(&addr, "flood").await })
        })
        .collect();
    let mut replies = Vec::new();
    for s in sends {
        let (status, body) = s.await.unwrap();
        assert_eq!(status, 200, "{body}");
        replies.push(
            body["replies"][0]["content"]
                .as_str()
                .unwrap()
                .parse::<usize>()
                .unwrap(),
        );
    }
    replies.sort_unstable();
    // Turn k saw 2k - 1 messages: every turn serialized, none lost or doubled.
    let want: Vec<usize> = (1..=100).map(|k| 2 * k - 1).collect();
    assert_eq!(replies, want);
}
