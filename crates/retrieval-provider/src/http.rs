//! Spec: retrieval-provider §8 (transport shared by the wire mappings) and §7 (the
//! HTTP status → category mapping every §8.x mapping states: `401` / `403`
//! authentication, `404` unknown model, `429` rate limit, `5xx` and transport
//! failures unavailable, other `4xx` (`400` / `413` / `422`) invalid request; `408`
//! unavailable, as on the LLM wires).
//!
//! One JSON POST per provider request through the shared transport
//! (`openarmature-http`: the successful body read under a size cap, a body over it
//! `provider_invalid_response`) and an error body classified by its status (the
//! shared table), keeping the vendor's `type` and `message` when it names them.

use openarmature_http::HttpClient;
use serde_json::Value;

use crate::error::{RetrievalCategory, RetrievalError};

/// The default response-size cap (64 MiB: a large embedding batch fits); a provider's
/// [`Transport::max_response_bytes`](openarmature_http::Transport::max_response_bytes)
/// overrides it.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// POSTs `body` to `url` with a bearer token and returns the parsed JSON answer.
///
/// # Errors
/// The status's §7 category for a non-2xx answer; `provider_unavailable` for a
/// transport failure; `provider_invalid_response` for a 2xx body that is not JSON or
/// exceeds the cap.
pub(crate) async fn post_json(
    client: &HttpClient,
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
    execute(client, request, api_key).await
}

/// GETs `url` with a bearer token and returns the parsed JSON answer (errors as
/// [`post_json`]).
pub(crate) async fn get_json(
    client: &HttpClient,
    url: &str,
    api_key: Option<&str>,
) -> Result<Value, RetrievalError> {
    execute(client, client.get(url), api_key).await
}

async fn execute(
    client: &HttpClient,
    mut request: reqwest::RequestBuilder,
    api_key: Option<&str>,
) -> Result<Value, RetrievalError> {
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let reply = client.execute(request).await?;
    if !reply.is_success() {
        return Err(status_error(reply.status, &reply.body));
    }
    serde_json::from_slice(&reply.body).map_err(|e| {
        RetrievalError::invalid_response(format!("the response body is not JSON: {e}"))
            .with_source(e)
    })
}

/// The §7 category of an HTTP error status: the table shared with the LLM providers
/// ([`openarmature_http::status_category`]).
pub(crate) fn category_of_status(status: u16) -> RetrievalCategory {
    RetrievalCategory::from_category(openarmature_http::status_category(status))
        .unwrap_or(RetrievalCategory::Unavailable)
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
        // A server-side request timeout is transient, as on the LLM wires.
        assert_eq!(category_of_status(408), RetrievalCategory::Unavailable);
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
}
