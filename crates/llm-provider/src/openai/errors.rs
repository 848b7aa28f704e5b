//! Spec: llm-provider §8.1.3 — HTTP error mapping, and `Retry-After` (§7).
//!
//! | HTTP | category |
//! |---|---|
//! | 401, 403 | `provider_authentication` |
//! | 404 with a model-not-found body (`code: model_not_found`, or a message saying the model does not exist) | `provider_invalid_model` |
//! | other 404, 400, 413, 422 and other 4xx | `provider_invalid_request` (400 with a content-block rejection body: `provider_unsupported_content_block`) |
//! | 408, 429 | `provider_unavailable`, `provider_rate_limit` |
//! | 503 with a model-loading body (`type: model_not_loaded`, or "not loaded" / "loading") | `provider_model_not_loaded` |
//! | other 5xx, any other status | `provider_unavailable` |
//! | any status with a context-window body (see [`super::context_window`]) | `provider_invalid_request`, error type `context_length_exceeded` |
//!
//! The message is the body's `error.message` (or a string `error`) verbatim, else
//! `HTTP <status>`; the vendor `error.type` (else `error.code`) is kept as the
//! error type.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::context_window::{is_context_window_error, CONTEXT_LENGTH_EXCEEDED};
use crate::error::{ErrorCategory, LlmError, ProviderFailure};

/// The `error` object of an OpenAI-style error body, leniently read.
pub(crate) struct ErrorBody {
    pub(crate) message: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) code: Option<String>,
}

/// A body field lowercased (`""` when absent), for the case-insensitive checks.
pub(crate) fn lower(field: &Option<String>) -> String {
    field.as_deref().unwrap_or_default().to_ascii_lowercase()
}

pub(crate) fn read_error_body(body: &[u8]) -> ErrorBody {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    match error {
        Some(Value::String(s)) => ErrorBody {
            message: Some(s.clone()),
            kind: None,
            code: None,
        },
        Some(e) => ErrorBody {
            message: text(e.get("message")),
            kind: text(e.get("type")),
            code: match e.get("code") {
                Some(Value::Number(n)) => Some(n.to_string()),
                other => text(other),
            },
        },
        None => ErrorBody {
            message: text(parsed.as_ref().and_then(|v| v.get("message"))),
            kind: None,
            code: None,
        },
    }
}

fn contains_any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| haystack.contains(n))
}

fn is_model_not_found(e: &ErrorBody) -> bool {
    let code = lower(&e.code);
    let kind = lower(&e.kind);
    let message = lower(&e.message);
    code == "model_not_found"
        || kind == "model_not_found"
        || (message.contains("model")
            && contains_any(
                &message,
                &["not found", "does not exist", "not exist", "unknown"],
            ))
}

fn is_model_not_loaded(e: &ErrorBody) -> bool {
    let kind = lower(&e.kind);
    let code = lower(&e.code);
    let message = lower(&e.message);
    kind == "model_not_loaded"
        || code == "model_not_loaded"
        || contains_any(
            &message,
            &["not loaded", "is loading", "loading model", "model loading"],
        )
}

pub(crate) fn is_content_rejection(e: &ErrorBody) -> bool {
    let code = lower(&e.code);
    let kind = lower(&e.kind);
    let message = lower(&e.message);
    let media = [
        "image",
        "audio",
        "video",
        "media_type",
        "content block",
        "content_block",
    ];
    let refusal = [
        "not_supported",
        "unsupported",
        "not supported",
        "does not support",
    ];
    (contains_any(&code, &media) && contains_any(&code, &refusal))
        || kind == "image_parse_error"
        || (contains_any(&message, &media) && contains_any(&message, &refusal))
}

/// Maps a non-2xx answer to its §7 category: the shared status table
/// ([`openarmature_http::status_category`]) refined from the body.
pub(crate) fn from_status(status: u16, headers: &HeaderMap, body: &[u8]) -> LlmError {
    let e = read_error_body(body);
    let context_window = is_context_window_error(&e);
    let category = match status {
        _ if context_window => ErrorCategory::ProviderInvalidRequest,
        404 if !is_model_not_found(&e) => ErrorCategory::ProviderInvalidRequest,
        400 if is_content_rejection(&e) => ErrorCategory::ProviderUnsupportedContentBlock,
        503 if is_model_not_loaded(&e) => ErrorCategory::ProviderModelNotLoaded,
        other => ErrorCategory::of_status(other),
    };
    let error_type = if context_window {
        Some(CONTEXT_LENGTH_EXCEEDED.to_owned())
    } else {
        e.kind.or(e.code)
    };
    status_error(category, status, headers, e.message, error_type, None)
}

/// The error of a non-2xx answer mapped to `category`: the body's message (else
/// `HTTP <status>`), the status, the provider's error type and, for a transient
/// category only, the wait the answer asks for: the headers' [`retry_after`], else
/// `body_delay` (a delay the body itself states). Kept for every transient answer:
/// a 503 may carry `Retry-After` too (RFC 9110).
pub(crate) fn status_error(
    category: ErrorCategory,
    status: u16,
    headers: &HeaderMap,
    message: Option<String>,
    error_type: Option<String>,
    body_delay: Option<Duration>,
) -> LlmError {
    let mut failure = ProviderFailure::new(
        message
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("HTTP {status}")),
    );
    failure.status = Some(status);
    failure.error_type = error_type;
    if category.is_transient() {
        failure.retry_after = retry_after(headers, SystemTime::now()).or(body_delay);
    }
    LlmError::from_failure(category, failure)
}

/// The wait a rate-limited answer asks for: `retry-after-ms` (milliseconds), else
/// `Retry-After` as delta-seconds or an HTTP date (relative to `now`; a past date
/// is zero). Unparseable or negative values are ignored; one too large for a
/// [`Duration`] is [`Duration::MAX`] (longer than any cap: the call stops with
/// `retry_after_exceeded` rather than retrying on its own backoff).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(saturating_secs(ms / 1000.0));
        }
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| saturating_secs(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `secs` (finite, not negative) as a [`Duration`], [`Duration::MAX`] past its range.
fn saturating_secs(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn status_table() {
        // `<status> <category> <body>`.
        crate::test_support::assert_status_table(
            from_status,
            |_, body| body.to_owned(),
            r#"401 authentication {}
               404 invalid_model {"error":{"code":"model_not_found","message":"m"}}
               404 invalid_model {"error":"model 'x' not found"}
               404 invalid_request not json
               503 model_not_loaded {"error":{"type":"model_not_loaded","message":"m"}}
               503 unavailable {"error":{"type":"service_unavailable","message":"down"}}
               500 unavailable
               400 unsupported_content_block {"error":{"code":"image_content_not_supported","message":"m"}}
               400 invalid_request {"error":{"code":"bad_request","message":"missing required field"}}
               429 rate_limit {}"#,
        );
        let e = from_status(
            503,
            &HeaderMap::new(),
            br#"{"error":{"type":"service_unavailable","message":"down 2"}}"#,
        );
        assert_eq!(e.to_string(), "down 2");
        assert_eq!(e.error_type(), Some("service_unavailable"));
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "30")]), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "30"), ("retry-after-ms", "1500")]),
                now
            ),
            Some(Duration::from_millis(1500))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(120));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_str(&date).unwrap_or(HeaderValue::from_static("x")),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        // Past a Duration's range: longer than any cap, not ignored.
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1e20")]), now),
            Some(Duration::MAX)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1e30")]), now),
            Some(Duration::MAX)
        );
    }
}
