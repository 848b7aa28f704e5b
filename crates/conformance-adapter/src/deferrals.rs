//! `conformance.toml`: the spec pin per capability and every deferred fixture with its reason.
//!
//! The file sits at the workspace root. Its format:
//!
//! ```toml
//! # The upstream specification release every capability is pinned to.
//! [spec]
//! release = "0.109.0"
//! commit = "b164986263e492796832f740fbc98db671381bcd"   # optional
//!
//! # One table per capability directory name. `crate` names the package that
//! # implements it; `release` (optional) overrides [spec].release for this
//! # capability; `deferred` (optional) defers every fixture of the capability.
//! [capabilities.graph-engine]
//! crate = "openarmature-graph"
//!
//! [capabilities.llm-provider]
//! crate = "openarmature-llm"
//! deferred = "LLM provider not implemented yet (issue 5)"
//!
//! # One entry per deferred fixture (`capability/fixture`, the file stem) or
//! # per deferred case of a `cases:` fixture (`capability/fixture/case`).
//! [[deferred]]
//! fixture = "graph-engine/017-observer-fan-out-index"
//! reason = "needs fan-out (pipeline-utilities §9), lands with issue 4"
//! ```
//!
//! Lookups ([`Deferrals::reason_for`]) take the most specific entry: the case,
//! then the fixture, then the capability. A deferred case is still run: by
//! `cargo xtask conformance`, and by the `cargo test` trial
//! `conformance.toml/deferrals-are-honest` (its per-case trial is marked ignored);
//! both fail when a deferred case passes or an entry matches nothing
//! ([`crate::suite::dishonest_deferrals`]), so the list stays honest.
//!
//! # Examples
//!
//! ```
//! use openarmature_conformance::deferrals::Deferrals;
//! use openarmature_conformance::CaseId;
//!
//! let text = r#"
//! [spec]
//! release = "0.109.0"
//! [capabilities.graph-engine]
//! crate = "openarmature-graph"
//! [[deferred]]
//! fixture = "graph-engine/017-observer-fan-out-index"
//! reason = "needs fan-out"
//! "#;
//! let deferrals = Deferrals::parse(text, "conformance.toml".as_ref())?;
//! let id = CaseId {
//!     capability: "graph-engine".into(),
//!     fixture: "017-observer-fan-out-index".into(),
//!     case: None,
//! };
//! assert_eq!(deferrals.reason_for(&id), Some("needs fan-out"));
//! # Ok::<(), openarmature_conformance::deferrals::DeferralsError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::CaseId;

/// File name of the deferral list at the workspace root.
pub const CONFIG_FILE: &str = "conformance.toml";

/// Why `conformance.toml` could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeferralsError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not have the expected shape.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML error (it names the line and the key).
        #[source]
        source: toml::de::Error,
    },
    /// The file parsed but an entry is wrong (bad key, duplicate, empty reason, ...).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the entry.
        message: String,
    },
}

/// `[spec]`: the pinned upstream release.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecPin {
    /// Upstream release, e.g. `0.109.0`.
    pub release: String,
    /// Upstream commit of that release, if recorded.
    #[serde(default)]
    pub commit: Option<String>,
}

/// `[capabilities.<name>]`: one capability.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// The package implementing the capability.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// Release override for this capability (defaults to [`SpecPin::release`]).
    #[serde(default)]
    pub release: Option<String>,
    /// When set, every fixture of the capability is deferred, for this reason.
    #[serde(default)]
    pub deferred: Option<String>,
}

/// `[[deferred]]`: one deferred fixture or case.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeferredEntry {
    /// `capability/fixture` or `capability/fixture/case`.
    pub fixture: String,
    /// Why it is deferred (an issue reference is welcome).
    pub reason: String,
}

impl DeferredEntry {
    /// The capability part of [`DeferredEntry::fixture`].
    pub fn capability(&self) -> &str {
        self.fixture.split('/').next().unwrap_or_default()
    }

    /// The `capability/fixture` part of [`DeferredEntry::fixture`].
    pub fn fixture_key(&self) -> &str {
        match self.fixture.match_indices('/').nth(1) {
            Some((i, _)) => &self.fixture[..i],
            None => &self.fixture,
        }
    }

