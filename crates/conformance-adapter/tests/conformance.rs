//! The conformance suite as `cargo test` trials: one trial per fixture case.
//!
//! Spec: conformance-adapter §3–§9.
//!
//! Trials are named `capability/fixture[/case]`, so a filter selects one:
//!
//! ```text
//! cargo test -p openarmature-conformance --test conformance -- graph-engine/007-compile-errors/case-2
//! ```
//!
//! Fixture cases deferred in `conformance.toml` are marked ignored;
//! `cargo test -- --ignored` runs them. One more trial,
//! `conformance.toml/deferrals-are-honest`, runs every deferred case and fails when
//! one of them passes or when a `[[deferred]]` entry matches no case, so plain
//! `cargo test` keeps the list honest exactly as `cargo xtask conformance` does
//! (both judge through `openarmature_conformance::suite`). A fixture that cannot be
//! listed (broken YAML, unknown directive) is one failing trial named
//! `capability/fixture` whose message names the file and the directive. When the
//! upstream fixtures are absent, a warning explains how to point at them and the
//! project's own fixtures (possibly none) still run.

use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{discover, workspace_root};
use openarmature_conformance::suite::{dishonest_deferrals, list_jobs, workers, Job};
use openarmature_conformance::CaseOutcome;

/// The name of the deferral-honesty trial.
const HONESTY_TRIAL: &str = "conformance.toml/deferrals-are-honest";

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let root = workspace_root();
    let mut trials = Vec::new();

    let deferrals = match Deferrals::load(&root.join(CONFIG_FILE)) {
        Ok(deferrals) => Some(Arc::new(deferrals)),
        Err(err) => {
            let message = format!("cannot load {CONFIG_FILE}: {err}");
            trials.push(Trial::test(CONFIG_FILE, move || Err(Failed::from(message))));
            None
        }
    };

    let found = discover(&root, None);
    for warning in &found.warnings {
        eprintln!("warning: {warning}");
    }
    let jobs = list_jobs(&found.files, workers(None));

    for job in &jobs {
        let reason = deferrals
            .as_ref()
            .and_then(|d| d.reason_for(&job.id))
            .map(str::to_owned);
        let ignored = reason.is_some();
        let job = job.clone();
        let trial = Trial::test(job.id.to_string(), move || match job.run() {
            CaseOutcome::Passed => Ok(()),
            CaseOutcome::Failed(message) => {
                Err(Failed::from(with_reason(message.to_string(), reason)))
            }
        });
        trials.push(trial.with_ignored_flag(ignored));
    }

    if let Some(deferrals) = deferrals {
        let upstream_present = found.upstream_path().is_some();
        let files = found.files;
        trials.push(Trial::test(HONESTY_TRIAL, move || {
            honest(&deferrals, upstream_present, &files, &jobs)
        }));
    }

    libtest_mimic::run(&args, trials).exit_code()
}

/// Fails with one line per deferred case that passes and per stale entry.
fn honest(
    deferrals: &Deferrals,
    upstream_present: bool,
    files: &[openarmature_conformance::discovery::FixtureFile],
    jobs: &[Job],
) -> Result<(), Failed> {
    let problems = dishonest_deferrals(deferrals, upstream_present, files, jobs, 1);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failed::from(problems.join("\n")))
    }
}

/// Appends the deferral reason to a failure message of a deferred case.
fn with_reason(message: String, reason: Option<String>) -> String {
    match reason {
        Some(reason) => format!("{message}\n(deferred in {CONFIG_FILE}: {reason})"),
        None => message,
    }
}
