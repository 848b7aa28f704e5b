//! Spec: pipeline-utilities §6.3 *Cause fidelity* / §6.4 — the cause-chain walk the
//! engine's events, the retry classifier and failure isolation all share.

use std::error::Error as StdError;

use crate::error::category_of;
use crate::subgraph::SubgraphFailure;

/// One link of an error's cause chain (outermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseLink {
    /// The link's category (per its carrying spec), or `None`.
    pub category: Option<String>,
    /// The link's own message (its `Display`).
    pub message: String,
    /// True for a graph-engine §4 `node_exception` carrier the engine added at a
    /// boundary (a subgraph, fan-out instance or branch), false otherwise.
    pub carrier: bool,
}

/// Whether `err` is one of the engine's carrier wrappers.
pub fn is_carrier(err: &(dyn StdError + 'static)) -> bool {
    if let Some(e) = err.downcast_ref::<crate::NodeError>() {
        return is_carrier(e.inner());
    }
    err.is::<SubgraphFailure>() || err.is::<Carrier>()
}

/// A graph-engine §4 `node_exception`-family carrier that composite nodes add at a
/// boundary (e.g. pipeline-utilities `parallel_branches_branch_failed`): it keeps
/// the wrapped error as its source, so cause-chain classification looks through it.
#[derive(Debug)]
pub struct Carrier {
    category: crate::Category,
    message: String,
    branch_name: Option<String>,
    source: crate::BoxError,
}

impl Carrier {
    /// Wraps `source` under `category` with a context `message`.
    pub fn new(
        category: crate::Category,
        message: impl Into<String>,
        source: crate::BoxError,
    ) -> Self {
        Carrier {
            category,
            message: message.into(),
            branch_name: None,
            source,
        }
    }

    /// Records the failing parallel branch (pipeline-utilities §11.9).
    pub fn with_branch(mut self, branch_name: impl Into<String>) -> Self {
        self.branch_name = Some(branch_name.into());
        self
    }

    /// The failing parallel branch, if any.
    pub fn branch_name(&self) -> Option<&str> {
        self.branch_name.as_deref()
    }

    /// The carrier's category.
    pub fn category(&self) -> crate::Category {
        self.category
    }

    /// The wrapped error.
    pub fn inner(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.source.as_ref()
    }
}

impl std::fmt::Display for Carrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.message, self.source)
    }
}

impl crate::Categorized for Carrier {
    fn category(&self) -> Option<crate::Category> {
        Some(self.category)
    }
}

impl StdError for Carrier {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self.source.as_ref())
    }
}

/// Removes one [`SubgraphFailure`] layer: its source when `err` is one, else `err`.
pub fn strip_subgraph_carrier(err: crate::BoxError) -> crate::BoxError {
    match err.downcast::<SubgraphFailure>() {
        Ok(failure) => failure.into_source(),
        Err(other) => other,
    }
}

/// Walks `err` and its `source()` chain, one link per error, outermost first.
/// Terminates on a repeated reference, so a cyclic chain cannot hang.
pub fn cause_chain(err: &(dyn StdError + 'static)) -> Vec<CauseLink> {
    let mut seen: Vec<*const ()> = Vec::new();
    let mut chain = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        let address = e as *const dyn StdError as *const ();
        if seen.contains(&address) {
            break;
        }
        seen.push(address);
        chain.push(CauseLink {
            category: category_of(e).map(|c| c.as_str().to_owned()),
            message: e.to_string(),
            carrier: is_carrier(e),
        });
        current = e.source();
    }
    chain
}

/// The derived `(category, message)` of a chain (pipeline-utilities §6.3): the
/// outermost non-carrier link with a non-empty category; without one, `None` and
/// the outermost non-carrier link's message.
pub fn derive(chain: &[CauseLink]) -> (Option<String>, String) {
    let non_carriers = || chain.iter().filter(|l| !l.carrier);
    if let Some(link) =
        non_carriers().find(|l| l.category.as_deref().is_some_and(|c| !c.is_empty()))
    {
        return (link.category.clone(), link.message.clone());
    }
    let message = non_carriers()
        .next()
        .or(chain.first())
        .map(|l| l.message.clone())
        .unwrap_or_default();
    (None, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CategorizedError, Category};

    #[test]
    fn chain_and_derivation() {
        let inner = CategorizedError::new(Category::PROVIDER_UNAVAILABLE, "origin");
        let outer = CategorizedError::new(Category::PROVIDER_INVALID_RESPONSE, "surface")
            .with_source(inner);
        let chain = cause_chain(&outer);
        assert_eq!(chain.len(), 2);
        assert_eq!(
            derive(&chain),
            (Some("provider_invalid_response".into()), "surface".into())
        );
        let bare = CategorizedError::uncategorized("bare");
        assert_eq!(derive(&cause_chain(&bare)), (None, "bare".into()));
    }
}
