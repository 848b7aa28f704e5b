//! Spec: llm-provider §7 / §8.x.3 and retrieval-provider §7 / §8.x (the HTTP status →
//! category table the wire mappings share).

use openarmature_core::Category;

/// The §7 category of an HTTP error status, before any wire-specific refinement.
///
/// | HTTP | category |
/// |---|---|
/// | 401, 403 | `provider_authentication` |
/// | 404 | `provider_invalid_model` (the bound model is the one resource a provider call names) |
/// | 408 | `provider_unavailable` (the server timed the request out: transient) |
/// | 429 | `provider_rate_limit` |
/// | other 4xx (400, 413, 422, ...) | `provider_invalid_request` |
/// | 5xx and any other status | `provider_unavailable` |
///
/// The wire mappings refine it from the error body where their section says so: a 404
/// that does not name the model is `provider_invalid_request` on the OpenAI and
/// Anthropic wires, a content-block rejection `provider_unsupported_content_block`, an
/// OpenAI-compatible 503 for a loading model `provider_model_not_loaded`, Anthropic's
/// 402 `provider_authentication`.
///
/// # Examples
/// ```
/// use openarmature_core::Category;
/// use openarmature_http::status_category;
/// assert_eq!(status_category(401), Category::PROVIDER_AUTHENTICATION);
/// assert_eq!(status_category(422), Category::PROVIDER_INVALID_REQUEST);
/// assert_eq!(status_category(503), Category::PROVIDER_UNAVAILABLE);
/// ```
pub fn status_category(status: u16) -> Category {
    match status {
        401 | 403 => Category::PROVIDER_AUTHENTICATION,
        404 => Category::PROVIDER_INVALID_MODEL,
        408 => Category::PROVIDER_UNAVAILABLE,
        429 => Category::PROVIDER_RATE_LIMIT,
        400..=499 => Category::PROVIDER_INVALID_REQUEST,
        _ => Category::PROVIDER_UNAVAILABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_table() {
        let table = [
            (400, Category::PROVIDER_INVALID_REQUEST),
            (401, Category::PROVIDER_AUTHENTICATION),
            (402, Category::PROVIDER_INVALID_REQUEST),
            (403, Category::PROVIDER_AUTHENTICATION),
            (404, Category::PROVIDER_INVALID_MODEL),
            (408, Category::PROVIDER_UNAVAILABLE),
            (413, Category::PROVIDER_INVALID_REQUEST),
            (422, Category::PROVIDER_INVALID_REQUEST),
            (429, Category::PROVIDER_RATE_LIMIT),
            (500, Category::PROVIDER_UNAVAILABLE),
            (503, Category::PROVIDER_UNAVAILABLE),
            (529, Category::PROVIDER_UNAVAILABLE),
            (302, Category::PROVIDER_UNAVAILABLE),
        ];
        for (status, category) in table {
            assert_eq!(status_category(status), category, "HTTP {status}");
        }
        assert!(status_category(429).is_transient());
        assert!(!status_category(400).is_transient());
    }
}
