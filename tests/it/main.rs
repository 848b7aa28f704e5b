//! The facade's integration tests (one binary; one module per topic).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser;
mod chat_browser;
mod crash;
mod extraction;
mod report_browser;
mod soak;
mod suspend_across_processes;

/// This test binary, set to run only the test `name` (a child process of a
/// multi-process test; `--nocapture`, so its stdout is the child's report).
pub fn rerun(name: &str) -> std::process::Command {
    let exe = std::env::current_exe().expect("test binary");
    let mut command = std::process::Command::new(exe);
    command.args(["--exact", name, "--nocapture"]);
    command
}
