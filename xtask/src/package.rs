//! `cargo xtask package`: for every publishable workspace crate (`publish` not
//! `false`), checks its packaging metadata and runs `cargo package --list`, failing
//! when the package would not ship its README and LICENSE.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::Value;

/// The files every published package must contain.
const REQUIRED_FILES: [&str; 2] = ["README.md", "LICENSE"];

/// A publishable workspace crate, from `cargo metadata --no-deps`.
#[derive(Debug, PartialEq, Eq)]
pub struct Publishable {
    /// The package name.
    pub name: String,
    /// What is missing from its manifest (empty when complete).
    pub manifest_problems: Vec<String>,
}

/// The publishable workspace packages, with what their manifests lack.
pub fn publishable(metadata: &Value) -> Result<Vec<Publishable>, String> {
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or("metadata has no `packages`")?;
    let mut out = Vec::new();
    for package in packages {
        let name = package
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a package has no name")?;
        // `publish = false` is `[]`; unrestricted is `null`.
        if package
            .get("publish")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            continue;
        }
        let mut problems = Vec::new();
        for field in [
            "description",
            "license",
            "repository",
            "readme",
            "rust_version",
        ] {
            if package
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                problems.push(format!("no `{field}`"));
            }
        }
        for field in ["keywords", "categories"] {
            if package
                .get(field)
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                problems.push(format!("no `{field}`"));
            }
        }
        if package.pointer("/metadata/docs/rs").is_none() {
            problems.push("no `[package.metadata.docs.rs]`".to_owned());
        }
        let manifest = package
            .get("manifest_path")
            .and_then(Value::as_str)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        if inherits_version(&manifest) {
            problems.push(
                "`version.workspace = true`: a publishable crate declares its own version"
                    .to_owned(),
            );
        }
        out.push(Publishable {
            name: name.to_owned(),
            manifest_problems: problems,
        });
    }
    Ok(out)
}

/// Whether a manifest takes its version from the workspace. Publishable crates version
/// independently (each tracks its spec capability's releases), so they must not.
pub fn inherits_version(manifest: &str) -> bool {
    manifest.lines().any(|line| {
        let line: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        line.starts_with("version.workspace=true") || line.starts_with("version={workspace=true")
    })
}

/// The required files missing from a `cargo package --list` output.
pub fn missing_files(listing: &str) -> Vec<&'static str> {
    REQUIRED_FILES
        .into_iter()
        .filter(|file| !listing.lines().any(|line| line.trim() == *file))
        .collect()
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn cargo(args: &[&str]) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if output.status.success() {
        String::from_utf8(output.stdout).map_err(|e| format!("cargo printed non-UTF-8: {e}"))
    } else {
        Err(format!(
            "`cargo {}` failed ({}):\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Checks every publishable crate; non-zero exit on any problem.
pub fn run(args: &[String]) -> ExitCode {
    if let Some(extra) = args.first() {
        eprintln!("error: `package` takes no arguments (got `{extra}`)");
        return ExitCode::from(2);
    }
    let crates = cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--locked",
        "--offline",
    ])
    .and_then(|text| {
        serde_json::from_str::<Value>(&text).map_err(|e| format!("invalid metadata: {e}"))
    })
    .and_then(|metadata| publishable(&metadata));
    let crates = match crates {
        Ok(crates) => crates,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let mut failures = 0;
    for krate in &crates {
        let mut problems = krate.manifest_problems.clone();
        match cargo(&[
            "package",
            "--list",
            "--allow-dirty",
            "--locked",
            // Listing needs no registry: never touch the network.
            "--offline",
            "-p",
            &krate.name,
        ]) {
            Ok(listing) => {
                let files = listing.lines().count();
                problems.extend(
                    missing_files(&listing)
                        .iter()
                        .map(|f| format!("{f} not packaged")),
                );
                if problems.is_empty() {
                    println!("{:<32} ok ({files} files)", krate.name);
                }
            }
            Err(message) => problems.push(message),
        }
        if !problems.is_empty() {
            failures += 1;
            eprintln!("{:<32} FAILED: {}", krate.name, problems.join("; "));
        }
    }
    println!("{} publishable crates, {failures} failed", crates.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn complete(name: &str) -> Value {
        json!({
            "name": name, "publish": null, "description": "d", "license": "Apache-2.0",
            "repository": "https://x", "readme": "README.md", "rust_version": "1.89",
            "keywords": ["llm"], "categories": ["asynchronous"],
            "metadata": {"docs": {"rs": {"all-features": true}}},
        })
    }

    #[test]
    fn unpublished_crates_are_skipped_and_gaps_reported() -> Result<(), String> {
        let mut bare = complete("bare");
        bare["keywords"] = json!([]);
        bare["readme"] = Value::Null;
        bare["metadata"] = Value::Null;
        let mut private = complete("private");
        private["publish"] = json!([]);
        let metadata = json!({"packages": [complete("full"), bare, private]});
        let crates = publishable(&metadata)?;
        let names: Vec<&str> = crates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["full", "bare"]);
        assert!(crates[0].manifest_problems.is_empty());
        assert_eq!(
            crates[1].manifest_problems,
            [
                "no `readme`",
                "no `keywords`",
                "no `[package.metadata.docs.rs]`"
            ]
        );
        Ok(())
    }

    #[test]
    fn an_inherited_version_is_caught() {
        assert!(inherits_version(
            "[package]\nname = \"a\"\nversion.workspace = true\n"
        ));
        assert!(inherits_version("version = { workspace = true }"));
        assert!(!inherits_version("[package]\nversion = \"0.1.0\"\n"));
    }

    #[test]
    fn a_listing_without_readme_or_license_is_caught() {
        assert!(missing_files("Cargo.toml\nLICENSE\nREADME.md\nsrc/lib.rs\n").is_empty());
        assert_eq!(
            missing_files("Cargo.toml\nsrc/lib.rs\n"),
            ["README.md", "LICENSE"]
        );
        // A file of that name in a subdirectory does not count.
        assert_eq!(missing_files("docs/README.md\nLICENSE\n"), ["README.md"]);
    }
}
