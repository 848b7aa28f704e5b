//! The soak's short version (issue 20): the `resilient_extraction` example's soak
//! (`examples/resilient_extraction/soak.rs`) for 3 s, in a child process (this binary
//! re-run as `soak::child`, so its RSS and its runtime's tasks are the soak's alone).
//! Every invocation must finish with each chunk extracted or degraded, no task may
//! be left, and the RSS slope must stay under the short run's (gross-leak) bound. The
//! minute-long run with the tight bound is `cargo xtask soak` (CI).

use crate::extraction::soak as run;

const ROLE: &str = "OA_SOAK_CHILD";

/// The child side: runs the soak and fails when a check does. A no-op in the parent.
#[test]
fn child() {
    if std::env::var(ROLE).is_err() {
        return;
    }
    let config = run::SoakConfig::new(3.0);
    let report = run::run(config).expect("the soak starts");
    println!("\n{}", report.render(&config));
    assert!(
        report.passed(&config),
        "the soak failed; first failure: {:?}",
        report.first_failure
    );
    assert!(
        report.injected.iter().sum::<u64>() > 0,
        "the server injected no fault"
    );
}

#[test]
fn a_short_soak_finishes_every_invocation_and_leaves_nothing_behind() {
    let out = crate::rerun("soak::child")
        .env(ROLE, "1")
        .output()
        .expect("spawn the soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the soak failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Soak: "))
        .take_while(|l| l.starts_with("Soak: ") || l.starts_with("  "))
        .collect();
    assert!(!report.is_empty(), "no report:\n{stdout}");
    println!("{}", report.join("\n"));
}