    /// True when the entry names a single case (`capability/fixture/case`).
    pub fn is_case(&self) -> bool {
        self.fixture.matches('/').count() >= 2
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    spec: SpecPin,
    #[serde(default)]
    capabilities: BTreeMap<String, Capability>,
    #[serde(default)]
    deferred: Vec<DeferredEntry>,
}

/// The parsed `conformance.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferrals {
    /// `[spec]`.
    pub spec: SpecPin,
    /// `[capabilities.*]`, by capability directory name.
    pub capabilities: BTreeMap<String, Capability>,
    /// `[[deferred]]`, in file order.
    pub deferred: Vec<DeferredEntry>,
    by_key: BTreeMap<String, usize>,
}

impl Deferrals {
    /// Reads and validates the file at `path`.
    ///
    /// # Errors
    /// [`DeferralsError::Io`] when it cannot be read, [`DeferralsError::Parse`]
    /// when it is not TOML of the documented shape, [`DeferralsError::Invalid`]
    /// when an entry is malformed, duplicated, names an undeclared capability or
    /// has an empty reason.
    pub fn load(path: &Path) -> Result<Deferrals, DeferralsError> {
        let text = fs::read_to_string(path).map_err(|source| DeferralsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Deferrals::parse(&text, path)
    }

    /// Parses `text`; `path` is used only in error messages.
    ///
    /// # Errors
    /// As for [`Deferrals::load`], minus the I/O error.
    pub fn parse(text: &str, path: &Path) -> Result<Deferrals, DeferralsError> {
        let raw: RawFile = toml::from_str(text).map_err(|source| DeferralsError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |message: String| DeferralsError::Invalid {
            path: path.to_path_buf(),
            message,
        };

        if raw.spec.release.trim().is_empty() {
            return Err(invalid("[spec] release is empty".into()));
        }
        for (name, cap) in &raw.capabilities {
            if cap.crate_name.trim().is_empty() {
                return Err(invalid(format!("[capabilities.{name}] crate is empty")));
            }
            if cap.deferred.as_deref().is_some_and(|r| r.trim().is_empty()) {
                return Err(invalid(format!(
                    "[capabilities.{name}] deferred reason is empty; give a reason"
                )));
            }
        }

        let mut by_key = BTreeMap::new();
        for (index, entry) in raw.deferred.iter().enumerate() {
            let parts: Vec<&str> = entry.fixture.split('/').collect();
            if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.trim().is_empty()) {
                return Err(invalid(format!(
                    "[[deferred]] fixture = {:?}: expected `capability/fixture` or \
                     `capability/fixture/case`",
                    entry.fixture
                )));
            }
            if !raw.capabilities.contains_key(parts[0]) {
                return Err(invalid(format!(
                    "[[deferred]] fixture = {:?}: capability `{}` is not declared under \
                     [capabilities]",
                    entry.fixture, parts[0]
                )));
            }
            if parts[1].ends_with(".yaml") || parts[1].ends_with(".yml") {
                return Err(invalid(format!(
                    "[[deferred]] fixture = {:?}: use the file stem, without the extension",
                    entry.fixture
                )));
            }
            if entry.reason.trim().is_empty() {
                return Err(invalid(format!(
                    "[[deferred]] fixture = {:?}: reason is empty; give a reason",
                    entry.fixture
                )));
            }
            if by_key.insert(entry.fixture.clone(), index).is_some() {
                return Err(invalid(format!(
                    "[[deferred]] fixture = {:?} is listed twice",
                    entry.fixture
                )));
            }
        }

        Ok(Deferrals {
            spec: raw.spec,
            capabilities: raw.capabilities,
            deferred: raw.deferred,
            by_key,
        })
    }

    /// Why the case is deferred, or `None` when it is expected to pass.
    ///
    /// The most specific entry wins: `capability/fixture/case`, then
    /// `capability/fixture`, then the capability-level `deferred`.
    pub fn reason_for(&self, id: &CaseId) -> Option<&str> {
        self.entry_for(id)
            .map(|e| e.reason.as_str())
            .or_else(|| self.capability_reason(&id.capability))
    }

    /// The `[[deferred]]` entry that applies to the case, if any (case-level
    /// first, then fixture-level; capability-level deferrals are not entries).
    pub fn entry_for(&self, id: &CaseId) -> Option<&DeferredEntry> {
        let case_key = id.case.as_ref().map(|_| id.to_string());
        case_key
            .and_then(|k| self.by_key.get(&k))
            .or_else(|| self.by_key.get(&id.fixture_key()))
            .and_then(|&i| self.deferred.get(i))
    }

    /// The capability-level deferral reason, if the whole capability is deferred.
    pub fn capability_reason(&self, capability: &str) -> Option<&str> {
        self.capabilities
            .get(capability)
            .and_then(|c| c.deferred.as_deref())
    }

    /// The release a capability is pinned to: its own `release`, else `[spec] release`.
    pub fn release_for(&self, capability: &str) -> &str {
        self.capabilities
            .get(capability)
            .and_then(|c| c.release.as_deref())
            .unwrap_or(&self.spec.release)
    }

    /// `[[deferred]]` entries that match nothing in `fixtures` (a set of
    /// `capability/fixture` keys) or, for case-level entries, nothing in
    /// `cases` (a set of full case ids). Only capabilities accepted by
    /// `in_scope` are checked. Stale entries mean the list has drifted from the
    /// fixtures and should be fixed.
    pub fn stale_entries<'a>(
        &'a self,
        fixtures: &BTreeSet<String>,
        cases: &BTreeSet<String>,
        in_scope: impl Fn(&str) -> bool,
    ) -> Vec<&'a DeferredEntry> {
        self.deferred
            .iter()
            .filter(|e| in_scope(e.capability()))
            .filter(|e| {
                if e.is_case() {
                    !cases.contains(&e.fixture)
                } else {
                    !fixtures.contains(&e.fixture)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Check;

    const SAMPLE: &str = r#"
[spec]
release = "0.109.0"
commit = "b164986263e492796832f740fbc98db671381bcd"

[capabilities.graph-engine]
crate = "openarmature-graph"

[capabilities.llm-provider]
crate = "openarmature-llm"
release = "0.108.0"
deferred = "issue 5"

[[deferred]]
fixture = "graph-engine/017-observer-fan-out-index"
reason = "needs fan-out"

[[deferred]]
fixture = "graph-engine/007-compile-errors/case-2"
reason = "one case only"
"#;

    fn id(capability: &str, fixture: &str, case: Option<&str>) -> CaseId {
        CaseId {
            capability: capability.into(),
            fixture: fixture.into(),
            case: case.map(Into::into),
        }
    }

    fn parse(text: &str) -> Result<Deferrals, DeferralsError> {
        Deferrals::parse(text, Path::new("conformance.toml"))
    }

    fn invalid_message(text: &str) -> String {
        match parse(text) {
            Err(DeferralsError::Invalid { message, .. }) => message,
            other => format!("unexpected: {other:?}"),
        }
    }

    #[test]
    fn lookups_take_the_most_specific_entry() -> Result<(), DeferralsError> {
        let d = parse(SAMPLE)?;
        assert_eq!(d.spec.release, "0.109.0");
        assert_eq!(
            d.capabilities["graph-engine"].crate_name,
            "openarmature-graph"
        );

        let fan_out = "017-observer-fan-out-index";
        assert_eq!(
            d.reason_for(&id("graph-engine", fan_out, None)),
            Some("needs fan-out")
        );
        // A fixture-level entry covers every case of the fixture.
        assert_eq!(
            d.reason_for(&id("graph-engine", fan_out, Some("a"))),
            Some("needs fan-out")
        );
        // A case-level entry covers that case only.
        let compile = "007-compile-errors";
        assert_eq!(
            d.reason_for(&id("graph-engine", compile, Some("case-2"))),
            Some("one case only")
        );
        assert_eq!(
            d.reason_for(&id("graph-engine", compile, Some("case-1"))),
            None
        );
        assert_eq!(d.reason_for(&id("graph-engine", compile, None)), None);
        assert_eq!(d.reason_for(&id("graph-engine", "001-linear", None)), None);
        // Capability level.
        assert_eq!(
            d.reason_for(&id("llm-provider", "001-x", Some("c"))),
            Some("issue 5")
        );
        // Unknown capability: not deferred.
        assert_eq!(d.reason_for(&id("observability", "001-x", None)), None);
        Ok(())
    }

    #[test]
    fn release_pins() -> Result<(), DeferralsError> {
        let d = parse(SAMPLE)?;
        assert_eq!(d.release_for("graph-engine"), "0.109.0");
        assert_eq!(d.release_for("llm-provider"), "0.108.0");
        assert_eq!(d.release_for("unknown"), "0.109.0");
        Ok(())
    }

    #[test]
    fn entry_helpers() -> Result<(), DeferralsError> {
        let d = parse(SAMPLE)?;
        let case = &d.deferred[1];
        assert!(case.is_case());
        assert_eq!(case.capability(), "graph-engine");
        assert_eq!(case.fixture_key(), "graph-engine/007-compile-errors");
        let fixture = &d.deferred[0];
        assert!(!fixture.is_case());
        assert_eq!(
            fixture.fixture_key(),
            "graph-engine/017-observer-fan-out-index"
        );
        Ok(())
    }

    #[test]
    fn stale_entries_are_found() -> Result<(), DeferralsError> {
        let d = parse(SAMPLE)?;
        let fixtures: BTreeSet<String> = ["graph-engine/017-observer-fan-out-index".to_string()]
            .into_iter()
            .collect();
        let cases = BTreeSet::new();
        let stale = d.stale_entries(&fixtures, &cases, |_| true);
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].fixture, "graph-engine/007-compile-errors/case-2");
        assert!(d
            .stale_entries(&fixtures, &cases, |c| c != "graph-engine")
            .is_empty());
        Ok(())
    }

    #[test]
    fn parse_errors_are_typed_and_name_the_problem() -> Check {
        match parse("[spec]\nrelease = 0.109\n") {
            Err(DeferralsError::Parse { source, .. }) => {
                assert!(source.to_string().contains("release"), "{source}");
            }
            other => return Err(format!("unexpected: {other:?}").into()),
        }
        // Missing [spec].
        assert!(matches!(parse(""), Err(DeferralsError::Parse { .. })));
        // Unknown keys are rejected (typos must not silently un-defer).
        assert!(matches!(
            parse("[spec]\nrelease = \"1\"\n[[deferred]]\nfixtur = \"a/b\"\nreason = \"r\"\n"),
            Err(DeferralsError::Parse { .. })
        ));
        assert!(matches!(
            parse("[spec]\nrelease = \"1\"\n[capabilities.a]\ncrate = \"x\"\ndefered = \"r\"\n"),
            Err(DeferralsError::Parse { .. })
        ));
        Ok(())
    }

    #[test]
    fn invalid_entries_are_rejected() {
        let head = "[spec]\nrelease = \"0.109.0\"\n[capabilities.graph-engine]\ncrate = \"g\"\n";
        let entry = |fixture: &str, reason: &str| {
            format!("{head}[[deferred]]\nfixture = \"{fixture}\"\nreason = \"{reason}\"\n")
        };
        assert!(invalid_message(&entry("graph-engine", "r")).contains("expected"));
        assert!(invalid_message(&entry("graph-engine//x", "r")).contains("expected"));
        assert!(invalid_message(&entry("a/b/c/d", "r")).contains("expected"));
        assert!(invalid_message(&entry("observability/001-x", "r")).contains("not declared"));
        assert!(invalid_message(&entry("graph-engine/001-x.yaml", "r")).contains("file stem"));
        assert!(invalid_message(&entry("graph-engine/001-x", " ")).contains("reason is empty"));
        let twice = format!(
            "{}[[deferred]]\nfixture = \"graph-engine/001-x\"\nreason = \"again\"\n",
            entry("graph-engine/001-x", "r")
        );
        assert!(invalid_message(&twice).contains("listed twice"));
        assert!(invalid_message(&format!("{head}deferred = \"\"\n")).contains("deferred reason"));
        assert!(invalid_message("[spec]\nrelease = \"\"\n").contains("release is empty"));
    }

    #[test]
    fn load_reports_missing_file() -> Check {
        let path = std::env::temp_dir().join(format!(
            "oa-deferrals-missing-{}/conformance.toml",
            std::process::id()
        ));
        match Deferrals::load(&path) {
            Err(err @ DeferralsError::Io { .. }) => {
                assert!(err.to_string().contains("conformance.toml"), "{err}");
                Ok(())
            }
            other => Err(format!("unexpected: {other:?}").into()),
        }
    }

    #[test]
    fn the_repository_file_loads() -> Result<(), DeferralsError> {
        let path = crate::discovery::workspace_root().join(CONFIG_FILE);
        let d = Deferrals::load(&path)?;
        assert_eq!(d.spec.release, crate::CONFORMANCE_VERSION);
        for cap in [
            "graph-engine",
            "pipeline-utilities",
            "llm-provider",
            "observability",
        ] {
            assert!(d.capabilities.contains_key(cap), "{cap} missing");
        }
        Ok(())
    }
}
