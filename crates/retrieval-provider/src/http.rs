//! Spec: retrieval-provider §8 (transport shared by the wire mappings) and §7 (the
//! HTTP status → category mapping every §8.x mapping states: `401` / `403`
//! authentication, `404` unknown model, `429` rate limit, `5xx` and transport
//! failures unavailable, other `4xx` (`400` / `413` / `422`) invalid request).
//!
//! One JSON POST per provider request, with the successful body read under a size
//! cap (a body over it is `provider_invalid_response`) and an error body classified
//! by its status, keeping the vendor's `type` and `message` when it names them.

use std::time::Duration;

use serde_json::Value;

use crate::error::{RetrievalCategory, RetrievalError};

/// The largest successful body read (64 MiB: a large embedding batch fits).
pub(crate) const BODY_CAP: usize = 64 * 1024 * 1024;

/// Builds the reqwest (rustls) client the providers share.
///
/// # Errors
/// `provider_invalid_request` when the client cannot be built.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, RetrievalError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("openarmature-rust/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            RetrievalError::invalid_request(format!("cannot build the HTTP client: {e}"))
                .with_source(e)
        })
}

/// Checks that `base` (trailing slashes removed) is an `http(s)` origin.
///
/// # Errors
/// `provider_invalid_request` otherwise.
pub(crate) fn base_url(base: &str) -> Result<String, RetrievalError> {
    let base = base.trim_end_matches('/').to_owned();
    let url = reqwest::Url::parse(&base).map_err(|e| {
        RetrievalError::invalid_request(format!("invalid base URL `{base}`: {e}")).with_source(e)
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(RetrievalError::invalid_request(format!(
            "base URL `{base}` must be http or https"
        )));
    }
    Ok(base)
}

/// POSTs `body` to `url` with a bearer token and returns the parsed JSON answer.
///
/// # Errors
/// The status's §7 category for a non-2xx answer; `provider_unavailable` for a
/// transport failure; `provider_invalid_response` for a 2xx body that is not JSON or
/// exceeds [`BODY_CAP`].
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: &Value,
) -> Result<Value, RetrievalError> {
    let bytes = serde_json::to_vec(body).map_err(|e| {
        RetrievalError::invalid_request(format!("cannot encode the request: {e}")).with_source(e)
    })?;
    let request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(bytes);
    execute(request, api_key).await
}

/// GETs `url` with a bearer token and returns the parsed JSON answer (errors as
/// [`post_json`]).
pub(crate) async fn get_json(
    client: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
) -> Result<Value, RetrievalError> {
    execute(client.get(url), api_key).await
}

async fn execute(
    mut request: reqwest::RequestBuilder,
    api_key: Option<&str>,
) -> Result<Value, RetrievalError> {
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let mut response = request.send().await.map_err(transport_error)?;
    let status = response.status().as_u16();
    let success = (200..300).contains(&status);
    if success
        && response
            .content_length()
            .is_some_and(|n| n > BODY_CAP as u64)
    {
        return Err(too_large());
    }
    let mut raw = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if raw.len() + chunk.len() > BODY_CAP {
                    if success {
                        return Err(too_large());
                    }
                    break;
                }
                raw.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(_) if !success => break,
            Err(e) => return Err(transport_error(e)),
        }
    }
    if !success {
        return Err(status_error(status, &raw));
    }
    serde_json::from_slice(&raw).map_err(|e| {
        RetrievalError::invalid_response(format!("the response body is not JSON: {e}"))
            .with_source(e)
    })
}

fn too_large() -> RetrievalError {
    RetrievalError::invalid_response(format!("response body exceeds the {BODY_CAP}-byte limit"))
}

/// A transport failure (connect, timeout, broken body): `provider_unavailable`.
fn transport_error(e: reqwest::Error) -> RetrievalError {
    let what = if e.is_timeout() {
        "request timed out"
    } else if e.is_connect() {
        "cannot connect to the provider"
    } else {
        "transport error"
    };
    RetrievalError::unavailable(format!("{what}: {e}")).with_source(e)
}

/// The §7 category of an HTTP error status.
pub(crate) fn category_of_status(status: u16) -> RetrievalCategory {
    match status {
        401 | 403 => RetrievalCategory::Authentication,
        404 => RetrievalCategory::InvalidModel,
        429 => RetrievalCategory::RateLimit,
        500..=599 => RetrievalCategory::Unavailable,
        _ => RetrievalCategory::InvalidRequest,
    }
}

/// The error for a non-2xx answer: its status's category, with the vendor's message
/// and type when present: OpenAI's `{"error": {"message", "type"}}`, Cohere's
/// `{"message"}`, TEI's `{"error": "..", "error_type"}`, Jina's `{"detail", "code"}`.
pub(crate) fn status_error(status: u16, body: &[u8]) -> RetrievalError {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().and_then(|j| j.get("error"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let top = |key: &str| text(json.as_ref().and_then(|j| j.get(key)));
    let message = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(error.filter(|e| e.is_string())))
        .or_else(|| top("message"))
        .or_else(|| top("detail"))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| format!("the provider answered HTTP {status}"));
    let error_type = text(error.and_then(|e| e.get("type")))
        .or_else(|| text(error.and_then(|e| e.get("code"))))
        .or_else(|| top("error_type"))
        .or_else(|| top("code"))
        .filter(|t| !t.is_empty());
    RetrievalError::new(category_of_status(status), message)
        .with_error_type(error_type)
        .with_status(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_section_7_categories() {
        assert_eq!(category_of_status(401), RetrievalCategory::Authentication);
        assert_eq!(category_of_status(404), RetrievalCategory::InvalidModel);
        assert_eq!(category_of_status(429), RetrievalCategory::RateLimit);
        assert_eq!(category_of_status(503), RetrievalCategory::Unavailable);
        assert_eq!(category_of_status(400), RetrievalCategory::InvalidRequest);
        assert_eq!(category_of_status(422), RetrievalCategory::InvalidRequest);
    }

    #[test]
    fn error_bodies_keep_the_vendor_message_and_type() {
        let e = status_error(
            503,
            br#"{"error":{"message":"down for maintenance","type":"server_error"}}"#,
        );
        assert_eq!(e.message(), "down for maintenance");
        assert_eq!(e.error_type(), Some("server_error"));
        assert_eq!(e.status(), Some(503));
        let cohere = status_error(429, br#"{"message":"slow down"}"#);
        assert_eq!(cohere.category(), RetrievalCategory::RateLimit);
        assert_eq!(cohere.message(), "slow down");
        let tei = status_error(413, br#"{"error":"too long","error_type":"Validation"}"#);
        assert_eq!(
            (tei.message(), tei.error_type()),
            ("too long", Some("Validation"))
        );
        let jina = status_error(429, br#"{"detail":"slow","code":"RATE_LIMIT"}"#);
        assert_eq!(
            (jina.message(), jina.error_type()),
            ("slow", Some("RATE_LIMIT"))
        );
        let bare = status_error(500, b"oops");
        assert_eq!(bare.message(), "the provider answered HTTP 500");
        assert_eq!(bare.error_type(), None);
    }

    #[test]
    fn base_urls_must_be_http() {
        assert_eq!(
            base_url("http://127.0.0.1:9/").ok().as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert!(base_url("ftp://x").is_err());
        assert!(base_url("not a url").is_err());
    }
}
