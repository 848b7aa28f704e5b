//! `cargo xtask spec-diff <old-fixture-dir> <new-fixture-dir>`: what changed between two
//! fixture trees (two checkouts of the upstream spec, or two releases), per capability —
//! the fixtures added, removed and changed, the crates affected (from
//! `conformance.toml`), and which of the added or changed fixtures fail today.
//!
//! Spec: conformance-adapter §3 (fixtures are data), §8.5 (version pinning). "Fail
//! today" means: the new version of the fixture, run by the current adapter exactly as
//! `cargo xtask conformance` runs a case ([`crate::conformance`]), with the current
//! deferrals. A change whose parsed YAML is equal (comments, formatting) is marked
//! cosmetic; a changed companion `.md` or capability `spec.md` is reported too (when
//! both trees carry it: the data-only fixture layout has no prose).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{scan_tree, workspace_root, FixtureFile, FixtureTree};

use openarmature_conformance::suite::{list_jobs, run_jobs, workers, Verdict};

/// Parsed command line of `cargo xtask spec-diff`.
#[derive(Debug)]
pub struct Options {
    old: PathBuf,
    new: PathBuf,
    jobs: Option<usize>,
}

impl Options {
    /// Parses the arguments after `spec-diff`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut dirs = Vec::new();
        let mut jobs = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-j" | "--jobs" => {
                    let value = args.next().ok_or("`--jobs` needs a number")?;
                    match value.parse::<usize>() {
                        Ok(n) if n > 0 => jobs = Some(n),
                        _ => {
                            return Err(format!("`--jobs` needs a positive number, got `{value}`"))
                        }
                    }
                }
                other if other.starts_with('-') => {
                    return Err(format!("unknown option `{other}` for `spec-diff`"));
                }
                other => dirs.push(PathBuf::from(other)),
            }
        }
        match <[PathBuf; 2]>::try_from(dirs) {
            Ok([old, new]) => Ok(Options { old, new, jobs }),
            Err(_) => Err("spec-diff needs exactly two directories: <old> <new>".into()),
        }
    }
}

/// How one fixture differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Removed,
    /// The YAML differs; `cosmetic` when the parsed documents are equal.
    Changed {
        cosmetic: bool,
    },
    /// Only the companion `.md` differs.
    ProseOnly,
}

/// How the new version of a fixture fares today.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Today {
    pub(crate) passed: usize,
    /// Failing cases (`fixture` or `fixture/case`) that are not deferred.
    pub(crate) failing: Vec<String>,
    /// Failing cases covered by a deferral.
    pub(crate) deferred: usize,
    /// Deferred cases that pass (stale deferrals).
    pub(crate) deferral_passes: Vec<String>,
}

/// One changed fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FixtureDiff {
    pub(crate) fixture: String,
    pub(crate) change: Change,
    /// Whether the companion `.md` changed too (changed fixtures only).
    pub(crate) prose: bool,
    /// The new version run today (added and changed fixtures).
    pub(crate) today: Option<Today>,
}

/// One capability's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapabilityDiff {
    pub(crate) capability: String,
    /// From `conformance.toml`; `None` when the capability is not declared there.
    pub(crate) crate_name: Option<String>,
    /// Whether `<capability>/spec.md` differs (when either tree has it).
    pub(crate) spec_changed: bool,
    pub(crate) fixtures: Vec<FixtureDiff>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diff {
    pub(crate) capabilities: Vec<CapabilityDiff>,
    pub(crate) warnings: Vec<String>,
}

impl Diff {
    /// The crates of the capabilities that changed, deduplicated and sorted.
    pub(crate) fn crates_affected(&self) -> Vec<&str> {
        let set: BTreeSet<&str> = self
            .capabilities
            .iter()
            .filter_map(|c| c.crate_name.as_deref())
            .collect();
        set.into_iter().collect()
    }
}

fn read(path: &Path) -> Option<Vec<u8>> {
    fs::read(path).ok()
}

/// Whether two prose files differ; a tree without prose (the data-only fixture
/// layout has no `.md` files) compares equal to anything.
fn differs(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a != b)
}

