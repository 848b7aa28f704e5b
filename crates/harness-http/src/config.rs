//! Request limits and the shutdown handle every route shares.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::{watch, Notify};

use crate::error::{ApiError, SERVER_SHUTTING_DOWN, TURN_PANICKED, TURN_TIMEOUT};

/// Limits applied to every request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest request body accepted (413 past it). Default 256 KiB.
    pub max_body_bytes: usize,
    /// How long one turn may run before the request fails with 504 `turn_timeout`
    /// (the turn is cancelled; nothing it had not committed is kept; a signal resume
    /// is not cancelled, it goes on to its end). Default 120 s.
    pub turn_timeout: Duration,
    /// How long a client may take to send a request body (408 `request_timeout` past
    /// it: a client trickling bytes cannot hold a turn open). Default 10 s.
    pub body_timeout: Duration,
    /// How long a connection may take to send a request's headers before it is
    /// closed ([`crate::serve`]; slow-header clients). Default 10 s.
    pub header_read_timeout: Duration,
    /// The most connections served at once ([`crate::serve`]); further connections
    /// wait in the listener's backlog until one closes. Default 4096.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 256 * 1024,
            turn_timeout: Duration::from_secs(120),
            body_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 4096,
        }
    }
}

impl Limits {
    /// Sets [`Limits::max_body_bytes`].
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Runs `turn` within [`Limits::turn_timeout`]: 504 `turn_timeout` past it (the
    /// turn is dropped).
    /// Runs a signal resume to its end on a task of its own, tracked by `shutdown`,
    /// and waits for its result within the turn timeout. Its paused record is claimed
    /// as soon as the resume starts, so a resume dropped half-way (a client that left,
    /// the timeout) could never run again: neither cancels it.
    pub(crate) async fn within_turn_timeout_detached<T: Send + 'static>(
        &self,
        shutdown: &Shutdown,
        resume: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, ApiError> {
        let in_flight = shutdown.track();
        let task = tokio::spawn(async move {
            let _in_flight = in_flight;
            resume.await
        });
        self.within_turn_timeout(task)
            .await
            .map_err(|mut e| {
                e.message = format!(
                    "the resumed turn did not finish within {:?}; it goes on to its end",
                    self.turn_timeout
                );
                e
            })?
            .map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TURN_PANICKED,
                    format!("the resumed turn's task failed: {e}"),
                )
            })
    }

    pub(crate) async fn within_turn_timeout<T>(
        &self,
        turn: impl std::future::Future<Output = T>,
    ) -> Result<T, ApiError> {
        tokio::time::timeout(self.turn_timeout, turn)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    TURN_TIMEOUT,
                    format!("the turn did not finish within {:?}", self.turn_timeout),
                )
            })
    }

    /// Sets [`Limits::body_timeout`].
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Sets [`Limits::header_read_timeout`].
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets [`Limits::max_connections`] (at least 1).
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets [`Limits::turn_timeout`].
    #[must_use]
    pub fn turn_timeout(mut self, timeout: Duration) -> Self {
        self.turn_timeout = timeout;
        self
    }
}

/// Tells routes the server is stopping: new turns are refused (503
/// `server_shutting_down`), event streams end, and [`crate::serve`] returns once the
/// turns in flight have finished. Cloning shares the handle.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
    in_flight: Arc<InFlight>,
}

#[derive(Debug, Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// Marks one turn running outside a request (a streamed turn whose client may leave);
/// dropping it ends the mark.
#[derive(Debug)]
pub struct TurnGuard(Arc<InFlight>);

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown {
            tx: watch::channel(false).0,
            in_flight: Arc::default(),
        }
    }
}

impl Shutdown {
    /// A handle not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the shutdown.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// 503 `server_shutting_down` once the shutdown started: no new turn begins.
    pub(crate) fn accepting(&self) -> Result<(), ApiError> {
        if self.is_triggered() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_SHUTTING_DOWN,
                "the server is shutting down",
            ));
        }
        Ok(())
    }

    /// Whether the shutdown started.
    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the shutdown starts.
    pub async fn triggered(&self) {
        let mut rx = self.tx.subscribe();
        // An error means the sender is gone, which cannot happen while `self` lives.
        let _ = rx.wait_for(|on| *on).await;
    }

    /// Marks a turn in flight until the guard drops; [`Shutdown::idle`] waits for it.
    pub fn track(&self) -> TurnGuard {
        self.in_flight.count.fetch_add(1, Ordering::AcqRel);
        TurnGuard(Arc::clone(&self.in_flight))
    }

    /// Resolves once no tracked turn is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.in_flight.idle.notified();
            if self.in_flight.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}
