#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `requests` (each a path and body) over one connection and reads until
/// the server closes it.
async fn exchange(server: &MockServer, requests: &[(&str, &str)]) -> String {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    for (path, body) in requests {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nX-Probe: yes\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
    }
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn replies_are_served_in_order_and_an_overrun_is_a_500() {
    let server = MockServer::scripted([
        Reply::json(200, serde_json::json!({"n": 1})).header("Retry-After", "3"),
        Reply::body(429, b"slow"),
    ])
    .await
    .unwrap();
    let first = exchange(&server, &[("/v1/a", r#"{"q":1}"#)]).await;
    assert!(first.starts_with("HTTP/1.1 200 "), "{first}");
    assert!(first.contains("Retry-After: 3\r\n"), "{first}");
    assert!(first.contains("Content-Type: application/json"), "{first}");
    assert!(first.ends_with(r#"{"n":1}"#), "{first}");
    assert_eq!(server.remaining(), 1);
    let second = exchange(&server, &[("/v1/b", "")]).await;
    assert!(second.starts_with("HTTP/1.1 429 ") && second.ends_with("slow"));
    let third = exchange(&server, &[("/v1/c", "")]).await;
    assert!(third.starts_with("HTTP/1.1 500 ") && third.contains("mock_exhausted"));

    let exchanges = server.exchanges();
    let sources: Vec<Source> = exchanges.iter().map(|e| e.source).collect();
    assert_eq!(
        sources,
        [Source::Queue(0), Source::Queue(1), Source::Exhausted]
    );
    assert_eq!(exchanges[0].status, Some(200));
    let request = &exchanges[0].request;
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/a")
    );
    assert_eq!(request.header("x-probe"), Some("yes"));
    assert_eq!(request.json(), Some(serde_json::json!({"q": 1})));
    assert!(request.head().starts_with("POST /v1/a HTTP/1.1\r\nHost: x"));
    assert_eq!(server.overruns().len(), 1);
    assert!(server.overruns()[0].contains("request #3 (POST /v1/c)"));
}

#[tokio::test]
async fn a_route_is_never_consumed_and_a_dropped_request_is_recorded() {
    let server = Script::new([Reply::Drop])
        .route("/health", Reply::body(204, b""))
        .start()
        .await
        .unwrap();
    for _ in 0..2 {
        let health = exchange(&server, &[("/health", "")]).await;
        assert!(health.starts_with("HTTP/1.1 204 "), "{health}");
    }
    assert_eq!(exchange(&server, &[("/v1/x", "body")]).await, "");
    let exchanges = server.exchanges();
    assert_eq!(exchanges.len(), 3);
    assert_eq!(exchanges[0].source, Source::Route);
    assert_eq!(exchanges[2].source, Source::Queue(0));
    assert_eq!(exchanges[2].status, None);
    assert_eq!(exchanges[2].request.body, b"body");
}

#[tokio::test]
async fn a_handler_answers_from_the_request_and_keep_alive_reuses_the_connection() {
    let server = Script::handler(|r: &Request| Reply::body(200, r.path.as_bytes()))
        .keep_alive()
        .start()
        .await
        .unwrap();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    for path in ["/one", "/two"] {
        let head = format!("GET {path} HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
    }
    let requests = server.wait_for(2, Duration::from_secs(5)).await;
    assert_eq!(requests.len(), 2);
    drop(stream);
    let sources: Vec<Source> = server.exchanges().iter().map(|e| e.source).collect();
    assert_eq!(sources, [Source::Handler, Source::Handler]);
    assert_eq!(server.remaining(), 0);
    assert!(server.overruns().is_empty());
}

#[tokio::test]
async fn a_delayed_reply_is_recorded_at_once_and_answered_after_its_delay() {
    let server = MockServer::scripted([
        Reply::json(200, serde_json::json!({"late": true})).after(Duration::from_millis(150))
    ])
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let probe = tokio::spawn({
        let addr = server.addr();
        async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(b"POST /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            let mut out = String::new();
            stream.read_to_string(&mut out).await.unwrap();
            out
        }
    });
    // The exchange is logged when the request is read, before the answer leaves.
    assert_eq!(server.wait_for(1, Duration::from_secs(5)).await.len(), 1);
    assert_eq!(server.exchanges()[0].status, Some(200));
    let out = probe.await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(
        out.starts_with("HTTP/1.1 200 ") && out.ends_with(r#"{"late":true}"#),
        "{out}"
    );
}

#[tokio::test]
async fn an_sse_reply_is_a_chunked_event_stream() {
    let events = vec![r#"{"a":1}"#.to_owned(), "[DONE]".to_owned()];
    let server = MockServer::scripted([Reply::Sse {
        events,
        gap: Duration::ZERO,
    }])
    .await
    .unwrap();
    let out = exchange(&server, &[("/s", "")]).await;
    assert!(out.contains("Content-Type: text/event-stream"), "{out}");
    assert!(out.contains("data: {\"a\":1}\n\n") && out.contains("data: [DONE]\n\n"));
    assert!(out.ends_with("0\r\n\r\n"), "{out}");
}

#[tokio::test]
async fn a_malformed_request_is_a_400() {
    let server = MockServer::scripted([]).await.unwrap();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream
        .write_all(b"\x01\x02 nonsense\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn a_latency_delays_each_reply_but_not_the_record_of_its_request() {
    let server = Script::always(Reply::json(200, serde_json::json!({})))
        .latency(Duration::from_millis(150))
        .start()
        .await
        .unwrap();
    let start = std::time::Instant::now();
    let reply = tokio::spawn({
        let addr = server.addr();
        async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            let mut out = String::new();
            stream.read_to_string(&mut out).await.unwrap();
            out
        }
    });
    // Recorded on arrival, answered later.
    let seen = server.wait_for(1, Duration::from_secs(5)).await;
    assert_eq!(seen.len(), 1);
    let out = reply.await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200 "), "{out}");
    assert!(start.elapsed() >= Duration::from_millis(150));
}
