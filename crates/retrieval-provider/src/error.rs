//! Spec: retrieval-provider §7 (error semantics: the llm-provider §7 categories that
//! apply to embedding and rerank, and the exception-flow contract).
//!
//! A [`RetrievalError`] carries one [`RetrievalCategory`], a message, the vendor's
//! error type when the provider named one, and the underlying cause. Inside a node it
//! converts to the engine's [`CategorizedError`] (or is recognised through the
//! registered category probe), so retry classifiers and failure isolation see its
//! category.

use std::error::Error as StdError;

use openarmature_graph::{BoxError, CategorizedError};

/// The retrieval-applicable §7 categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetrievalCategory {
    /// Credentials missing, invalid or revoked.
    Authentication,
    /// Transport failure, provider outage, timeout.
    Unavailable,
    /// The bound model is not recognised by the provider.
    InvalidModel,
    /// The bound model is recognised but not currently usable.
    ModelNotLoaded,
    /// The provider signalled a rate limit.
    RateLimit,
    /// The provider returned a malformed payload (a §4 / §6 invariant violated).
    InvalidResponse,
    /// The caller's input failed pre-send validation, or the provider rejected it.
    InvalidRequest,
}

impl RetrievalCategory {
    /// The spec's category string, e.g. `provider_unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            RetrievalCategory::Authentication => "provider_authentication",
            RetrievalCategory::Unavailable => "provider_unavailable",
            RetrievalCategory::InvalidModel => "provider_invalid_model",
            RetrievalCategory::ModelNotLoaded => "provider_model_not_loaded",
            RetrievalCategory::RateLimit => "provider_rate_limit",
            RetrievalCategory::InvalidResponse => "provider_invalid_response",
            RetrievalCategory::InvalidRequest => "provider_invalid_request",
        }
    }

    /// Whether a retry may succeed (outages and rate limits).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RetrievalCategory::Unavailable | RetrievalCategory::RateLimit
        )
    }
}

impl std::fmt::Display for RetrievalCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed `embed()` / `rerank()` / `ready()` call.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RetrievalError {
    category: RetrievalCategory,
    message: String,
    error_type: Option<String>,
    status: Option<u16>,
    #[source]
    source: Option<BoxError>,
}

impl RetrievalError {
    /// An error of `category` with `message`.
    pub fn new(category: RetrievalCategory, message: impl Into<String>) -> Self {
        RetrievalError {
            category,
            message: message.into(),
            error_type: None,
            status: None,
            source: None,
        }
    }

    /// `provider_invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(RetrievalCategory::InvalidRequest, message)
    }

    /// `provider_invalid_response`.
    pub fn invalid_response(message: impl Into<String>) -> Self {
        Self::new(RetrievalCategory::InvalidResponse, message)
    }

    /// `provider_unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(RetrievalCategory::Unavailable, message)
    }

    /// Sets the vendor error type (e.g. the body's `error.type`).
    pub fn with_error_type(mut self, error_type: Option<String>) -> Self {
        self.error_type = error_type;
        self
    }

    /// Sets the HTTP status the provider answered with.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the underlying cause.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The §7 category.
    pub fn category(&self) -> RetrievalCategory {
        self.category
    }

    /// The message (the vendor's message when the provider sent one).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The vendor error type, when the provider named one.
    pub fn error_type(&self) -> Option<&str> {
        self.error_type.as_deref()
    }

    /// The HTTP status, for errors the provider answered with.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Whether a retry may succeed.
    pub fn is_transient(&self) -> bool {
        self.category.is_transient()
    }

    /// The error as the engine's classifiers see it: a [`CategorizedError`] with this
    /// category, transience and message, and this error as its `source()`.
    pub fn into_categorized(self) -> CategorizedError {
        CategorizedError::new(Some(self.category.as_str()), self.message.clone())
            .transient(self.is_transient())
            .with_source(self)
    }

    /// [`RetrievalError::into_categorized`], boxed: what a node body returns.
    pub fn into_box_error(self) -> BoxError {
        Box::new(self.into_categorized())
    }

    /// The first [`RetrievalError`] in `error`'s cause chain (itself included).
    pub fn find_in<'e>(error: &'e (dyn StdError + 'static)) -> Option<&'e RetrievalError> {
        let mut current = Some(error);
        for _ in 0..64 {
            let e = current?;
            if let Some(found) = e.downcast_ref::<RetrievalError>() {
                return Some(found);
            }
            current = e.source();
        }
        None
    }
}

impl From<RetrievalError> for CategorizedError {
    fn from(error: RetrievalError) -> Self {
        error.into_categorized()
    }
}

fn category_probe(error: &(dyn StdError + 'static)) -> Option<&'static str> {
    error
        .downcast_ref::<RetrievalError>()
        .map(|e| e.category.as_str())
}

/// Registers the engine category probe once per process, so a [`RetrievalError`]
/// returned from a node with `?` keeps its category.
pub(crate) fn register_category_probe() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| openarmature_graph::register_category_probe(category_probe));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use openarmature_graph::category_of;

    #[test]
    fn categories_reach_the_engine_through_both_paths() {
        register_category_probe();
        let boxed: BoxError = Box::new(RetrievalError::unavailable("down"));
        assert_eq!(category_of(boxed.as_ref()), Some("provider_unavailable"));
        let categorized = RetrievalError::invalid_request("bad").into_box_error();
        assert_eq!(
            category_of(categorized.as_ref()),
            Some("provider_invalid_request")
        );
        let found = RetrievalError::find_in(categorized.as_ref()).unwrap();
        assert_eq!(found.category(), RetrievalCategory::InvalidRequest);
    }

    #[test]
    fn only_outages_and_rate_limits_are_transient() {
        assert!(RetrievalCategory::Unavailable.is_transient());
        assert!(RetrievalCategory::RateLimit.is_transient());
        assert!(!RetrievalCategory::InvalidResponse.is_transient());
        assert!(!RetrievalCategory::Authentication.is_transient());
    }
}
