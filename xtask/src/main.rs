//! Repository chores, run as `cargo xtask <command>` (see `cargo xtask help`).
//!
//! - `conformance [CAPABILITY]`: runs every conformance fixture case, deferred
//!   ones included, prints a per-capability table and closes with
//!   `N passed, M failed, K skipped`.
//! - `spec-status`: per capability, its crate, targeted release, counts and
//!   deferrals (the README table with `--markdown`).
//! - `spec-diff <old> <new>`: fixtures added / removed / changed between two
//!   fixture trees, the crates affected, and which changed fixtures fail today.
//! - `msrv`: each member's declared `rust-version` against the locked packages it builds.
//! - `package`: packaging metadata and `cargo package --list` for every
//!   publishable crate.
//! - `fuzz`: builds the libFuzzer targets of `fuzz/` and runs each for a fixed
//!   time on its seed corpus.
//! - `soak [--seconds N] [--release]`: the main example's soak (memory, tasks,
//!   outcomes under injected faults at full rate).
//!
//! The argument parsing is hand-rolled to keep this crate free of dependencies
//! beyond the conformance adapter.

use std::process::ExitCode;

mod bench;
mod conformance;
mod fuzz;
mod msrv;
mod package;
mod soak;
mod spec_diff;
mod spec_status;

const HELP: &str = "\
cargo xtask <COMMAND>

Commands:
  conformance [CAPABILITY] [OPTIONS]
        Run every conformance fixture case against the crates, deferred ones
        included. A deferred case that fails counts as skipped; one that passes
        is an error (remove it from conformance.toml). Prints each failure, a
        per-capability table, and ends with `N passed, M failed, K skipped`.
        Exits non-zero on any failure, on a deferred case that passes, on a
        stale conformance.toml entry, or when conformance.toml cannot be loaded.

        CAPABILITY        only this capability (graph-engine, pipeline-utilities,
                          llm-provider, observability, ...)
        --list            print the case ids (deferred ones marked) and exit
        -v, --verbose     print failure messages in full (default: truncated)
        -j, --jobs N      worker threads (default: available parallelism)

        Fixtures are read from $OPENARMATURE_SPEC_DIR (an openarmature-spec
        checkout holding <capability>/conformance/*.yaml), else from
        ../shared/openarmature-spec beside this repository, plus the project's
        own fixtures under spec/conformance/<capability>/. Without upstream
        fixtures the run only warns, except when $CI is set.

  spec-status [CAPABILITY] [--markdown] [-j N]
        Per capability (every one declared in conformance.toml): the crate that
        implements it, the spec release it targets, its fixture counts (passed,
        failed, deferred; the cases run exactly as `conformance` runs them) and
        its deferrals grouped by reason. `--markdown` prints the README table.
        Exits non-zero when a case fails or a deferred case passes.

  spec-diff <OLD-FIXTURE-DIR> <NEW-FIXTURE-DIR> [-j N]
        Compare two fixture trees (each `<capability>/conformance/*.yaml`, or a
        whole upstream checkout with them under `spec/`): per capability, the
        fixtures added, removed and changed (cosmetic YAML edits, companion
        `.md` and `spec.md` changes marked), the crates affected (from
        conformance.toml), and which added or changed fixtures fail today (the
        new version run by the current adapter, with the current deferrals).
        The first thing to run when upstream releases.

  bench [FILTER]
        Run the criterion benchmarks of the workspace with short settings
        (1 s warm-up, 3 s measurement) and print a summary: the median per
        benchmark, per element where a throughput is set. FILTER is passed to
        criterion (a benchmark-id substring). Full runs: `cargo bench`.

  msrv  Check that every declared `rust-version` is true, per workspace member:
        reads `cargo metadata --locked` and fails when a package the member builds
        (its dependencies, transitively, and its own dev-dependencies) declares a
        higher `rust-version` than the member does (listing them). Needs no other
        toolchain.

  package
        For every publishable workspace crate (`publish = false` ones skipped):
        check the manifest (description, license, repository, readme, keywords,
        categories, rust-version, [package.metadata.docs.rs]) and run `cargo
        package --list`, failing when README.md or LICENSE is not in the package.

  fuzz [--seconds N] [--build-only] [--dev] [FILTER]
        Build every libFuzzer target of fuzz/ (cargo fuzz, AddressSanitizer),
        then run each (or those whose name contains FILTER) for N seconds
        (default 20) on its seed corpus fuzz/corpus/<target>/, new inputs going
        to a scratch directory. Fails on any crash, leak, out-of-memory (2 GiB)
        or per-input timeout (10 s); the failing input is left under
        fuzz/artifacts/<target>/. Runs on the active toolchain with
        RUSTC_BOOTSTRAP=1. --dev builds and runs unoptimised (half the
        build time; what CI runs). Needs
        cargo-fuzz (`cargo install cargo-fuzz --locked`).
  soak [--seconds N] [--release]
        Run the resilient_extraction example's soak for N seconds (default 60):
        the pipeline at full rate against its embedded server injecting 5xx, 429
        with Retry-After, truncated and HTML bodies, schema violations, slow and
        too-late answers and hang-ups. Prints the rate, the faults, the RSS
        samples and their slope after warm-up; fails when an invocation neither
        finished nor degraded, the slope exceeds its bound, or a task is left.

  help  Print this help.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    };
    match command.as_str() {
        "help" | "-h" | "--help" => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        "bench" => bench::run(rest),
        "msrv" => msrv::run(rest),
        "package" => package::run(rest),
        "fuzz" => match fuzz::Options::parse(rest) {
            Ok(options) => fuzz::run(&options),
            Err(message) => usage_error(&message),
        },
        "soak" => match soak::Options::parse(rest) {
            Ok(options) => soak::run(&options),
            Err(message) => usage_error(&message),
        },
        "conformance" => match conformance::Options::parse(rest) {
            Ok(options) => conformance::run(&options),
            Err(message) => usage_error(&message),
        },
        "spec-status" => match spec_status::Options::parse(rest) {
            Ok(options) => spec_status::run(&options),
            Err(message) => usage_error(&message),
        },
        "spec-diff" => match spec_diff::Options::parse(rest) {
            Ok(options) => spec_diff::run(&options),
            Err(message) => usage_error(&message),
        },
        other => usage_error(&format!("unknown command `{other}`")),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}\n");
    eprint!("{HELP}");
    ExitCode::from(2)
}
