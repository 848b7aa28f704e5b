//! Spec: pipeline-utilities §6.1 *Default transient classifier* / §6.4 — categories on errors.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use crate::node_error::NodeError;
use crate::Category;

/// A boxed, thread-safe error.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// An error family with spec categories.
///
/// Implement it for your error type to `?` it inside a node body: the conversion into
/// [`NodeError`] captures [`Categorized::category`] and [`Categorized::is_transient`].
/// An error without a category implements it with the defaults:
///
/// ```
/// #[derive(Debug)]
/// struct ParseFailed;
/// impl std::fmt::Display for ParseFailed {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("parse failed")
///     }
/// }
/// impl std::error::Error for ParseFailed {}
/// impl openarmature_core::Categorized for ParseFailed {}
/// ```
pub trait Categorized {
    /// The category, or `None` for an uncategorised error.
    fn category(&self) -> Option<Category> {
        None
    }

    /// Whether a retry may succeed. Defaults to the category's transience.
    fn is_transient(&self) -> bool {
        self.category().is_some_and(Category::is_transient)
    }
}

/// An error with an explicit category and transience, for code that has a category but
/// no error type of its own (scripted failures, stop errors, carriers of a message).
///
/// # Examples
/// ```
/// use openarmature_core::{Categorized, Category, CategorizedError};
/// let err = CategorizedError::new(Category::PROVIDER_RATE_LIMIT, "slow down");
/// assert_eq!(Categorized::category(&err), Some(Category::PROVIDER_RATE_LIMIT));
/// assert!(Categorized::is_transient(&err)); // the category is transient
/// assert!(CategorizedError::uncategorized("odd").transient(true).is_transient());
/// assert_eq!(err.to_string(), "slow down");
/// ```
#[derive(Debug, Clone)]
pub struct CategorizedError {
    category: Option<Category>,
    message: String,
    transient: bool,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

impl CategorizedError {
    /// An error of `category` with `message`.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        CategorizedError::with_category(Some(category), message)
    }

    /// An uncategorised error with `message`.
    pub fn uncategorized(message: impl Into<String>) -> Self {
        CategorizedError::with_category(None, message)
    }

    /// An error of `category` (`None` = uncategorised) with `message`.
    pub fn with_category(category: Option<Category>, message: impl Into<String>) -> Self {
        CategorizedError {
            category,
            message: message.into(),
            transient: false,
            source: None,
        }
    }

    /// Marks the error transient even when its category is not (its carrying spec
    /// says so, e.g. a `session_save_failed` on a connection blip).
    pub fn transient(mut self, transient: bool) -> Self {
        self.transient = transient;
        self
    }

    /// Attaches a cause.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Attaches a shared cause.
    pub fn with_shared_source(mut self, source: Arc<dyn StdError + Send + Sync + 'static>) -> Self {
        self.source = Some(source);
        self
    }

    /// The category, if any.
    pub fn category(&self) -> Option<Category> {
        self.category
    }

    /// Transient: marked so, or of a transient category.
    pub fn is_transient(&self) -> bool {
        self.transient || self.category.is_some_and(Category::is_transient)
    }

    /// The message (equal to `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl Categorized for CategorizedError {
    fn category(&self) -> Option<Category> {
        self.category
    }

    fn is_transient(&self) -> bool {
        CategorizedError::is_transient(self)
    }
}

impl fmt::Display for CategorizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for CategorizedError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// The first `T` in `error`'s cause chain (itself included), looking inside
/// [`NodeError`]s. Gives up after 64 links, so a cyclic chain cannot hang.
pub fn find_in<'e, T: StdError + 'static>(error: &'e (dyn StdError + 'static)) -> Option<&'e T> {
    let mut current = Some(error);
    for _ in 0..64 {
        let e = current?;
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        if let Some(found) = e
            .downcast_ref::<NodeError>()
            .and_then(NodeError::downcast_ref::<T>)
        {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// Errors of the standard library and of `serde_json` carry no category: they convert
/// into a [`NodeError`] uncategorised.
impl Categorized for std::io::Error {}
impl Categorized for std::fmt::Error {}
impl Categorized for std::num::ParseIntError {}
impl Categorized for std::num::ParseFloatError {}
impl Categorized for std::num::TryFromIntError {}
impl Categorized for std::str::Utf8Error {}
impl Categorized for std::string::FromUtf8Error {}
impl Categorized for serde_json::Error {}
