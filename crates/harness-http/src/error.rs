//! The HTTP error surface: every refused request is a JSON body with a category, a
//! message and (for turn errors) the harness bucket, under a 4xx or 5xx status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use openarmature_core::Category;
use openarmature_harness::ErrorBucket;
use serde_json::json;

/// The request body was larger than the configured limit (413).
pub const REQUEST_BODY_TOO_LARGE: Category = Category::new("request_body_too_large");
/// The request body was not JSON, or not UTF-8 (400).
pub const REQUEST_JSON_MALFORMED: Category = Category::new("request_json_malformed");
/// The request body did not arrive in time (408).
pub const REQUEST_TIMEOUT: Category = Category::new("request_timeout");
/// The turn did not finish within the configured timeout (504); nothing it wrote was
/// committed, except by a signal resume, which goes on to its end (its paused record
/// was already claimed).
pub const TURN_TIMEOUT: Category = Category::new("turn_timeout");
/// The task running a signal resume panicked (500).
pub const TURN_PANICKED: Category = Category::new("turn_panicked");
/// The server is shutting down and takes no new turn (503).
pub const SERVER_SHUTTING_DOWN: Category = Category::new("server_shutting_down");

/// A refused request or a failed turn, as the client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The error category.
    pub category: String,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `category`.
    pub fn new(status: StatusCode, category: Category, message: impl Into<String>) -> Self {
        ApiError {
            status,
            category: category.as_str().to_owned(),
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"category": self.category, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

/// The status of a turn that errored in `bucket` with `category`: the caller's fault is
/// a 4xx (an unknown paused invocation 404, a bad message 422), a transient failure
/// 503, a broken session 409.
pub fn status_of(bucket: ErrorBucket, category: &str) -> StatusCode {
    match (bucket, category) {
        (_, "harness_signal_correlation_failed") => StatusCode::NOT_FOUND,
        (_, "harness_session_id_unresolved") => StatusCode::BAD_REQUEST,
        (ErrorBucket::SessionTerminating, _) => StatusCode::CONFLICT,
        (ErrorBucket::RetryableTransient, _) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}
