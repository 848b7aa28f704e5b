//! Spec: llm-provider §8.3.3 — Gemini error mapping, and `Retry-After` (§7).
//!
//! Gemini answers errors with `{"error": {"code", "message", "status"}}`.
//!
//! | HTTP (`error.status`) | category |
//! |---|---|
//! | 400 / 403 whose message says a content part (media type, file URI) was rejected | `provider_unsupported_content_block` |
//! | 401, 403 (`UNAUTHENTICATED`, `PERMISSION_DENIED`) | `provider_authentication` |
//! | 404 (`NOT_FOUND`: the model in the URL path) | `provider_invalid_model` |
//! | 429 (`RESOURCE_EXHAUSTED`) | `provider_rate_limit` |
//! | 408, 500 (`INTERNAL`), 503 (`UNAVAILABLE`), 504 (`DEADLINE_EXCEEDED`), other 5xx | `provider_unavailable` |
//! | 400 (`INVALID_ARGUMENT`, `FAILED_PRECONDITION`) and other 4xx | `provider_invalid_request` |
//!
//! The message is `error.message` verbatim (else `HTTP <status>`); `error.status` is
//! kept as the error type. A rate limit's wait comes from `Retry-After`, else from a
//! `google.rpc.RetryInfo` detail's `retryDelay` (e.g. `"37s"`).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{ErrorCategory, LlmError};
use crate::openai::errors::{lower, status_error};

/// The `error` object of a Gemini error body, leniently read.
struct ErrorBody {
    message: Option<String>,
    status: Option<String>,
    retry_delay: Option<Duration>,
}

fn read_error_body(body: &[u8]) -> ErrorBody {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let retry_delay = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .and_then(|details| {
            details
                .iter()
                .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        })
        .and_then(parse_delay);
    match error {
        Some(Value::String(s)) => ErrorBody {
            message: Some(s.clone()),
            status: None,
            retry_delay,
        },
        Some(e) => ErrorBody {
            message: text(e.get("message")),
            status: text(e.get("status")),
            retry_delay,
        },
        None => ErrorBody {
            message: None,
            status: None,
            retry_delay,
        },
    }
}

/// A protobuf `Duration` in JSON form: decimal seconds with an `s` suffix.
fn parse_delay(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0)
        .then(|| Duration::try_from_secs_f64(secs).ok())
        .flatten()
}

/// A message saying the model refused a content part (unsupported media type,
/// unsupported or unreachable file URI).
fn is_content_rejection(e: &ErrorBody) -> bool {
    let message = lower(&e.message);
    let subject = [
        "mime type",
        "mimetype",
        "media type",
        "file uri",
        "fileuri",
        "file_uri",
        "inline data",
        "inlinedata",
        "filedata",
        "image",
    ];
    let refusal = [
        "unsupported",
        "not supported",
        "does not support",
        "invalid",
        "cannot be accessed",
        "cannot fetch",
    ];
    subject.iter().any(|s| message.contains(s)) && refusal.iter().any(|r| message.contains(r))
}

/// Maps a non-2xx answer to its §7 category: the shared status table
/// ([`openarmature_http::status_category`]) refined from the body.
pub(crate) fn from_status(status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
    let e = read_error_body(body);
    let credentials = matches!(
        e.status.as_deref(),
        Some("UNAUTHENTICATED" | "PERMISSION_DENIED")
    );
    let category = match status {
        400 if is_content_rejection(&e) => ErrorCategory::ProviderUnsupportedContentBlock,
        403 if !credentials && is_content_rejection(&e) => {
            ErrorCategory::ProviderUnsupportedContentBlock
        }
        other => ErrorCategory::of_status(other),
    };
    status_error(
        category,
        status,
        headers,
        e.message,
        e.status,
        e.retry_delay,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn body(code: u16, status: &str, message: &str) -> Vec<u8> {
        serde_json::to_vec(
            &serde_json::json!({"error": {"code": code, "message": message, "status": status}}),
        )
        .unwrap_or_default()
    }

    #[test]
    fn status_table() {
        // `<status> <category> <error.status>: <error.message>`.
        let envelope = |code, rest: &str| {
            let (status, message) = crate::test_support::kind_and_message(rest);
            String::from_utf8_lossy(&body(code, status, message)).into_owned()
        };
        crate::test_support::assert_status_table(
            from_status,
            envelope,
            "400 invalid_request INVALID_ARGUMENT: bad request
             400 unsupported_content_block INVALID_ARGUMENT: Unsupported MIME type: image/tiff
             403 authentication PERMISSION_DENIED: denied
             403 unsupported_content_block FORBIDDEN: The file URI is not supported
             401 authentication UNAUTHENTICATED: no key
             404 invalid_model NOT_FOUND: model not found
             429 rate_limit RESOURCE_EXHAUSTED: slow down
             500 unavailable INTERNAL: x
             503 unavailable INTERNAL: x
             504 unavailable INTERNAL: x
             502 unavailable INTERNAL: x",
        );
        let e = from_status(503, &HeaderMap::new(), &body(503, "UNAVAILABLE", "down"));
        assert_eq!(
            (e.to_string().as_str(), e.error_type()),
            ("down", Some("UNAVAILABLE"))
        );
        assert_eq!(
            from_status(500, &HeaderMap::new(), b"<html>").to_string(),
            "HTTP 500"
        );
    }

    #[test]
    fn rate_limit_wait() {
        let details = serde_json::json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "q",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37.5s"}]}});
        let bytes = serde_json::to_vec(&details).unwrap_or_default();
        let e = from_status(429, &HeaderMap::new(), &bytes);
        assert_eq!(e.retry_after(), Some(Duration::from_millis(37_500)));
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(
            from_status(429, &h, &bytes).retry_after(),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            from_status(400, &h, &bytes).retry_after(),
            None,
            "only transient answers carry a wait"
        );
        assert_eq!(parse_delay("-1s"), None);
        assert_eq!(parse_delay("7"), None);
    }
}
