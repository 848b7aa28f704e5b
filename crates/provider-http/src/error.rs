//! Spec: llm-provider §7 and retrieval-provider §7 (transport failures are
//! `provider_unavailable`; an oversized successful body is `provider_invalid_response`).

use std::error::Error as StdError;
use std::fmt;

use openarmature_core::{BoxError, Categorized, Category};

/// A failure of the transport itself, before any wire mapping reads the answer.
///
/// Its category is one of `provider_unavailable` (connect failure, timeout, a broken
/// successful body), `provider_invalid_response` (a successful body over the cap) or
/// `provider_invalid_request` (a base URL that is not `http(s)`, a client that cannot be
/// built). `source()` is the underlying reqwest or URL error, when there is one.
#[derive(Debug)]
pub struct TransportError {
    category: Category,
    message: String,
    source: Option<BoxError>,
}

impl TransportError {
    fn new(category: Category, message: String, source: Option<BoxError>) -> Self {
        TransportError {
            category,
            message,
            source,
        }
    }

    /// `provider_invalid_request` with `message` and its cause.
    pub(crate) fn invalid_request(
        message: String,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self::new(
            Category::PROVIDER_INVALID_REQUEST,
            message,
            Some(Box::new(source)),
        )
    }

    /// `provider_invalid_request` without a cause.
    pub(crate) fn invalid_request_message(message: String) -> Self {
        Self::new(Category::PROVIDER_INVALID_REQUEST, message, None)
    }

    /// A successful body (or a whole stream) over `cap` bytes:
    /// `provider_invalid_response`.
    pub fn too_large(cap: usize) -> Self {
        Self::new(
            Category::PROVIDER_INVALID_RESPONSE,
            format!("response body exceeds the {cap}-byte limit"),
            None,
        )
    }

    /// The category (see the type's docs for the three that occur).
    pub fn category(&self) -> Category {
        self.category
    }

    /// The message (equal to `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The category, the message and the underlying cause, for a provider crate that
    /// carries them in its own error type.
    pub fn into_parts(self) -> (Category, String, Option<BoxError>) {
        (self.category, self.message, self.source)
    }
}

/// A transport failure (connect, timeout, broken body): `provider_unavailable`.
impl From<reqwest::Error> for TransportError {
    fn from(e: reqwest::Error) -> Self {
        let what = if e.is_timeout() {
            "request timed out"
        } else if e.is_connect() {
            "cannot connect to the provider"
        } else {
            "transport error"
        };
        Self::new(
            Category::PROVIDER_UNAVAILABLE,
            format!("{what}: {e}"),
            Some(Box::new(e)),
        )
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TransportError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

impl Categorized for TransportError {
    fn category(&self) -> Option<Category> {
        Some(self.category)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_body_is_an_invalid_response() {
        let e = TransportError::too_large(1024);
        assert_eq!(e.category(), Category::PROVIDER_INVALID_RESPONSE);
        assert_eq!(e.to_string(), "response body exceeds the 1024-byte limit");
        assert!(!Categorized::is_transient(&e));
        let (category, message, source) = e.into_parts();
        assert_eq!(category, Category::PROVIDER_INVALID_RESPONSE);
        assert_eq!(message, "response body exceeds the 1024-byte limit");
        assert!(source.is_none());
    }
}
