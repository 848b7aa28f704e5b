//! `cargo xtask msrv`: checks that the declared `rust-version` is true, from
//! `cargo metadata --locked` (no other toolchain is needed): the highest
//! `rust-version` among the locked dependency packages must not exceed the lowest
//! one the workspace members declare.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::Value;

/// A `rust-version` (`1.88` or `1.88.0`), ordered numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RustVersion([u64; 3]);

impl RustVersion {
    /// Parses `major.minor[.patch]`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = [0u64; 3];
        let mut count = 0;
        for piece in text.trim().split('.') {
            if count == 3 {
                return None;
            }
            parts[count] = piece.parse().ok()?;
            count += 1;
        }
        (count >= 2).then_some(RustVersion(parts))
    }
}

impl std::fmt::Display for RustVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [major, minor, patch] = self.0;
        write!(f, "{major}.{minor}.{patch}")
    }
}

/// What the metadata says: the declared minimum and the dependencies above it.
#[derive(Debug)]
pub struct Report {
    /// The lowest `rust-version` a workspace member declares.
    pub declared: RustVersion,
    /// The highest `rust-version` among the dependency packages (`None` when no
    /// dependency declares one).
    pub highest: Option<RustVersion>,
    /// `(name version, rust-version)` of every dependency needing more than
    /// `declared`, highest first.
    pub above: Vec<(String, RustVersion)>,
}

/// Reads `cargo metadata` output. Errors name what is missing or malformed.
pub fn check(metadata: &Value) -> Result<Report, String> {
    let members: Vec<&str> = metadata
        .get("workspace_members")
        .and_then(Value::as_array)
        .ok_or("metadata has no `workspace_members`")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or("metadata has no `packages`")?;
    let mut declared: Option<RustVersion> = None;
    let mut deps = Vec::new();
    for package in packages {
        let id = package.get("id").and_then(Value::as_str).unwrap_or("");
        let name = package.get("name").and_then(Value::as_str).unwrap_or("?");
        let version = package
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let rust_version = package.get("rust_version").and_then(Value::as_str);
        if members.contains(&id) {
            let text = rust_version
                .ok_or_else(|| format!("workspace member {name} declares no rust-version"))?;
            let parsed = RustVersion::parse(text)
                .ok_or_else(|| format!("{name}: rust-version `{text}` is not a version"))?;
            declared = Some(declared.map_or(parsed, |d| d.min(parsed)));
        } else if let Some(parsed) = rust_version.and_then(RustVersion::parse) {
            deps.push((format!("{name} {version}"), parsed));
        }
    }
    let declared = declared.ok_or("metadata lists no workspace member")?;
    let highest = deps.iter().map(|(_, v)| *v).max();
    let mut above: Vec<_> = deps.into_iter().filter(|(_, v)| *v > declared).collect();
    above.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(Report {
        declared,
        highest,
        above,
    })
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs `cargo metadata --locked`, prints the verdict, fails when a dependency
/// needs a newer Rust than declared.
pub fn run(args: &[String]) -> ExitCode {
    if let Some(extra) = args.first() {
        eprintln!("error: `msrv` takes no arguments (got `{extra}`)");
        return ExitCode::from(2);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => {
            eprintln!(
                "error: cargo metadata failed ({}):\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            return ExitCode::FAILURE;
        }
        Err(err) => {
            eprintln!("error: cannot run cargo metadata: {err}");
            return ExitCode::FAILURE;
        }
    };
    let report = serde_json::from_slice::<Value>(&output.stdout)
        .map_err(|e| format!("cargo metadata printed invalid JSON: {e}"))
        .and_then(|metadata| check(&metadata));
    match report {
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
        Ok(report) if report.above.is_empty() => {
            let highest = report
                .highest
                .map_or_else(|| "none declared".to_owned(), |v| v.to_string());
            println!(
                "msrv: declared rust-version {} holds (highest among locked dependencies: {highest})",
                report.declared
            );
            ExitCode::SUCCESS
        }
        Ok(report) => {
            eprintln!(
                "error: declared rust-version {} is below what {} locked dependencies need:",
                report.declared,
                report.above.len()
            );
            for (package, version) in &report.above {
                eprintln!("  {package:<40} rust-version {version}");
            }
            eprintln!(
                "raise `rust-version` in [workspace.package] to {} (or lock older dependencies)",
                report.above[0].1
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(member_version: Option<&str>, deps: &[(&str, Option<&str>)]) -> Value {
        let mut packages = vec![json!({
            "id": "path+file:///ws#oa@0.1.0",
            "name": "oa",
            "version": "0.1.0",
            "rust_version": member_version,
        })];
        for (name, rust_version) in deps {
            packages.push(json!({
                "id": format!("registry+https://x#{name}@1.0.0"),
                "name": name,
                "version": "1.0.0",
                "rust_version": rust_version,
            }));
        }
        json!({"workspace_members": ["path+file:///ws#oa@0.1.0"], "packages": packages})
    }

    fn v(text: &str) -> RustVersion {
        RustVersion::parse(text).unwrap_or(RustVersion([0; 3]))
    }

    #[test]
    fn versions_parse_and_order_numerically() {
        assert_eq!(RustVersion::parse("1.88"), Some(RustVersion([1, 88, 0])));
        assert_eq!(RustVersion::parse("1.88.1"), Some(RustVersion([1, 88, 1])));
        assert!(v("1.100") > v("1.99.9"));
        assert_eq!(v("1.88"), v("1.88.0"));
        for bad in ["1", "", "1.x", "1.2.3.4", "-1.2"] {
            assert_eq!(RustVersion::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_dependency_above_the_declared_version_is_reported() -> Result<(), String> {
        let m = metadata(
            Some("1.85"),
            &[
                ("a", Some("1.89")),
                ("b", Some("1.85.0")),
                ("c", None),
                ("d", Some("1.88")),
            ],
        );
        let report = check(&m)?;
        assert_eq!(report.declared, v("1.85"));
        assert_eq!(report.highest, Some(v("1.89")));
        let names: Vec<&str> = report.above.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a 1.0.0", "d 1.0.0"]);
        Ok(())
    }

    #[test]
    fn a_true_declaration_passes() -> Result<(), String> {
        let m = metadata(Some("1.89"), &[("a", Some("1.89")), ("b", Some("1.70"))]);
        let report = check(&m)?;
        assert!(report.above.is_empty());
        assert_eq!(report.highest, Some(v("1.89")));
        Ok(())
    }

    #[test]
    fn a_member_without_rust_version_is_an_error() {
        let err = check(&metadata(None, &[])).err();
        assert!(err.is_some_and(|e| e.contains("declares no rust-version")));
        let err = check(&json!({"packages": []})).err();
        assert!(err.is_some_and(|e| e.contains("workspace_members")));
    }
}
