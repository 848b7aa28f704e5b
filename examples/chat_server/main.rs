//! `cargo run --example chat_server` — a chat agent with tools served over HTTP, with a
//! web page at <http://127.0.0.1:8080/>.
//!
//! The agent ([`openarmature_agent`]) can check the weather, convert money and send an
//! email; sending asks for approval, so the turn suspends and the page shows
//! Approve / Deny buttons, which call the REST callback route that resumes it. The
//! model is an embedded OpenAI-compatible server that fails one request in five with a
//! `503` (the call-level retry absorbs it); set `OPENAI_BASE_URL` and `OPENAI_MODEL` (and
//! `OPENAI_API_KEY` if the server wants one) to talk to a real one instead.
//!
//! Options: `--port N` (default 8080; 0 picks a free port), `--smoke` (start, run one
//! turn through the HTTP API, print it, stop).

#[path = "app.rs"]
mod app;

use std::error::Error;

use openarmature_harness_http::{serve, Shutdown};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut port = 8080u16;
    let mut smoke = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port needs a number")?.parse()?,
            "--smoke" => smoke = true,
            other => return Err(format!("unknown option `{other}` (--port N, --smoke)").into()),
        }
    }
    if smoke {
        port = 0;
    }
    let shutdown = Shutdown::new();
    let outbox = app::tools::Outbox::default();
    let router = app::router(app::provider().await?, outbox, shutdown.clone())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(serve(listener, router, shutdown.clone()));
    if smoke {
        let body = r#"{"role": "user", "content": "What's the weather in Lyon?"}"#;
        let reply = smoke_post(addr, "/chat/smoke/messages", body).await?;
        println!("{reply}");
        shutdown.trigger();
    } else {
        println!("chat server on http://{addr}/  (Ctrl-C stops it; turns in flight finish)");
        tokio::signal::ctrl_c().await?;
        shutdown.trigger();
    }
    server.await??;
    Ok(())
}

/// One POST over a plain TCP connection (the example needs no HTTP client crate).
async fn smoke_post(addr: std::net::SocketAddr, path: &str, body: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned())
}
