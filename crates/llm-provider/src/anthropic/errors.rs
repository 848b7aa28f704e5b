//! Spec: llm-provider §8.2.3 — HTTP error mapping (status plus the envelope's
//! `error.type`), and `Retry-After` (§7).
//!
//! The envelope is `{"type": "error", "error": {"type", "message"}, "request_id"}`.
//!
//! | HTTP | category |
//! |---|---|
//! | 401 `authentication_error`, 402 `billing_error`, 403 `permission_error` | `provider_authentication` |
//! | 404 `not_found_error` naming the model (or without a message) | `provider_invalid_model` |
//! | 400 whose message says a content block (image, document, media type) is not supported | `provider_unsupported_content_block` |
//! | other 400 (`invalid_request_error`), 413 `request_too_large`, other 4xx | `provider_invalid_request` |
//! | 429 `rate_limit_error` | `provider_rate_limit` |
//! | 408, 500 `api_error`, 504 `timeout_error`, 529 `overloaded_error`, other 5xx | `provider_unavailable` |
//!
//! The message is `error.message` verbatim (else `HTTP <status>`); `error.type` is
//! kept as the error type.

use reqwest::header::HeaderMap;

use crate::error::{ErrorCategory, LlmError};
use crate::openai::errors::{
    is_content_rejection, lower, read_error_body, status_error, ErrorBody,
};

fn is_model_not_found(e: &ErrorBody) -> bool {
    let message = lower(&e.message);
    let not_found = e.kind.as_deref() == Some("not_found_error");
    (not_found && (message.is_empty() || message.contains("model")))
        || (message.contains("model")
            && ["not found", "does not exist", "unknown model"]
                .iter()
                .any(|n| message.contains(n)))
}

/// Maps a non-2xx answer to its §7 category: the shared status table
/// ([`openarmature_http::status_category`]) refined from the envelope.
pub(crate) fn from_status(status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
    let e = read_error_body(body);
    let category = match status {
        402 => ErrorCategory::ProviderAuthentication,
        404 if !is_model_not_found(&e) => ErrorCategory::ProviderInvalidRequest,
        400 if is_content_rejection(&e) => ErrorCategory::ProviderUnsupportedContentBlock,
        other => ErrorCategory::of_status(other),
    };
    status_error(
        category,
        status,
        headers,
        e.message,
        e.kind.or(e.code),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_status_table() {
        // `<status> <category> <error.type>: <error.message>`; `-`: not an envelope.
        let envelope = |_, rest: &str| {
            let (kind, message) = crate::test_support::kind_and_message(rest);
            match kind {
                "-" => message.to_owned(),
                _ => serde_json::json!({"type": "error",
                    "error": {"type": kind, "message": message}, "request_id": "req_1"})
                .to_string(),
            }
        };
        crate::test_support::assert_status_table(
            from_status,
            envelope,
            "401 authentication authentication_error: bad key
             402 authentication billing_error: pay
             403 authentication permission_error: no
             404 invalid_model not_found_error: model: claude-x
             404 invalid_request not_found_error: no such route
             413 invalid_request request_too_large: big
             429 rate_limit rate_limit_error: slow
             500 unavailable api_error: x
             504 unavailable timeout_error: x
             529 unavailable overloaded_error: x
             400 unsupported_content_block invalid_request_error: image source not supported by this model
             400 invalid_request invalid_request_error: bad field
             502 unavailable -: <html>",
        );
    }

    #[test]
    fn keeps_message_type_and_retry_after() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        let body = br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        let e = from_status(429, &headers, body);
        assert_eq!(e.to_string(), "slow down");
        assert_eq!(e.error_type(), Some("rate_limit_error"));
        assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(7)));
        let e = from_status(
            400,
            &headers,
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"x"}}"#,
        );
        assert_eq!(e.retry_after(), None);
    }
}
