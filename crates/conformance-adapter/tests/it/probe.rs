//! Runs a hand-written one-case fixture through the adapter: the helpers the
//! per-runner harness tests share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use openarmature_conformance::{runner, CaseOutcome};

/// Writes `yaml` as a one-case fixture of `capability` and runs it.
pub fn run(capability: &str, yaml: &str) -> CaseOutcome {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "openarmature-{capability}-harness-{}-{n}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("900-probe.yaml");
    std::fs::write(&path, yaml).unwrap();
    let ids = runner::list_cases(capability, &path).unwrap();
    assert_eq!(ids.len(), 1);
    let outcome = runner::run_case(&path, &ids[0]);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// The failure message of a case expected to fail.
pub fn failure(outcome: CaseOutcome) -> String {
    match outcome {
        CaseOutcome::Failed(m) => m.to_string(),
        CaseOutcome::Passed => panic!("the case passed but was expected to fail"),
    }
}
