//! Spec: graph-engine §2 *Node* — the error a node body returns.

use std::error::Error as StdError;
use std::fmt;

use crate::categorized::{BoxError, Categorized, CategorizedError};
use crate::Category;

/// What a node body returns on failure: any error, with its category captured when it
/// was converted.
///
/// `?` converts every [`Categorized`] error (with its category and transience), a
/// [`BoxError`] (keeping a [`CategorizedError`]'s category), and a `&str` / `String`
/// message (uncategorised). The error is transparent: its `Display` and `source()` are
/// the wrapped error's, and [`NodeError::downcast_ref`] reaches the wrapped error.
///
/// It implements [`std::error::Error`], so it travels in any cause chain; it does not
/// implement [`Categorized`] (its category is an inherent method), which is what lets
/// `From` accept every categorized error.
pub struct NodeError {
    inner: BoxError,
    category: Option<Category>,
    transient: bool,
}

impl NodeError {
    /// Wraps any error; the category is captured only from a [`CategorizedError`] or
    /// another [`NodeError`] inside the box.
    pub fn new(error: impl Into<BoxError>) -> Self {
        NodeError::from(error.into())
    }

    /// Wraps `error` under an explicit `category`.
    pub fn with_category(category: Category, error: impl Into<BoxError>) -> Self {
        NodeError {
            inner: error.into(),
            category: Some(category),
            transient: category.is_transient(),
        }
    }

    /// An uncategorised error with `message`.
    pub fn msg(message: impl Into<String>) -> Self {
        NodeError::new(message.into())
    }

    /// The captured category.
    pub fn category(&self) -> Option<Category> {
        self.category
    }

    /// The captured transience.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// The wrapped error.
    pub fn inner(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.inner
    }

    /// The wrapped error, unwrapped.
    pub fn into_inner(self) -> BoxError {
        self.inner
    }

    /// The wrapped error as a `T`, if it is one.
    pub fn downcast_ref<T: StdError + 'static>(&self) -> Option<&T> {
        self.inner.downcast_ref::<T>()
    }

    /// Whether the wrapped error is a `T`.
    pub fn is<T: StdError + 'static>(&self) -> bool {
        self.inner.is::<T>()
    }
}

impl<E: Categorized + StdError + Send + Sync + 'static> From<E> for NodeError {
    fn from(error: E) -> Self {
        NodeError {
            category: error.category(),
            transient: error.is_transient(),
            inner: Box::new(error),
        }
    }
}

impl From<BoxError> for NodeError {
    fn from(error: BoxError) -> Self {
        let error = match error.downcast::<NodeError>() {
            Ok(node_error) => return *node_error,
            Err(other) => other,
        };
        let (category, transient) = match error.downcast_ref::<CategorizedError>() {
            Some(c) => (c.category(), c.is_transient()),
            None => (None, false),
        };
        NodeError {
            inner: error,
            category,
            transient,
        }
    }
}

impl From<&str> for NodeError {
    fn from(message: &str) -> Self {
        NodeError::from(BoxError::from(message))
    }
}

impl From<String> for NodeError {
    fn from(message: String) -> Self {
        NodeError::from(BoxError::from(message))
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

/// A `NodeError` derefs to itself as a `dyn Error`, as a `Box<dyn Error>` derefs to its
/// error: `&*err` is the error to hand to code taking `&dyn Error` (a classifier, a
/// cause-chain walk), and the captured category travels with it.
impl std::ops::Deref for NodeError {
    type Target = dyn StdError + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        self
    }
}

impl StdError for NodeError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner.source()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::find_in;

    #[derive(Debug)]
    struct Typed(Category);
    impl fmt::Display for Typed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "typed {}", self.0)
        }
    }
    impl StdError for Typed {}
    impl Categorized for Typed {
        fn category(&self) -> Option<Category> {
            Some(self.0)
        }
    }

    fn fails(category: Category) -> Result<(), NodeError> {
        Err(Typed(category))?;
        Ok(())
    }

    #[test]
    fn question_mark_captures_the_category_and_keeps_the_typed_error() {
        let err = fails(Category::PROVIDER_RATE_LIMIT).unwrap_err();
        assert_eq!(err.category(), Some(Category::PROVIDER_RATE_LIMIT));
        assert!(err.is_transient());
        assert_eq!(err.to_string(), "typed provider_rate_limit");
        assert!(err.is::<Typed>());
        let boxed: BoxError = Box::new(err);
        // Boxed again, the category is still there and the typed error reachable.
        let again = NodeError::from(boxed);
        assert_eq!(again.category(), Some(Category::PROVIDER_RATE_LIMIT));
        assert!(find_in::<Typed>(&again).is_some());
    }

    #[test]
    fn boxes_and_messages() {
        let plain = NodeError::from("plain");
        assert_eq!(plain.category(), None);
        assert!(!plain.is_transient());
        let boxed: BoxError = Box::new(CategorizedError::new(Category::ROUTING_ERROR, "r"));
        let from_box = NodeError::from(boxed);
        assert_eq!(from_box.category(), Some(Category::ROUTING_ERROR));
        assert!(from_box.into_inner().is::<CategorizedError>());
        let io = NodeError::from(std::io::Error::other("disk"));
        assert_eq!(io.category(), None);
        assert!(io.into_inner().is::<std::io::Error>());
    }

    #[test]
    fn transparent_source() {
        let inner = CategorizedError::new(Category::PROVIDER_UNAVAILABLE, "down");
        let outer =
            CategorizedError::new(Category::PROVIDER_INVALID_RESPONSE, "bad").with_source(inner);
        let err = NodeError::from(outer);
        let source = err.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("down"));
    }
}
