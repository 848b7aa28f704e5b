//! Provider configuration from environment variables, shared by the providers'
//! `from_env()` constructors. Reading goes through a lookup function (`from_vars`),
//! so tests pass a map instead of touching the process environment.

use std::fmt;

use openarmature_core::{Categorized, Category};

/// A variable lookup: the process environment ([`process_env`]) or, in tests, a map.
pub trait VarLookup: Fn(&str) -> Option<String> {}

impl<F: Fn(&str) -> Option<String>> VarLookup for F {}

/// Looks `name` up in the process environment (`None` when unset or not Unicode).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A lookup over fixed `(name, value)` pairs, for tests and for configuration that
/// is not in the process environment.
///
/// # Examples
/// ```
/// use openarmature_http::env::{first_set, from_pairs};
///
/// let vars = from_pairs(&[("API_KEY", " k ")]);
/// assert_eq!(first_set(&vars, &["API_KEY"]).as_deref(), Some("k"));
/// ```
pub fn from_pairs(pairs: &[(&str, &str)]) -> impl VarLookup {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    move |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

/// The first of `names` that `vars` holds with a non-blank value, trimmed.
pub fn first_set(vars: &impl VarLookup, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| {
        vars(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    })
}

/// Like [`first_set`], but a missing value is an [`EnvError`] naming `names[0]`
/// (and the alternatives) with `category`.
///
/// # Errors
/// [`EnvError`] when none of `names` is set to a non-blank value.
pub fn require(
    vars: &impl VarLookup,
    names: &'static [&'static str],
    category: Category,
) -> Result<String, EnvError> {
    first_set(vars, names).ok_or(EnvError { names, category })
}

/// A provider could not be configured from the environment: a required variable is
/// unset or blank. [`EnvError::variable`] names it; the category is
/// `provider_authentication` for a missing API key and `provider_invalid_request`
/// for other missing settings (the bound model). A malformed value (a base URL that
/// is not `http(s)`) is reported by the builder's `build()` instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    names: &'static [&'static str],
    category: Category,
}

impl EnvError {
    /// The missing variable (the preferred name when several are accepted).
    pub fn variable(&self) -> &'static str {
        self.names.first().copied().unwrap_or("")
    }

    /// Every variable name that would have been accepted, preferred first.
    pub fn accepted(&self) -> &'static [&'static str] {
        self.names
    }

    /// `provider_authentication` (a missing key) or `provider_invalid_request`.
    pub fn category(&self) -> Category {
        self.category
    }
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "environment variable {} is not set", self.variable())?;
        if let [_, others @ ..] = self.names {
            if !others.is_empty() {
                write!(f, " (nor {})", others.join(", "))?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for EnvError {}

impl Categorized for EnvError {
    fn category(&self) -> Option<Category> {
        Some(self.category)
    }
}

/// `base` with `/{version}` appended unless its path already ends with that segment
/// (vendor SDKs take a host-only base URL and add the version themselves).
pub fn with_version_segment(base: &str, version: &str) -> String {
    let trimmed = base.trim_end_matches('/');
    if trimmed.rsplit('/').next() == Some(version) {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/{version}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::from_pairs as vars;

    #[test]
    fn first_set_skips_blank_values_and_trims() {
        let v = vars(&[("A", "  "), ("B", " key\n")]);
        assert_eq!(first_set(&v, &["A", "B"]).as_deref(), Some("key"));
        assert_eq!(first_set(&v, &["A"]), None);
        assert_eq!(first_set(&v, &["C"]), None);
    }

    #[test]
    fn a_missing_variable_is_named_with_its_category() {
        let err = require(
            &vars(&[]),
            &["X_KEY", "Y_KEY"],
            Category::PROVIDER_AUTHENTICATION,
        )
        .err();
        let Some(err) = err else {
            unreachable!("nothing is set, so require fails")
        };
        assert_eq!(err.variable(), "X_KEY");
        assert_eq!(err.accepted(), ["X_KEY", "Y_KEY"]);
        assert_eq!(err.category(), Category::PROVIDER_AUTHENTICATION);
        assert_eq!(
            Categorized::category(&err),
            Some(Category::PROVIDER_AUTHENTICATION)
        );
        assert!(!Categorized::is_transient(&err));
        assert_eq!(
            err.to_string(),
            "environment variable X_KEY is not set (nor Y_KEY)"
        );
        let single = require(&vars(&[]), &["M"], Category::PROVIDER_INVALID_REQUEST).err();
        assert_eq!(
            single.map(|e| e.to_string()).as_deref(),
            Some("environment variable M is not set")
        );
    }

    #[test]
    fn version_segment_is_appended_once() {
        assert_eq!(with_version_segment("http://h:1", "v1"), "http://h:1/v1");
        assert_eq!(with_version_segment("http://h:1/", "v1"), "http://h:1/v1");
        assert_eq!(
            with_version_segment("http://h:1/v1/", "v1"),
            "http://h:1/v1"
        );
        assert_eq!(
            with_version_segment("http://h/p", "v1beta"),
            "http://h/p/v1beta"
        );
    }
}
