//! Spec: retrieval-provider §7 (error semantics: the llm-provider §7 categories that
//! apply to embedding and rerank, and the exception-flow contract).
//!
//! A [`RetrievalError`] carries one [`RetrievalCategory`], a message, the vendor's
//! error type when the provider named one, and the underlying cause. It implements
//! [`Categorized`], so `?` inside a node converts it into the engine's
//! [`NodeError`](openarmature_graph::NodeError) with its category captured: retry
//! classifiers and failure isolation see it. The categories are the llm-provider ones,
//! shared through [`Category`] (same names, one definition in `openarmature-core`).

use std::error::Error as StdError;

use openarmature_graph::{BoxError, Categorized, CategorizedError, Category};
use openarmature_http::TransportError;

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
    /// The seven retrieval-applicable categories, in §7 order.
    pub const ALL: [RetrievalCategory; 7] = [
        RetrievalCategory::Authentication,
        RetrievalCategory::Unavailable,
        RetrievalCategory::InvalidModel,
        RetrievalCategory::ModelNotLoaded,
        RetrievalCategory::RateLimit,
        RetrievalCategory::InvalidResponse,
        RetrievalCategory::InvalidRequest,
    ];

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

    /// The shared [`Category`] of this category.
    pub fn as_category(self) -> Category {
        match self {
            RetrievalCategory::Authentication => Category::PROVIDER_AUTHENTICATION,
            RetrievalCategory::Unavailable => Category::PROVIDER_UNAVAILABLE,
            RetrievalCategory::InvalidModel => Category::PROVIDER_INVALID_MODEL,
            RetrievalCategory::ModelNotLoaded => Category::PROVIDER_MODEL_NOT_LOADED,
            RetrievalCategory::RateLimit => Category::PROVIDER_RATE_LIMIT,
            RetrievalCategory::InvalidResponse => Category::PROVIDER_INVALID_RESPONSE,
            RetrievalCategory::InvalidRequest => Category::PROVIDER_INVALID_REQUEST,
        }
    }

    /// Whether a retry may succeed (outages and rate limits).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RetrievalCategory::Unavailable | RetrievalCategory::RateLimit
        )
    }

    /// The retrieval category named by a shared [`Category`], if it is one of them.
    pub fn from_category(category: Category) -> Option<RetrievalCategory> {
        RetrievalCategory::ALL
            .into_iter()
            .find(|c| c.as_category() == category)
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
        CategorizedError::new(self.category.as_category(), self.message.clone())
            .transient(self.is_transient())
            .with_source(self)
    }

    /// The first [`RetrievalError`] in `error`'s cause chain (itself included).
    pub fn find_in<'e>(error: &'e (dyn StdError + 'static)) -> Option<&'e RetrievalError> {
        openarmature_graph::find_in::<RetrievalError>(error)
    }
}

/// A transport failure keeps its category, message and cause (`source()` is the
/// reqwest or URL error itself).
impl From<TransportError> for RetrievalError {
    fn from(error: TransportError) -> Self {
        let (category, message, source) = error.into_parts();
        let category =
            RetrievalCategory::from_category(category).unwrap_or(RetrievalCategory::Unavailable);
        RetrievalError {
            source,
            ..RetrievalError::new(category, message)
        }
    }
}

impl From<RetrievalError> for CategorizedError {
    fn from(error: RetrievalError) -> Self {
        error.into_categorized()
    }
}

impl Categorized for RetrievalError {
    fn category(&self) -> Option<Category> {
        Some(self.category.as_category())
    }

    fn is_transient(&self) -> bool {
        RetrievalError::is_transient(self)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use openarmature_graph::{category_of, NodeError};

    #[test]
    fn categories_reach_the_engine_through_a_node_error() {
        fn node() -> Result<(), NodeError> {
            Err(RetrievalError::unavailable("down"))?
        }
        let err = node().unwrap_err();
        assert_eq!(category_of(&*err), Some(Category::PROVIDER_UNAVAILABLE));
        assert!(err.is_transient());
        let boxed = openarmature_graph::erase(err);
        assert_eq!(category_of(&*boxed), Some(Category::PROVIDER_UNAVAILABLE));
        let categorized = RetrievalError::invalid_request("bad").into_categorized();
        assert_eq!(
            category_of(&categorized),
            Some(Category::PROVIDER_INVALID_REQUEST)
        );
        let found = RetrievalError::find_in(&categorized).unwrap();
        assert_eq!(found.category(), RetrievalCategory::InvalidRequest);
        // Retrieval keeps its own transience: a not-loaded model is not retried here.
        let not_loaded =
            NodeError::from(RetrievalError::new(RetrievalCategory::ModelNotLoaded, "m"));
        assert!(!not_loaded.is_transient());
    }

    #[test]
    fn shared_categories_and_transport_failures_convert() {
        for c in RetrievalCategory::ALL {
            assert_eq!(c.as_category().as_str(), c.as_str());
            assert_eq!(RetrievalCategory::from_category(c.as_category()), Some(c));
        }
        assert_eq!(
            RetrievalCategory::from_category(Category::STRUCTURED_OUTPUT_INVALID),
            None
        );
        let e = RetrievalError::from(TransportError::too_large(8));
        assert_eq!(e.category(), RetrievalCategory::InvalidResponse);
        assert_eq!(e.message(), "response body exceeds the 8-byte limit");
        let bad = RetrievalError::from(openarmature_http::base_url("nope").unwrap_err());
        assert_eq!(bad.category(), RetrievalCategory::InvalidRequest);
        assert!(StdError::source(&bad).is_some());
    }

    #[test]
    fn only_outages_and_rate_limits_are_transient() {
        assert!(RetrievalCategory::Unavailable.is_transient());
        assert!(RetrievalCategory::RateLimit.is_transient());
        assert!(!RetrievalCategory::InvalidResponse.is_transient());
        assert!(!RetrievalCategory::Authentication.is_transient());
    }
}
