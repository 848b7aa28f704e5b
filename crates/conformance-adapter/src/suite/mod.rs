//! Spec: conformance-adapter §8 (reporting) — one suite runner for both front ends.
//!
//! The `cargo test` binary (`tests/conformance.rs`) and `cargo xtask conformance`
//! / `spec-status` / `spec-diff` list and run cases through this module, and judge
//! each outcome against `conformance.toml` with the same [`Verdict`]: a deferred
//! case that passes is a failure ([`Verdict::DeferredPasses`]), and a
//! `[[deferred]]` entry that matches no case is stale ([`stale_entries`]). The
//! front ends only print.

mod par;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::thread;

pub use par::par_map;

use crate::deferrals::{Deferrals, CONFIG_FILE};
use crate::discovery::FixtureFile;
use crate::{runner, CaseId, CaseOutcome, Failure, FailureKind};

/// One case to run (or a fixture whose cases could not be listed).
#[derive(Debug, Clone)]
pub struct Job {
    /// The case (the fixture itself when it could not be listed).
    pub id: CaseId,
    /// The fixture file.
    pub path: PathBuf,
    /// Set when listing the fixture's cases failed: the job is the fixture and it
    /// fails with this.
    pub listing_error: Option<Failure>,
}

impl Job {
    /// Runs the job (a listing error is its failure). Never panics on bad input.
    pub fn run(&self) -> CaseOutcome {
        match &self.listing_error {
            Some(error) => CaseOutcome::Failed(error.clone()),
            None => runner::run_case(&self.path, &self.id),
        }
    }
}

/// Lists the cases of every file on `workers` threads; a file that cannot be
/// listed becomes one job that fails with the listing error.
pub fn list_jobs(files: &[FixtureFile], workers: usize) -> Vec<Job> {
    let listed = par_map(files, workers, |file| {
        runner::list_cases(&file.capability, &file.path)
    });
    let mut jobs = Vec::new();
    for (file, result) in files.iter().zip(listed) {
        let result = match result {
            Ok(Ok(cases)) => Ok(cases),
            Ok(Err(error)) => Err(Failure::from(error)),
            Err(panic) => Err(Failure::new(
                FailureKind::Harness,
                format!("the runner panicked while listing cases: {panic}"),
            )),
        };
        match result {
            Ok(cases) => jobs.extend(cases.into_iter().map(|id| Job {
                id,
                path: file.path.clone(),
                listing_error: None,
            })),
            Err(error) => jobs.push(Job {
                id: CaseId {
                    capability: file.capability.clone(),
                    fixture: file.fixture.clone(),
                    case: None,
                },
                path: file.path.clone(),
                listing_error: Some(error),
            }),
        }
    }
    jobs
}

/// Runs every job on `workers` threads, in job order; a panic is a failure.
pub fn run_jobs(jobs: &[Job], workers: usize) -> Vec<CaseOutcome> {
    par_map(jobs, workers, Job::run)
        .into_iter()
        .map(|result| {
            result.unwrap_or_else(|panic| {
                CaseOutcome::Failed(Failure::new(
                    FailureKind::Harness,
                    format!("the runner panicked: {panic}"),
                ))
            })
        })
        .collect()
}

/// `jobs`, else the available parallelism.
pub fn workers(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// What one case's outcome means given its deferral.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Passed and not deferred.
    Passed,
    /// Failed and not deferred (why).
    Failed(&'a Failure),
    /// Failed and deferred.
    Skipped,
    /// Passed although deferred (the deferral's reason): the list is stale.
    DeferredPasses(&'a str),
}

impl<'a> Verdict<'a> {
    /// Judges `outcome` against the case's deferral `reason`.
    pub fn of(outcome: &'a CaseOutcome, reason: Option<&'a str>) -> Verdict<'a> {
        match (outcome, reason) {
            (CaseOutcome::Passed, None) => Verdict::Passed,
            (CaseOutcome::Failed(_), Some(_)) => Verdict::Skipped,
            (CaseOutcome::Failed(message), None) => Verdict::Failed(message),
            (CaseOutcome::Passed, Some(reason)) => Verdict::DeferredPasses(reason),
        }
    }
}

/// Per-capability counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Cases that passed and are not deferred.
    pub passed: usize,
    /// Cases that failed undeferred, or passed although deferred.
    pub failed: usize,
    /// Deferred cases that still fail.
    pub skipped: usize,
}

