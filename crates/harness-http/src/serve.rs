//! Serving a router with graceful shutdown.

use axum::Router;
use tokio::net::TcpListener;

use crate::config::Shutdown;

/// Serves `router` on `listener` until `shutdown` is triggered, then stops accepting
/// connections, lets every request in flight finish (event streams end at once), waits
/// for tracked turns whose client left ([`Shutdown::track`]), and returns.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    let signal = shutdown.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { signal.triggered().await })
        .await?;
    shutdown.idle().await;
    Ok(())
}
