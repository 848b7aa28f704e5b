//! `cargo xtask fuzz`: builds every libFuzzer target of `fuzz/` once, then runs
//! each for a fixed time on its committed seed corpus, failing on any crash, leak
//! (AddressSanitizer's leak check), out-of-memory or timeout. See `fuzz/README.md`.
//!
//! cargo fuzz needs nightly compiler flags: it runs on the active toolchain with
//! `RUSTC_BOOTSTRAP=1`, the compiler every other CI step uses (a nightly toolchain
//! would build every dependency a second time, and its version would drift).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The options of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long each target runs (libFuzzer `-max_total_time`).
    pub seconds: u64,
    /// Only the targets whose names contain this.
    pub filter: Option<String>,
    /// Build only.
    pub build_only: bool,
    /// Build and run unoptimised (`cargo fuzz --dev`: debug assertions and overflow
    /// checks on, about half the build time of the optimised build; far fewer
    /// executions per second, enough for a short CI run over the seeds).
    pub dev: bool,
}

impl Options {
    /// Parses `[--seconds N] [--build-only] [--dev] [FILTER]`.
    ///
    /// # Errors
    /// A usage message.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Options {
            seconds: 20,
            filter: None,
            build_only: false,
            dev: false,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--seconds" => {
                    let value = args.next().ok_or("--seconds needs a value")?;
                    options.seconds = value
                        .parse()
                        .map_err(|_| format!("--seconds: `{value}` is not a number"))?;
                }
                "--build-only" => options.build_only = true,
                "--dev" => options.dev = true,
                flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
                filter => options.filter = Some(filter.to_owned()),
            }
        }
        Ok(options)
    }
}

/// The libFuzzer flags of a CI run of `seconds`: the time budget, a memory cap
/// (an input needing more is a failure), a per-input timeout, and the dictionary.
pub fn libfuzzer_flags(seconds: u64, dict: &Path) -> Vec<String> {
    vec![
        format!("-max_total_time={seconds}"),
        format!("-dict={}", dict.display()),
        "-rss_limit_mb=2048".into(),
        "-timeout=10".into(),
        "-print_final_stats=1".into(),
    ]
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// `cargo fuzz ...` from the repository root on the active toolchain, with the
/// variables the outer `cargo xtask` set removed.
fn cargo_fuzz(root: &Path) -> Command {
    let mut command = Command::new("cargo");
    command.current_dir(root);
    for var in ["RUSTUP_TOOLCHAIN", "RUSTC", "RUSTDOC", "RUSTFLAGS", "CARGO"] {
        command.env_remove(var);
    }
    command.env("RUSTC_BOOTSTRAP", "1");
    command.arg("fuzz");
    command
}

fn run_status(command: &mut Command, what: &str) -> Result<(), String> {
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("{what} failed ({status})")),
        Err(err) => Err(format!("cannot run {what}: {err} (is cargo-fuzz installed? `cargo install cargo-fuzz --locked`)")),
    }
}

fn targets(root: &Path) -> Result<Vec<String>, String> {
    let output = cargo_fuzz(root)
        .arg("list")
        .output()
        .map_err(|e| format!("cannot run cargo fuzz list: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo fuzz list failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Builds, then runs every (matching) target.
pub fn run(options: &Options) -> ExitCode {
    match run_all(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_all(options: &Options) -> Result<(), String> {
    let root = workspace_root();
    println!("fuzz: active toolchain, RUSTC_BOOTSTRAP=1");
    let targets: Vec<String> = targets(&root)?
        .into_iter()
        .filter(|t| {
            options
                .filter
                .as_ref()
                .is_none_or(|f| t.contains(f.as_str()))
        })
        .collect();
    if targets.is_empty() {
        return Err("no fuzz target matches".into());
    }
    let started = Instant::now();
    let profile: &[&str] = if options.dev { &["--dev"] } else { &[] };
    run_status(
        cargo_fuzz(&root).arg("build").args(profile),
        "cargo fuzz build",
    )?;
    println!(
        "fuzz: built {} targets in {:.0?}",
        targets.len(),
        started.elapsed()
    );
    if options.build_only {
        return Ok(());
    }
    let mut failed = Vec::new();
    for target in &targets {
        let seeds = root.join("fuzz").join("corpus").join(target);
        if !seeds.is_dir() {
            return Err(format!(
                "target `{target}` has no seed corpus at {}",
                seeds.display()
            ));
        }
        // New inputs go to a scratch directory; the committed seeds stay as they are.
        let scratch = std::env::temp_dir().join(format!("oa-fuzz-{}-{target}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        println!("\nfuzz: {target} for {} s", options.seconds);
        let result = run_status(
            cargo_fuzz(&root)
                .args(["run", target])
                .args(profile)
                .arg(&scratch)
                .arg(&seeds)
                .arg("--")
                .args(libfuzzer_flags(
                    options.seconds,
                    &root.join("fuzz").join("dict"),
                )),
            &format!("fuzz target {target}"),
        );
        let _ = std::fs::remove_dir_all(&scratch);
        if let Err(message) = result {
            eprintln!(
                "error: {message}; the input is under fuzz/artifacts/{target}/ \
                 (reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run {target} <file>)"
            );
            failed.push(target.clone());
        }
    }
    println!(
        "\nfuzz: {} targets, {} failed, {:.0?} in all",
        targets.len(),
        failed.len(),
        started.elapsed()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets failed: {}", failed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_the_options() {
        assert_eq!(
            Options::parse(&strings(&["--seconds", "15", "openai"])),
            Ok(Options {
                seconds: 15,
                filter: Some("openai".into()),
                build_only: false,
                dev: false,
            })
        );
        assert_eq!(Options::parse(&[]).map(|o| o.seconds), Ok(20));
        assert!(Options::parse(&strings(&["--build-only"])).is_ok_and(|o| o.build_only));
        assert!(Options::parse(&strings(&["--dev"])).is_ok_and(|o| o.dev && !o.build_only));
        assert!(Options::parse(&strings(&["--seconds"])).is_err());
        assert!(Options::parse(&strings(&["--seconds", "x"])).is_err());
        assert!(Options::parse(&strings(&["--fast"])).is_err());
    }

    #[test]
    fn flags_bound_time_memory_and_each_input() {
        let flags = libfuzzer_flags(15, Path::new("/r/fuzz/dict"));
        assert!(flags.contains(&"-dict=/r/fuzz/dict".to_owned()));
        assert!(flags.contains(&"-max_total_time=15".to_owned()));
        assert!(flags.iter().any(|f| f.starts_with("-rss_limit_mb=")));
        assert!(flags.iter().any(|f| f.starts_with("-timeout=")));
    }
}
