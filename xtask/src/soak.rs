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

#[cfg(test)]
mod tests {
    use super::Options;

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
