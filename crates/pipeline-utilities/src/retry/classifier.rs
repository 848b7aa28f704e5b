//! Spec: pipeline-utilities §6.1 *Default transient classifier*.

use std::error::Error as StdError;

#[cfg(test)]
use openarmature_graph::CategorizedError;
use openarmature_graph::{category_of, is_carrier, is_transient_link, StateView};

/// Decides whether a failed attempt is retried. `state` is the state the wrapped
/// chain received (absent in the LLM call-level lane, which has no graph state).
pub trait Classifier: Send + Sync + 'static {
    /// True if `error` is retryable.
    fn is_retryable(&self, error: &(dyn StdError + 'static), state: Option<&dyn StateView>)
        -> bool;
}

impl<F> Classifier for F
where
    F: Fn(&(dyn StdError + 'static), Option<&dyn StateView>) -> bool + Send + Sync + 'static,
{
    fn is_retryable(
        &self,
        error: &(dyn StdError + 'static),
        state: Option<&dyn StateView>,
    ) -> bool {
        self(error, state)
    }
}

/// One link is transient: its category is transient (`Category::is_transient`), or its
/// carrying spec marks it transient.
fn transient_link(error: &(dyn StdError + 'static)) -> bool {
    is_transient_link(error)
}

/// The §6.1 default: retry the transient categories (`Category::is_transient`, or an
/// error its carrying spec marks transient), looking through one `node_exception`
/// carrier to its direct cause — never deeper, by design. Ignores the state.
/// Cancellation is never retried: in Rust it is dropping the future, which ends the
/// retry loop at its next await.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultClassifier;

impl Classifier for DefaultClassifier {
    fn is_retryable(
        &self,
        error: &(dyn StdError + 'static),
        _state: Option<&dyn StateView>,
    ) -> bool {
        is_transient(error)
    }
}

/// The default classifier's decision for `error`.
pub fn is_transient(error: &(dyn StdError + 'static)) -> bool {
    transient_link(error) || (is_carrier(error) && error.source().is_some_and(transient_link))
}

/// Retries exactly the listed categories, with the same one-level carrier rule.
#[derive(Debug, Clone, Default)]
pub struct CategoryClassifier {
    categories: Vec<String>,
}

impl CategoryClassifier {
    /// Retries errors whose category is in `categories`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(categories: I) -> Self {
        CategoryClassifier {
            categories: categories.into_iter().map(Into::into).collect(),
        }
    }
}

impl Classifier for CategoryClassifier {
    fn is_retryable(
        &self,
        error: &(dyn StdError + 'static),
        _state: Option<&dyn StateView>,
    ) -> bool {
        let listed: Vec<&str> = self.categories.iter().map(String::as_str).collect();
        let hit = |e: &(dyn StdError + 'static)| {
            category_of(e)
                .map(|c| c.as_str())
                .is_some_and(|c| listed.contains(&c))
        };
        hit(error) || (is_carrier(error) && error.source().is_some_and(hit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_classifier_categories() {
        for c in [
            "provider_unavailable",
            "provider_rate_limit",
            "provider_model_not_loaded",
        ] {
            assert!(is_transient(&CategorizedError::new(
                openarmature_graph::Category::from_name(c),
                "x"
            )));
        }
        for c in [
            "provider_authentication",
            "provider_invalid_model",
            "provider_invalid_request",
            "provider_invalid_response",
        ] {
            assert!(!is_transient(&CategorizedError::new(
                openarmature_graph::Category::from_name(c),
                "x"
            )));
        }
        assert!(!is_transient(&CategorizedError::uncategorized("bare")));
        assert!(is_transient(
            &CategorizedError::uncategorized("marked").transient(true)
        ));
    }

    #[test]
    fn default_classifier_looks_only_one_level_into_plain_errors() {
        let inner =
            CategorizedError::new(openarmature_graph::Category::PROVIDER_RATE_LIMIT, "slow");
        let outer = CategorizedError::new(
            openarmature_graph::Category::PROVIDER_INVALID_RESPONSE,
            "wrapped",
        )
        .with_source(inner);
        // Not a carrier: the surface category decides.
        assert!(!is_transient(&outer));
    }
}
