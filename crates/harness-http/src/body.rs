//! Reading a JSON request body under the configured size limit, with typed errors.

use axum::body::{to_bytes, Body};
use axum::http::StatusCode;
use serde_json::Value;

use crate::config::Limits;
use crate::error::{ApiError, REQUEST_BODY_TOO_LARGE, REQUEST_JSON_MALFORMED, REQUEST_TIMEOUT};

/// The body as JSON: 413 `request_body_too_large` past `limit` bytes, 400
/// `request_json_malformed` for anything that is not one JSON value (bad UTF-8 too).
/// An empty body reads as `{}`. A body not received within
/// [`Limits::body_timeout`] is 408 `request_timeout`.
pub(crate) async fn json_body(body: Body, limits: &Limits) -> Result<Value, ApiError> {
    let limit = limits.max_body_bytes;
    let read = tokio::time::timeout(limits.body_timeout, to_bytes(body, limit))
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {:?}",
                    limits.body_timeout
                ),
            )
        })?;
    let bytes = read.map_err(|e| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            REQUEST_BODY_TOO_LARGE,
            format!("the request body exceeds {limit} bytes ({e})"),
        )
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            REQUEST_JSON_MALFORMED,
            format!("the request body is not JSON: {e}"),
        )
    })
}
