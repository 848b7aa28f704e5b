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
//! `cargo test -- --ignored` runs them. A fixture that cannot be
//! listed (broken YAML, unknown directive) is one failing trial named
//! `capability/fixture` whose message names the file and the directive. When
//! the upstream fixtures are absent, a warning explains how to point at them and
//! the project's own fixtures (possibly none) still run.

use std::process::ExitCode;

use libtest_mimic::{Arguments, Failed, Trial};
use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{discover, workspace_root};
use openarmature_conformance::{runner, CaseId, CaseOutcome};

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let root = workspace_root();
    let mut trials = Vec::new();

    let config_path = root.join(CONFIG_FILE);
    let deferrals = match Deferrals::load(&config_path) {
        Ok(deferrals) => Some(deferrals),
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

    for file in found.files {
        let cases = match runner::list_cases(&file.capability, &file.path) {
            Ok(cases) => cases,
            Err(err) => {
                // The whole file is unusable: one failing trial for the fixture,
                // ignored like its cases would be when the fixture is deferred.
                let id = CaseId {
                    capability: file.capability.clone(),
                    fixture: file.fixture.clone(),
                    case: None,
                };
                let reason = reason_for(deferrals.as_ref(), &id);
                // The error names the file, the §9 category and the directive.
                let message = err.to_string();
                let trial = Trial::test(file.key(), move || {
                    Err(Failed::from(with_reason(message, reason.as_deref())))
                });
                trials.push(mark(trial, deferrals.as_ref(), &id));
                continue;
            }
        };
        for id in cases {
            let reason = reason_for(deferrals.as_ref(), &id);
            let path = file.path.clone();
            let case = id.clone();
            let trial = Trial::test(id.to_string(), move || {
                match runner::run_case(&path, &case) {
                    CaseOutcome::Passed => Ok(()),
                    CaseOutcome::Failed(message) => {
                        Err(Failed::from(with_reason(message, reason.as_deref())))
                    }
                }
            });
            trials.push(mark(trial, deferrals.as_ref(), &id));
        }
    }

    libtest_mimic::run(&args, trials).exit_code()
}

/// The deferral reason for a case, owned so a trial can carry it.
fn reason_for(deferrals: Option<&Deferrals>, id: &CaseId) -> Option<String> {
    deferrals.and_then(|d| d.reason_for(id)).map(str::to_owned)
}

/// Appends the deferral reason to a failure message of a deferred case.
fn with_reason(message: String, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("{message}\n(deferred in {CONFIG_FILE}: {reason})"),
        None => message,
    }
}

/// Marks a trial of a deferred case as ignored.
fn mark(trial: Trial, deferrals: Option<&Deferrals>, id: &CaseId) -> Trial {
    if deferrals.and_then(|d| d.reason_for(id)).is_some() {
        trial.with_ignored_flag(true)
    } else {
        trial
    }
}