impl Counts {
    /// All cases counted.
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.skipped
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }

    /// Counts one case: a deferred case that passes counts as failed.
    pub fn record(&mut self, verdict: &Verdict<'_>) {
        match verdict {
            Verdict::Passed => self.passed += 1,
            Verdict::Skipped => self.skipped += 1,
            Verdict::Failed(_) | Verdict::DeferredPasses(_) => self.failed += 1,
        }
    }
}

/// Per-capability counts of the declared capabilities in scope (`capability`, or
/// all; even those without fixtures) and of any capability a job belongs to.
pub fn tally(
    deferrals: &Deferrals,
    capability: Option<&str>,
    jobs: &[Job],
    outcomes: &[CaseOutcome],
) -> BTreeMap<String, Counts> {
    let mut per_capability: BTreeMap<String, Counts> = deferrals
        .capabilities
        .keys()
        .filter(|c| capability.is_none_or(|f| f == c.as_str()))
        .map(|c| (c.clone(), Counts::default()))
        .collect();
    for (job, outcome) in jobs.iter().zip(outcomes) {
        let verdict = Verdict::of(outcome, deferrals.reason_for(&job.id));
        per_capability
            .entry(job.id.capability.clone())
            .or_default()
            .record(&verdict);
    }
    per_capability
}

/// What to change in `conformance.toml` when the deferred case `id` passes.
pub fn deferred_pass_hint(deferrals: &Deferrals, id: &CaseId) -> String {
    let hint = match deferrals.entry_for(id) {
        Some(entry) if entry.fixture == id.to_string() => {
            format!("remove `fixture = \"{}\"`", entry.fixture)
        }
        Some(entry) => format!(
            "remove `fixture = \"{}\"` or narrow it to the cases that still fail (`{}/<case>`)",
            entry.fixture, entry.fixture
        ),
        None => format!(
            "the whole capability `{}` is deferred: replace that with [[deferred]] entries for \
             the fixtures that still fail",
            id.capability
        ),
    };
    format!("deferred fixture now passes: remove it from {CONFIG_FILE} ({hint})")
}

/// `[[deferred]]` entries in scope that match no discovered fixture or case.
///
/// Only checked when the upstream fixtures are present (without them every
/// upstream entry would look stale). A case-level entry under a fixture whose
/// cases could not be listed is not reported.
pub fn stale_entries(
    upstream_present: bool,
    files: &[FixtureFile],
    jobs: &[Job],
    deferrals: &Deferrals,
    capability: Option<&str>,
) -> Vec<String> {
    if !upstream_present {
        return Vec::new();
    }
    let fixtures: BTreeSet<String> = files.iter().map(FixtureFile::key).collect();
    let cases: BTreeSet<String> = jobs.iter().map(|j| j.id.to_string()).collect();
    let unlisted: BTreeSet<String> = jobs
        .iter()
        .filter(|j| j.listing_error.is_some())
        .map(|j| j.id.fixture_key())
        .collect();
    deferrals
        .stale_entries(&fixtures, &cases, |c| capability.is_none_or(|f| f == c))
        .into_iter()
        .filter(|e| !(e.is_case() && unlisted.contains(e.fixture_key())))
        .map(|e| e.fixture.clone())
        .collect()
}

