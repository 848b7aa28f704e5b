//! Serving a router: HTTP/1.1 connections with a header-read timeout and a connection
//! cap, and graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

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
        // Waiting for a free slot (every connection busy) still notices a shutdown.
        let slot = tokio::select! {
            biased;
            () = shutdown.triggered() => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            biased;
            () = shutdown.triggered() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => match after_accept_error(&e) {
                None => return Err(e),
                Some(pause) if pause.is_zero() => continue,
                Some(pause) => {
                    tokio::select! {
                        biased;
                        () = shutdown.triggered() => break,
                        () = tokio::time::sleep(pause) => continue,
                    }
                }
            },
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

/// How long the accept loop pauses when the process has no file descriptor left.
const FD_EXHAUSTED_PAUSE: Duration = Duration::from_millis(100);

/// What the accept loop does after `accept` failed with `e`: go on at once (a
/// connection reset or aborted before it was accepted), go on after a pause (no file
/// descriptor left: the connection still queued keeps the listener ready, so an
/// immediate retry would fail the same way and spin a core until a descriptor is
/// freed), or stop serving (`None`: the listener itself failed).
fn after_accept_error(e: &std::io::Error) -> Option<Duration> {
    use std::io::ErrorKind::*;
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    if e.raw_os_error().is_some_and(|c| c == EMFILE || c == ENFILE) {
        return Some(FD_EXHAUSTED_PAUSE);
    }
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
    .then_some(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_go_on_at_once_pause_or_stop() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(after_accept_error(&reset), Some(Duration::ZERO));
        for fd_exhausted in [24, 23] {
            let e = std::io::Error::from_raw_os_error(fd_exhausted);
            assert_eq!(after_accept_error(&e), Some(FD_EXHAUSTED_PAUSE), "{e}");
        }
        let broken = std::io::Error::from_raw_os_error(9); // EBADF
        assert_eq!(after_accept_error(&broken), None);
    }
}
