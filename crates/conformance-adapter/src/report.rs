//! Outcome records shared by the `cargo test` trials and `cargo xtask conformance`.

use std::fmt;

use crate::failure::Failure;

/// One runnable unit of a fixture file: the whole file (single-case and
/// `invocations:` forms) or one entry of a `cases:` list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CaseId {
    /// Capability directory name, e.g. `graph-engine`.
    pub capability: String,
    /// Fixture file stem, e.g. `007-compile-errors`.
    pub fixture: String,
    /// Case name for `cases:` fixtures (`name:` or `case-N`), `None` otherwise.
    pub case: Option<String>,
}

impl CaseId {
    /// `capability/fixture`, the key used in `conformance.toml`.
    pub fn fixture_key(&self) -> String {
        format!("{}/{}", self.capability, self.fixture)
    }
}

impl fmt::Display for CaseId {
    /// `capability/fixture[/case]`: the trial name `cargo test` filters on.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.case {
            Some(case) => write!(f, "{}/{}/{}", self.capability, self.fixture, case),
            None => write!(f, "{}/{}", self.capability, self.fixture),
        }
    }
}

/// What running one case produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    /// Every assertion of the case held.
    Passed,
    /// An assertion failed, or the harness raised an error: the [`Failure`] says
    /// which kind and prints as `<kind>: <message>`.
    Failed(Failure),
}

impl CaseOutcome {
    /// True for [`CaseOutcome::Passed`].
    pub fn is_pass(&self) -> bool {
        matches!(self, CaseOutcome::Passed)
    }
}
