//! Spec: conformance-adapter §8 (reporting), §9 (harness errors) — why a case did
//! not pass, as a value: what went wrong ([`FailureKind`]) and the message.
//!
//! Every check of every runner returns a [`Check`]. A plain `String` or `&str`
//! converts into a [`FailureKind::Mismatch`] (so `?` on a message keeps working);
//! an [`AdapterError`] converts into the kind its §9 category names.

use std::fmt;

use crate::AdapterError;

/// What kind of reason a case failed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The product did something other than the fixture expects.
    Mismatch,
    /// The fixture's shape is wrong for the directive that reads it (§9
    /// `fixture_schema_invalid`, an unreadable file).
    Fixture,
    /// A directive, invariant or capability name the adapter has no check for
    /// (§9 `fixture_directive_unknown`, `fixture_version_unsupported`,
    /// `harness_primitive_missing`).
    Unsupported,
    /// The product refused to build or run what the fixture describes (a graph
    /// that does not compile, a provider that cannot be built, no runtime).
    Setup,
    /// The adapter itself broke (a panic inside a runner).
    Harness,
}

impl FailureKind {
    /// The kind's name as the reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Mismatch => "mismatch",
            FailureKind::Fixture => "fixture",
            FailureKind::Unsupported => "unsupported",
            FailureKind::Setup => "setup",
            FailureKind::Harness => "harness",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a case (or one check of it) did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    kind: FailureKind,
    message: String,
}

/// The result of a check: `Ok` when it held.
pub type Check<T = ()> = Result<T, Failure>;

impl Failure {
    /// A failure of `kind` saying `message`.
    pub fn new(kind: FailureKind, message: impl fmt::Display) -> Self {
        Failure {
            kind,
            message: message.to_string(),
        }
    }

    /// The product did something other than the fixture expects (`message` may be
    /// the product's error: a [`Check`]'s `.map_err(Failure::mismatch)`).
    pub fn mismatch(message: impl fmt::Display) -> Self {
        Self::new(FailureKind::Mismatch, message)
    }

    /// The fixture's shape is wrong for the directive reading it.
    pub fn fixture(message: impl fmt::Display) -> Self {
        Self::new(FailureKind::Fixture, message)
    }

    /// A name the adapter has no check for.
    pub fn unsupported(message: impl fmt::Display) -> Self {
        Self::new(FailureKind::Unsupported, message)
    }

    /// The product refused to build or run what the fixture describes (`message`
    /// is usually the product's error).
    pub fn setup(message: impl fmt::Display) -> Self {
        Self::new(FailureKind::Setup, message)
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same failure with `prefix` in front of its message (the kind is kept).
    #[must_use]
    pub fn context(self, prefix: impl fmt::Display) -> Self {
        Failure {
            kind: self.kind,
            message: format!("{prefix}{}", self.message),
        }
    }
}

/// `Ok` when `ok`, else a [`FailureKind::Mismatch`] saying `why()` (built only on
/// failure).
///
/// # Errors
/// The mismatch when `ok` is false.
pub fn ensure(ok: bool, why: impl FnOnce() -> String) -> Check {
    if ok {
        Ok(())
    } else {
        Err(Failure::mismatch(why()))
    }
}

/// `Ok` when `ok`, else a [`FailureKind::Mismatch`] saying `what`.
///
/// # Errors
/// The mismatch when `ok` is false.
pub fn holds(ok: bool, what: impl fmt::Display) -> Check {
    ensure(ok, || what.to_string())
}

/// A [`FailureKind::Mismatch`] saying `message`, as a [`Check`].
///
/// # Errors
/// Always.
pub fn mismatch<T>(message: impl fmt::Display) -> Check<T> {
    Err(Failure::mismatch(message))
}

impl fmt::Display for Failure {
    /// `<kind>: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Failure {}

impl From<String> for Failure {
    /// An assertion message: a [`FailureKind::Mismatch`].
    fn from(message: String) -> Self {
        Failure::mismatch(message)
    }
}

impl From<&str> for Failure {
    /// An assertion message: a [`FailureKind::Mismatch`].
    fn from(message: &str) -> Self {
        Failure::mismatch(message)
    }
}

impl From<AdapterError> for Failure {
    /// The kind the error's §9 category names; the message is the error's text.
    fn from(e: AdapterError) -> Self {
        let kind = match &e {
            AdapterError::SchemaInvalid { .. } | AdapterError::Io { .. } => FailureKind::Fixture,
            AdapterError::DirectiveUnknown { .. }
            | AdapterError::VersionUnsupported { .. }
            | AdapterError::PrimitiveMissing { .. } => FailureKind::Unsupported,
        };
        Failure::new(kind, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn display_prints_the_kind_then_the_message() {
        assert_eq!(
            Failure::setup("graph does not compile").to_string(),
            "setup: graph does not compile"
        );
        let f: Failure = "expected 2, got 3".into();
        assert_eq!(f.kind(), FailureKind::Mismatch);
        assert_eq!(f.message(), "expected 2, got 3");
        assert_eq!(f.to_string(), "mismatch: expected 2, got 3");
    }

    #[test]
    fn context_keeps_the_kind() {
        let f = Failure::fixture("`x` is not a list").context("case a: ");
        assert_eq!(f.kind(), FailureKind::Fixture);
        assert_eq!(f.message(), "case a: `x` is not a list");
    }

    #[test]
    fn adapter_errors_map_to_their_kind() {
        let file = PathBuf::from("f.yaml");
        let unknown = AdapterError::DirectiveUnknown {
            file: file.clone(),
            directive: "frobnicate".into(),
            location: "x".into(),
        };
        let invalid = AdapterError::SchemaInvalid {
            file,
            location: "x".into(),
            message: "not a list".into(),
        };
        let unknown = Failure::from(unknown);
        assert_eq!(unknown.kind(), FailureKind::Unsupported);
        assert!(unknown.message().starts_with("fixture_directive_unknown"));
        assert_eq!(Failure::from(invalid).kind(), FailureKind::Fixture);
    }
}
