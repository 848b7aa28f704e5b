//! A collector stand-in for the OTLP/HTTP tests: a 127.0.0.1 listener that reads
//! HTTP/1.1 requests, decodes each protobuf body as `M` (e.g.
//! `ExportTraceServiceRequest`, `ExportMetricsServiceRequest`) and forwards it with its
//! path, answering `200` with an empty body.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Reads one HTTP/1.1 request; returns its path and body.
pub async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = req.parse(&buf) {
            let path = req.path?.to_owned();
            let len: usize = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < head + len {
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some((path, buf[head..head + len].to_vec()));
        }
    }
}

/// Accepts connections on `listener` and forwards every request body that decodes as
/// `M`, with its path.
pub async fn collector<M>(listener: TcpListener, tx: mpsc::UnboundedSender<(String, M)>)
where
    M: prost::Message + Default + Send + 'static,
{
    while let Ok((mut stream, _)) = listener.accept().await {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some((path, body)) = read_request(&mut stream).await {
                if let Ok(req) = M::decode(body.as_slice()) {
                    let _ = tx.send((path, req));
                }
                let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                if stream.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}
