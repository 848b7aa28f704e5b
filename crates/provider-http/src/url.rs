//! Spec: llm-provider §8 / retrieval-provider §8 (a provider's configured origin is an
//! `http(s)` URL; a bad one is `provider_invalid_request` at construction).

use crate::TransportError;

/// Checks that `base` (trailing slashes removed) is an `http(s)` URL and returns it as
/// text, ready for `format!("{base}/path")`.
///
/// # Errors
/// `provider_invalid_request` otherwise.
///
/// # Examples
/// ```
/// assert_eq!(openarmature_http::base_url("http://127.0.0.1:9/v1/").ok().as_deref(),
///            Some("http://127.0.0.1:9/v1"));
/// assert!(openarmature_http::base_url("ftp://x").is_err());
/// ```
pub fn base_url(base: &str) -> Result<String, TransportError> {
    parse_base_url(base).map(|_| base.trim_end_matches('/').to_owned())
}

/// Checks that `base` (trailing slashes removed) is an `http(s)` URL and returns it
/// parsed, for a mapping that appends path segments.
///
/// # Errors
/// `provider_invalid_request` otherwise.
pub fn parse_base_url(base: &str) -> Result<reqwest::Url, TransportError> {
    let base = base.trim_end_matches('/');
    let url = reqwest::Url::parse(base).map_err(|e| {
        TransportError::invalid_request(format!("invalid base URL `{base}`: {e}"), e)
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TransportError::invalid_request_message(format!(
            "base URL `{base}` must be http or https"
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openarmature_core::Category;

    #[test]
    fn base_urls_must_be_http() {
        assert_eq!(
            base_url("http://127.0.0.1:9/").ok().as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(
            parse_base_url("https://example.com/v1beta/")
                .map(|u| u.path().to_owned())
                .ok()
                .as_deref(),
            Some("/v1beta")
        );
        for bad in ["ftp://x", "not a url"] {
            let e = base_url(bad).err().map(|e| (e.category(), e.to_string()));
            assert_eq!(e.map(|(c, _)| c), Some(Category::PROVIDER_INVALID_REQUEST));
        }
        assert_eq!(
            base_url("ftp://x").err().map(|e| e.to_string()).as_deref(),
            Some("base URL `ftp://x` must be http or https")
        );
    }
}
