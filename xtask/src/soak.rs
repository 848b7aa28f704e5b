//! `cargo xtask soak [--seconds N] [--release]`: the `resilient_extraction` example's
//! soak (`--soak N`): the pipeline at full rate against the embedded fault-injecting
//! server for N seconds (default 60), RSS sampled every second; fails when an
//! invocation neither finished nor degraded, the RSS slope after warm-up exceeds its
//! bound, or a task is left on the runtime (see `examples/resilient_extraction/soak.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The parsed options.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// How long to soak.
    pub seconds: f64,
    /// Build the example with `--release`.
    pub release: bool,
}

impl Options {
    /// Parses `[--seconds N] [--release]`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            seconds: 60.0,
            release: false,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--seconds" => {
                    let value = args.next().ok_or("--seconds needs a value")?;
                    options.seconds = value
                        .parse::<f64>()
                        .ok()
                        .filter(|s| *s > 0.0 && s.is_finite())
                        .ok_or_else(|| format!("--seconds: `{value}` is not a positive number"))?;
                }
                "--release" => options.release = true,
                other => return Err(format!("soak: unknown argument `{other}`")),
            }
        }
        Ok(options)
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs the soak; the example's exit status is the result.
pub fn run(options: &Options) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args(["run", "--example", "resilient_extraction"]);
    // `cargo xtask` runs this program with the package variables of xtask set; build
    // scripts that watch them (ring's) would rebuild for the inner cargo, then again
    // for a plain `cargo run`. The inner cargo gets the environment a shell gives it.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if inherited_from_cargo_run(&name) {
            command.env_remove(name.as_ref());
        }
    }
    if options.release {
        command.arg("--release");
    }
    command.args(["--", "--soak", &options.seconds.to_string()]);
    match command.status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("error: the soak failed ({status})");
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("error: cannot run cargo: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The variables `cargo run` sets for the program it runs (not for a shell).
fn inherited_from_cargo_run(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
        .iter()
        .any(|p| name.starts_with(p))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ]
        .contains(&name)
}

#[cfg(test)]
mod tests {
    use super::{inherited_from_cargo_run, Options};

    #[test]
    fn only_cargo_runs_package_variables_are_dropped() {
        assert!(inherited_from_cargo_run("CARGO_PKG_NAME"));
        assert!(inherited_from_cargo_run("CARGO_MANIFEST_DIR"));
        assert!(inherited_from_cargo_run("CARGO_CRATE_NAME"));
        assert!(!inherited_from_cargo_run("CARGO"));
        assert!(!inherited_from_cargo_run("CARGO_HOME"));
        assert!(!inherited_from_cargo_run("CARGO_TARGET_DIR"));
    }

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_flags() {
        assert_eq!(
            parse(&[]),
            Ok(Options {
                seconds: 60.0,
                release: false
            })
        );
        assert_eq!(
            parse(&["--seconds", "2.5", "--release"]),
            Ok(Options {
                seconds: 2.5,
                release: true
            })
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(parse(&["--seconds"]).is_err());
        assert!(parse(&["--seconds", "0"]).is_err());
        assert!(parse(&["--seconds", "ten"]).is_err());
        assert!(parse(&["--fast"]).is_err());
    }
}
