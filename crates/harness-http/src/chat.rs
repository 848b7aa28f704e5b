//! The sessioned chat routes over a [`ChatHarness`] (harness-chat §5–§8 on HTTP).
//!
//! - `POST /chat/{session_id}/messages` — body: one chat message; answer: the
//!   `ChatTurnOutcome` as JSON (200 completed, 202 suspended, 4xx/5xx errored by bucket).
//! - `POST /chat/{session_id}/messages/stream` — the same turn as Server-Sent Events:
//!   `token` (each streamed LLM delta), `tool` (each instrumented tool call), then one
//!   `turn` with the outcome.
//! - `GET /chat/{session_id}/events` — Server-Sent Events of the session's resumed turns
//!   (`turn`), the subscribed listener of §8.2.
//! - `POST /callback/{invocation_id}` — body: the signal payload; resumes the paused turn
//!   (the REST-callback signal coordinator) and answers its outcome.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State as Extract};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use openarmature_graph::{observer_fn, InvokeOptions, ObserverEvent, Registration, State};
use openarmature_harness::SignalTarget;
use openarmature_harness_chat::{ChatHarness, ChatTurnOutcome};
use serde_json::json;

use crate::body::json_body;
use crate::config::{Limits, Shutdown};
use crate::error::{status_of, ApiError};

struct App<S: State> {
    chat: ChatHarness<S>,
    limits: Limits,
    shutdown: Shutdown,
}

/// The chat routes (see the module docs), ready to mount in an application's router.
pub fn chat_router<S: State>(chat: ChatHarness<S>, limits: Limits, shutdown: Shutdown) -> Router {
    let app = Arc::new(App {
        chat,
        limits,
        shutdown,
    });
    Router::new()
        .route("/chat/{session_id}/messages", post(send::<S>))
        .route("/chat/{session_id}/messages/stream", post(send_stream::<S>))
        .route("/chat/{session_id}/events", get(events::<S>))
        .route("/callback/{invocation_id}", post(callback::<S>))
        .with_state(app)
}

/// The response of a finished turn: its JSON under the status its kind implies.
pub fn outcome_response(outcome: &ChatTurnOutcome) -> Response {
    let status = match outcome {
        ChatTurnOutcome::Completed(_) => StatusCode::OK,
        ChatTurnOutcome::Suspended(_) => StatusCode::ACCEPTED,
        ChatTurnOutcome::Errored(e) => status_of(e.error_bucket, &e.error_category),
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, Json(outcome.to_json())).into_response()
}

impl<S: State> App<S> {
    fn accepting(&self) -> Result<(), ApiError> {
        self.shutdown.accepting()
    }

    async fn timed(
        &self,
        turn: impl std::future::Future<Output = ChatTurnOutcome>,
    ) -> Result<ChatTurnOutcome, ApiError> {
        self.limits.within_turn_timeout(turn).await
    }
}

async fn send<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    Path(session_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    app.accepting()?;
    let message = json_body(body, &app.limits).await?;
    let outcome = app.timed(app.chat.send_json(&session_id, &message)).await?;
    Ok(outcome_response(&outcome))
}

async fn callback<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    Path(invocation_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    app.accepting()?;
    let payload = json_body(body, &app.limits).await?;
    let target = SignalTarget::Invocation(invocation_id);
    let chat = app.chat.clone();
    let resume = async move { chat.signal(target, payload).await };
    let outcome = app
        .limits
        .within_turn_timeout_detached(&app.shutdown, resume)
        .await?;
    Ok(outcome_response(&outcome))
}

/// An observer forwarding a turn's token and tool events as SSE events.
fn forwarder(tx: mpsc::UnboundedSender<Event>) -> Registration {
    Registration::new(
        "http-sse",
        observer_fn(move |event: Arc<ObserverEvent>| {
            let out = match &*event {
                ObserverEvent::LlmToken(t) => Some(
                    Event::default()
                        .event("token")
                        .data(json!({"kind": t.delta_kind.as_str(), "text": t.delta}).to_string()),
                ),
                ObserverEvent::ToolCall(t) => Some(Event::default().event("tool").data(
                    json!({"name": t.call.tool_name, "arguments": t.call.arguments, "result": t.result})
                        .to_string(),
                )),
                ObserverEvent::ToolCallFailed(t) => Some(Event::default().event("tool").data(
                    json!({"name": t.call.tool_name, "arguments": t.call.arguments, "error": t.error_message})
                        .to_string(),
                )),
                _ => None,
            };
            if let Some(e) = out {
                let _ = tx.unbounded_send(e);
            }
            async { Ok(()) }
        }),
    )
}

fn turn_event(outcome: &ChatTurnOutcome) -> Event {
    Event::default()
        .event("turn")
        .data(outcome.to_json().to_string())
}

async fn send_stream<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    Path(session_id): Path<String>,
    body: Body,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    app.accepting()?;
    let message = json_body(body, &app.limits).await?;
    let (tx, rx) = mpsc::unbounded();
    let options = InvokeOptions::default().observer(forwarder(tx.clone()));
    let turn_app = Arc::clone(&app);
    // The turn runs to its end even if the client leaves; shutdown waits for it.
    let in_flight = app.shutdown.track();
    tokio::spawn(async move {
        let _in_flight = in_flight;
        let turn = turn_app.chat.send_json_with(&session_id, &message, options);
        let event = match turn_app.timed(turn).await {
            Ok(outcome) => {
                // Token events are delivered by the graph's queue; let this turn's land
                // first (its own invocation's only: a graph-wide drain would also wait
                // for every other session's turn in flight), for at most the turn
                // timeout (an observer that hangs must not hold the outcome back).
                if let Some(id) = outcome.invocation_id() {
                    let limit = Some(turn_app.limits.turn_timeout);
                    turn_app.chat.graph().drain_events_for(id, limit).await;
                }
                turn_event(&outcome)
            }
            Err(e) => Event::default()
                .event("error")
                .data(json!({"category": e.category, "message": e.message}).to_string()),
        };
        let _ = tx.unbounded_send(event);
        tx.close_channel();
    });
    Ok(Sse::new(rx.map(Ok)).keep_alive(KeepAlive::default()))
}

/// Unsubscribes its listener when the event stream is dropped (the client left).
struct Listening<S: State> {
    chat: ChatHarness<S>,
    subscription: openarmature_harness_chat::Subscription,
}

impl<S: State> Drop for Listening<S> {
    fn drop(&mut self) {
        self.chat.unsubscribe(&self.subscription);
    }
}

async fn events<S: State>(
    Extract(app): Extract<Arc<App<S>>>,
    Path(session_id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    app.accepting()?;
    let (tx, rx) = mpsc::unbounded();
    let subscription = app.chat.subscribe(&session_id, move |outcome| {
        let _ = tx.unbounded_send(turn_event(outcome));
    });
    let guard = Listening {
        chat: app.chat.clone(),
        subscription,
    };
    let shutdown = app.shutdown.clone();
    let stream = rx
        .take_until(Box::pin(async move { shutdown.triggered().await }))
        .map(move |e| {
            let _keep = &guard;
            Ok(e)
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
