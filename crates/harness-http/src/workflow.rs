//! The stateless workflow routes over a [`Harness`] (harness §3.0 / §3.3 on HTTP).
//!
//! - `POST /invoke` — body: the transmission payload; one run of the graph. Answer:
//!   `{"shape": …, "payload": …}` (200 `completion_response`, 202
//!   `suspended_acknowledgment`, 4xx/5xx `error_response` by bucket).
//! - `POST /callback/{invocation_id}` — body: the signal payload; resumes the paused
//!   invocation.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State as Extract};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use openarmature_graph::State;
use openarmature_harness::{Harness, Outbound, Transmission};
use serde_json::json;

use crate::body::json_body;
use crate::config::{Limits, Shutdown};
use crate::error::{status_of, ApiError};

struct App<S: State> {
    harness: Harness<S>,
    limits: Limits,
    shutdown: Shutdown,
}

/// The workflow routes (see the module docs), ready to mount in an application's
/// router (nest it under a prefix beside [`crate::chat_router`]: both have a
/// `/callback` route).
pub fn workflow_router<S: State>(
    harness: Harness<S>,
    limits: Limits,
    shutdown: Shutdown,
) -> Router {
    let app = Arc::new(App {
        harness,
        limits,
        shutdown,
    });
    Router::new()
        .route("/invoke", post(invoke::<S>))
        .route("/callback/{invocation_id}", post(callback::<S>))
        .with_state(app)
}

/// The response of a turn's outbound: `{shape, payload}` under its status.
pub fn outbound_response(outbound: &Outbound) -> Response {
    let status = match outbound {
        Outbound::Completion { .. } => StatusCode::OK,
        Outbound::Suspended { .. } => StatusCode::ACCEPTED,
        Outbound::Error(e) => status_of(e.bucket, &e.category),
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = json!({"shape": outbound.shape(), "payload": outbound.payload()});
    (status, Json(body)).into_response()
}

impl<S: State> App<S> {
    async fn turn(
        &self,
        body: Body,
        make: impl FnOnce(serde_json::Value) -> Transmission,
    ) -> Result<Response, ApiError> {
        self.shutdown.accepting()?;
        let payload = json_body(body, &self.limits).await?;
        let turn = self
            .limits
            .within_turn_timeout(self.harness.handle(make(payload)))
            .await?;
        Ok(outbound_response(&turn.outbound))
    }
}

async fn invoke<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    body: Body,
) -> Result<Response, ApiError> {
    app.turn(body, Transmission::new).await
}

async fn callback<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    Path(invocation_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    app.shutdown.accepting()?;
    let payload = json_body(body, &app.limits).await?;
    let harness = app.harness.clone();
    let resume = async move {
        harness
            .handle(Transmission::signal_for(invocation_id, payload))
            .await
    };
    let turn = app
        .limits
        .within_turn_timeout_detached(&app.shutdown, resume)
        .await?;
    Ok(outbound_response(&turn.outbound))
}
