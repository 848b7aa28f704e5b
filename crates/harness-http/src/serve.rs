//! Serving a router: HTTP/1.1 connections with a header-read timeout and a connection
//! cap, and graceful shutdown.

use std::sync::Arc;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::config::{Limits, Shutdown};

/// [`serve_with`] under the default [`Limits`].
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    serve_with(listener, router, shutdown, &Limits::default()).await
}

/// Serves `router` on `listener` until `shutdown` is triggered, then stops accepting
/// connections, lets every request in flight finish (event streams end at once), waits
/// for tracked turns whose client left ([`Shutdown::track`]), and returns.
///
/// A connection that does not send a request's headers within
/// [`Limits::header_read_timeout`] is closed; at most [`Limits::max_connections`] are
/// served at once (the rest wait in the listener's backlog).
///
/// # Errors
/// The listener's I/O error.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    shutdown: Shutdown,
    limits: &Limits,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let builder = connection_builder(limits);
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let accepted = tokio::select! {
            biased;
            () = shutdown.triggered() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // A connection-level failure (reset before accept, fd pressure): keep serving.
            Err(e) if is_transient(&e) => continue,
            Err(e) => return Err(e),
        };
        let service = TowerToHyperService::new(router.clone());
        // No upgrades (WebSocket) are served: plain HTTP/1.1 requests and SSE.
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            // A client's broken connection is its own affair.
            let _ = watched.await;
            drop(slot);
        });
    }
    graceful.shutdown().await;
    shutdown.idle().await;
    Ok(())
}

/// The HTTP/1.1 connection settings [`serve_with`] serves every connection with.
fn connection_builder(limits: &Limits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
}

/// Serves `router` on one already-accepted connection `io` until the client closes
/// it, with the connection settings of [`serve_with`] (HTTP/1.1 parsing, the
/// header-read timeout): what [`serve_with`] runs for each accepted socket, over
/// any byte stream.
///
/// The request parsing alone, without a socket: the entry point of the fuzz
/// targets (`fuzz/` in the repository). Not part of the stable API.
///
/// # Errors
/// The connection's HTTP error (a malformed request is answered with a 4xx first
/// where HTTP/1.1 allows one).
#[doc(hidden)]
pub async fn serve_io<I>(io: I, router: Router, limits: &Limits) -> Result<(), hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(router);
    connection_builder(limits)
        .serve_connection(TokioIo::new(io), service)
        .await
}

fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e.raw_os_error().is_some_and(|c| c == 24 || c == 23) // EMFILE / ENFILE
}