/// Whether two YAML texts parse to the same document.
fn same_document(a: &[u8], b: &[u8]) -> bool {
    let parse = |t: &[u8]| serde_norway::from_slice::<serde_norway::Value>(t).ok();
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

fn by_key(tree: &FixtureTree) -> BTreeMap<(String, String), &FixtureFile> {
    tree.files
        .iter()
        .map(|f| ((f.capability.clone(), f.fixture.clone()), f))
        .collect()
}

/// Compares the trees at `old` and `new`, then runs the new version of every added or
/// changed fixture against the current crates.
pub(crate) fn diff(old: &Path, new: &Path, deferrals: &Deferrals, workers: usize) -> Diff {
    let (old_tree, new_tree) = (scan_tree(old), scan_tree(new));
    let mut warnings: Vec<String> = old_tree.warnings.clone();
    warnings.extend(new_tree.warnings.iter().cloned());
    let (before, after) = (by_key(&old_tree), by_key(&new_tree));

    let mut per: BTreeMap<String, Vec<FixtureDiff>> = BTreeMap::new();
    let mut to_run: Vec<FixtureFile> = Vec::new();
    let keys: BTreeSet<&(String, String)> = before.keys().chain(after.keys()).collect();
    for key in keys {
        let (capability, fixture) = key;
        let (change, prose) = match (before.get(key), after.get(key)) {
            (None, Some(_)) => (Change::Added, false),
            (Some(_), None) => (Change::Removed, false),
            (Some(a), Some(b)) => {
                let md = |f: &FixtureFile| read(&f.path.with_extension("md"));
                let prose = differs(md(a), md(b));
                match (read(&a.path), read(&b.path)) {
                    (Some(x), Some(y)) if x == y && prose => (Change::ProseOnly, false),
                    (Some(x), Some(y)) if x == y => continue,
                    (Some(x), Some(y)) => (
                        Change::Changed {
                            cosmetic: same_document(&x, &y),
                        },
                        prose,
                    ),
                    _ => (Change::Changed { cosmetic: false }, prose),
                }
            }
            (None, None) => continue,
        };
        if matches!(change, Change::Added | Change::Changed { .. }) {
            if let Some(f) = after.get(key) {
                to_run.push((*f).clone());
            }
        }
        per.entry(capability.clone())
            .or_default()
            .push(FixtureDiff {
                fixture: fixture.clone(),
                change,
                prose,
                today: None,
            });
    }

    // Prose of the capability itself.
    let spec_md = |base: &Path, cap: &str| read(&base.join(cap).join("spec.md"));
    let caps: BTreeSet<String> = old_tree
        .files
        .iter()
        .chain(&new_tree.files)
        .map(|f| f.capability.clone())
        .collect();
    let mut spec_changed = BTreeSet::new();
    for cap in caps {
        let (a, b) = (spec_md(&old_tree.base, &cap), spec_md(&new_tree.base, &cap));
        if differs(a, b) {
            spec_changed.insert(cap.clone());
            per.entry(cap).or_default();
        }
    }

    // The new versions, run today.
    let jobs = list_jobs(&to_run, workers);
    let outcomes = run_jobs(&jobs, workers);
    let mut today: BTreeMap<String, Today> = BTreeMap::new();
    for (job, outcome) in jobs.iter().zip(&outcomes) {
        let t = today.entry(job.id.fixture_key()).or_default();
        match Verdict::of(outcome, deferrals.reason_for(&job.id)) {
            Verdict::Passed => t.passed += 1,
            Verdict::Failed(_) => t.failing.push(job.id.to_string()),
            Verdict::Skipped => t.deferred += 1,
            Verdict::DeferredPasses(_) => t.deferral_passes.push(job.id.to_string()),
        }
    }

    let capabilities = per
        .into_iter()
        .map(|(capability, mut fixtures)| {
            for f in &mut fixtures {
                f.today = today.remove(&format!("{capability}/{}", f.fixture));
            }
            CapabilityDiff {
                crate_name: deferrals
                    .capabilities
                    .get(&capability)
                    .map(|c| c.crate_name.clone()),
                spec_changed: spec_changed.contains(&capability),
                capability,
                fixtures,
            }
        })
        .collect();
    Diff {
        capabilities,
        warnings,
    }
}

fn today_note(t: &Today) -> String {
    let total = t.passed + t.failing.len() + t.deferred + t.deferral_passes.len();
    let mut parts = Vec::new();
    if t.failing.is_empty() && t.deferral_passes.is_empty() {
        parts.push(if t.deferred > 0 {
            format!(
                "{} of {total} case(s) pass, {} deferred",
                t.passed, t.deferred
            )
        } else {
            format!("passes today ({total} case(s))")
        });
    } else {
        if !t.failing.is_empty() {
            parts.push(format!(
                "FAILS today: {} of {total} case(s)",
                t.failing.len()
            ));
        }
        if !t.deferral_passes.is_empty() {
            parts.push(format!(
                "{} deferred case(s) now pass",
                t.deferral_passes.len()
            ));
        }
    }
    parts.join("; ")
}

/// The report, as `cargo xtask spec-diff` prints it.
pub(crate) fn render(d: &Diff, old: &Path, new: &Path) -> String {
    let mut out = format!("spec-diff: {} -> {}\n", old.display(), new.display());
    if d.capabilities.is_empty() {
        out.push_str("\nno fixture changed\n");
    }
    for c in &d.capabilities {
        let count =
            |pred: fn(&Change) -> bool| c.fixtures.iter().filter(|f| pred(&f.change)).count();
        let krate = c.crate_name.as_deref().map_or_else(
            || "not declared in conformance.toml".to_owned(),
            |k| format!("crate {k}"),
        );
        out.push_str(&format!(
            "\n{} ({krate}): {} added, {} removed, {} changed{}\n",
            c.capability,
            count(|ch| *ch == Change::Added),
            count(|ch| *ch == Change::Removed),
            count(|ch| matches!(ch, Change::Changed { .. } | Change::ProseOnly)),
            if c.spec_changed {
                "; spec.md changed"
            } else {
                ""
            }
        ));
        for f in &c.fixtures {
            let (mark, mut note) = match f.change {
                Change::Added => ("+", String::new()),
                Change::Removed => ("-", String::new()),
                Change::Changed { cosmetic: true } => ("~", "comments/formatting only".to_owned()),
                Change::Changed { cosmetic: false } => ("~", String::new()),
                Change::ProseOnly => ("~", "companion .md only".to_owned()),
            };
            if f.prose {
                note = [note.as_str(), "companion .md changed"]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ");
            }
            if let Some(t) = &f.today {
                let today = today_note(t);
                note = if note.is_empty() {
                    today
                } else {
                    format!("{note}; {today}")
                };
            }
            let note = if note.is_empty() {
                String::new()
            } else {
                format!("  ({note})")
            };
            out.push_str(&format!("  {mark} {}{note}\n", f.fixture));
            if let Some(t) = &f.today {
                for case in &t.failing {
                    out.push_str(&format!("      failing: {case}\n"));
                }
                for case in &t.deferral_passes {
                    out.push_str(&format!("      deferred but passing: {case}\n"));
                }
            }
        }
    }
    let crates = d.crates_affected();
    out.push_str(&format!(
        "\ncrates affected: {}\n",
        if crates.is_empty() {
            "none".to_owned()
        } else {
            crates.join(", ")
        }
    ));
    let failing: Vec<&str> = d
        .capabilities
        .iter()
        .flat_map(|c| &c.fixtures)
        .filter_map(|f| f.today.as_ref())
        .flat_map(|t| t.failing.iter().map(String::as_str))
        .collect();
    out.push_str(&format!(
        "added or changed fixture cases failing today: {}\n",
        if failing.is_empty() {
            "none".to_owned()
        } else {
            failing.len().to_string()
        }
    ));
    out
}

/// Runs the command. Exits non-zero only when `conformance.toml` cannot be loaded or
/// a tree holds no fixtures; the report itself is information.
pub fn run(options: &Options) -> ExitCode {
    let config = workspace_root().join(CONFIG_FILE);
    let deferrals = match Deferrals::load(&config) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot load {CONFIG_FILE}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let d = diff(
        &options.old,
        &options.new,
        &deferrals,
        workers(options.jobs),
    );
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", render(&d, &options.old, &options.new));
    if d.warnings.iter().any(|w| w.contains("holds no")) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
#[path = "spec_diff_tests.rs"]
mod tests;