/// The deferral-honesty check both front ends enforce: every deferred job is run
/// and each one that passes is reported with its hint, then every stale entry.
/// An empty list means `conformance.toml` is honest.
pub fn dishonest_deferrals(
    deferrals: &Deferrals,
    upstream_present: bool,
    files: &[FixtureFile],
    jobs: &[Job],
    workers: usize,
) -> Vec<String> {
    let deferred: Vec<Job> = jobs
        .iter()
        .filter(|j| deferrals.reason_for(&j.id).is_some())
        .cloned()
        .collect();
    let outcomes = run_jobs(&deferred, workers);
    let mut problems: Vec<String> = deferred
        .iter()
        .zip(&outcomes)
        .filter_map(
            |(job, outcome)| match Verdict::of(outcome, deferrals.reason_for(&job.id)) {
                Verdict::DeferredPasses(reason) => Some(format!(
                    "{}: {}; deferral reason was: {reason}",
                    job.id,
                    deferred_pass_hint(deferrals, &job.id)
                )),
                _ => None,
            },
        )
        .collect();
    problems.extend(
        stale_entries(upstream_present, files, jobs, deferrals, None)
            .into_iter()
            .map(|entry| {
                format!(
                    "{CONFIG_FILE}: [[deferred]] fixture = \"{entry}\" matches no fixture case; \
                     remove or fix it"
                )
            }),
    );
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(case: Option<&str>) -> CaseId {
        CaseId {
            capability: "graph-engine".into(),
            fixture: "007-compile-errors".into(),
            case: case.map(Into::into),
        }
    }

    const SAMPLE: &str = r#"
[spec]
release = "0.109.0"
[capabilities.graph-engine]
crate = "openarmature-graph"
[[deferred]]
fixture = "graph-engine/007-compile-errors/case-2"
reason = "one case"
[[deferred]]
fixture = "graph-engine/008-other"
reason = "whole fixture"
"#;

    #[test]
    fn verdicts_and_counts() {
        let (pass, fail) = (CaseOutcome::Passed, CaseOutcome::Failed("boom".into()));
        assert_eq!(Verdict::of(&pass, None), Verdict::Passed);
        assert_eq!(Verdict::of(&fail, None), Verdict::Failed(&"boom".into()));
        assert_eq!(Verdict::of(&fail, Some("r")), Verdict::Skipped);
        assert_eq!(Verdict::of(&pass, Some("r")), Verdict::DeferredPasses("r"));
        let mut counts = Counts::default();
        for verdict in [
            Verdict::Passed,
            Verdict::Skipped,
            Verdict::Failed(&"x".into()),
            Verdict::DeferredPasses("r"),
        ] {
            counts.record(&verdict);
        }
        assert_eq!((counts.passed, counts.failed, counts.skipped), (1, 2, 1));
        assert_eq!(counts.total(), 4);
    }

    #[test]
    fn hints_name_the_entry_to_change() -> Result<(), crate::deferrals::DeferralsError> {
        let d = Deferrals::parse(SAMPLE, "conformance.toml".as_ref())?;
        let exact = deferred_pass_hint(&d, &id(Some("case-2")));
        assert!(
            exact.contains("remove `fixture = \"graph-engine/007-compile-errors/case-2\"`"),
            "{exact}"
        );
        let whole = CaseId {
            fixture: "008-other".into(),
            ..id(Some("a"))
        };
        assert!(deferred_pass_hint(&d, &whole).contains("narrow it"));
        Ok(())
    }

    #[test]
    fn a_listing_error_is_the_jobs_failure() {
        let job = Job {
            id: id(None),
            path: PathBuf::from("/nowhere.yaml"),
            listing_error: Some("bad fixture".into()),
        };
        assert_eq!(job.run(), CaseOutcome::Failed("bad fixture".into()));
        let missing = Job {
            listing_error: None,
            ..job
        };
        assert!(!missing.run().is_pass());
    }

    #[test]
    fn a_deferred_case_that_passes_and_a_stale_entry_are_dishonest(
    ) -> Result<(), crate::deferrals::DeferralsError> {
        let path = crate::discovery::workspace_root()
            .join("spec/conformance/graph-engine/x001-node-named-end.yaml");
        let file = FixtureFile {
            capability: "graph-engine".into(),
            fixture: "x001-node-named-end".into(),
            path,
            origin: crate::discovery::Origin::Project,
        };
        let files = [file];
        let jobs = list_jobs(&files, 1);
        assert!(!jobs.is_empty());
        let head = "[spec]\nrelease = \"0.109.0\"\n[capabilities.graph-engine]\ncrate = \"g\"\n";
        let honest = Deferrals::parse(head, "conformance.toml".as_ref())?;
        assert!(dishonest_deferrals(&honest, true, &files, &jobs, 1).is_empty());

        let text = format!(
            "{head}[[deferred]]\nfixture = \"graph-engine/x001-node-named-end\"\nreason = \"r\"\n\
             [[deferred]]\nfixture = \"graph-engine/x999-gone\"\nreason = \"r\"\n"
        );
        let d = Deferrals::parse(&text, "conformance.toml".as_ref())?;
        let problems = dishonest_deferrals(&d, true, &files, &jobs, 1);
        assert_eq!(problems.len(), jobs.len() + 1, "{problems:#?}");
        assert!(problems[0].contains("now passes"), "{}", problems[0]);
        assert!(problems[jobs.len()].contains("x999-gone"), "{problems:#?}");
        // Without the upstream fixtures, staleness is not judged.
        assert_eq!(
            dishonest_deferrals(&d, false, &files, &jobs, 1).len(),
            jobs.len()
        );
        Ok(())
    }
}
