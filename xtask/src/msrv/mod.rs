//! `cargo xtask msrv`: checks that every declared `rust-version` is true, from
//! `cargo metadata --locked` (no other toolchain is needed), per workspace member:
//! no package a member builds (its normal and build dependencies, transitively, and
//! its own dev-dependencies) may declare a higher `rust-version` than the member
//! does. So one opt-in crate may need a newer Rust than the rest (openarmature-restate)
//! without raising every crate's minimum, and no crate with the lower minimum may
//! depend on it.

use std::collections::{HashMap, HashSet};
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

/// What the metadata says of one workspace member: its declared minimum and the
/// packages it builds (its normal and build dependencies, transitively, plus its own
/// dev-dependencies' closure) that need more.
#[derive(Debug)]
pub struct MemberReport {
    /// The member's package name.
    pub name: String,
    /// Its `rust-version`.
    pub declared: RustVersion,
    /// The highest `rust-version` among the packages it builds (`None` when none
    /// declares one).
    pub highest: Option<RustVersion>,
    /// `(name version, rust-version)` of every package it builds needing more than
    /// `declared`, highest first.
    pub above: Vec<(String, RustVersion)>,
}

/// Every member's report, in the metadata's member order.
#[derive(Debug)]
pub struct Report {
    /// One per workspace member.
    pub members: Vec<MemberReport>,
}

impl Report {
    /// The members whose declaration does not hold.
    pub fn failing(&self) -> impl Iterator<Item = &MemberReport> {
        self.members.iter().filter(|m| !m.above.is_empty())
    }
}

/// A package's `(name version label, rust-version)`.
type Package<'a> = (String, Option<&'a str>);

/// Whether a resolve-graph dependency edge is a dev-dependency only.
fn dev_only(dep: &Value) -> bool {
    dep.get("dep_kinds")
        .and_then(Value::as_array)
        .is_some_and(|kinds| {
            !kinds.is_empty()
                && kinds
                    .iter()
                    .all(|k| k.get("kind").and_then(Value::as_str) == Some("dev"))
        })
}

/// The ids `id` builds: normal and build dependencies, transitively; with `dev`, its
/// own dev-dependencies (and their closure) too.
fn closure<'a>(graph: &HashMap<&'a str, &'a [Value]>, id: &'a str, dev: bool) -> HashSet<&'a str> {
    let mut seen = HashSet::new();
    let mut stack = vec![(id, dev)];
    while let Some((at, with_dev)) = stack.pop() {
        for dep in graph.get(at).copied().unwrap_or_default() {
            let Some(pkg) = dep.get("pkg").and_then(Value::as_str) else {
                continue;
            };
            if (with_dev || !dev_only(dep)) && seen.insert(pkg) {
                stack.push((pkg, false));
            }
        }
    }
    seen.remove(id);
    seen
}

/// Reads `cargo metadata` output (with its `resolve` graph). Errors name what is
/// missing or malformed.
pub fn check(metadata: &Value) -> Result<Report, String> {
    let members: Vec<&str> = metadata
        .get("workspace_members")
        .and_then(Value::as_array)
        .ok_or("metadata has no `workspace_members`")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut packages: HashMap<&str, Package<'_>> = HashMap::new();
    for package in metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or("metadata has no `packages`")?
    {
        let id = package.get("id").and_then(Value::as_str).unwrap_or("");
        let name = package.get("name").and_then(Value::as_str).unwrap_or("?");
        let version = package
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let rust_version = package.get("rust_version").and_then(Value::as_str);
        packages.insert(id, (format!("{name} {version}"), rust_version));
    }
    let nodes = metadata
        .pointer("/resolve/nodes")
        .and_then(Value::as_array)
        .ok_or("metadata has no `resolve` graph")?;
    let graph: HashMap<&str, &[Value]> = nodes
        .iter()
        .filter_map(|n| {
            let id = n.get("id").and_then(Value::as_str)?;
            let deps = n.get("deps").and_then(Value::as_array)?;
            Some((id, deps.as_slice()))
        })
        .collect();
    if members.is_empty() {
        return Err("metadata lists no workspace member".into());
    }
    let mut reports = Vec::new();
    for member in members {
        let (label, rust_version) = packages
            .get(member)
            .ok_or_else(|| format!("workspace member {member} is not among the packages"))?;
        let name = label.split(' ').next().unwrap_or(label).to_owned();
        let text = rust_version
            .ok_or_else(|| format!("workspace member {name} declares no rust-version"))?;
        let declared = RustVersion::parse(text)
            .ok_or_else(|| format!("{name}: rust-version `{text}` is not a version"))?;
        let built: Vec<(String, RustVersion)> = closure(&graph, member, true)
            .into_iter()
            .filter_map(|id| {
                let (label, rust_version) = packages.get(id)?;
                Some((label.clone(), RustVersion::parse((*rust_version)?)?))
            })
            .collect();
        let highest = built.iter().map(|(_, v)| *v).max();
        let mut above: Vec<_> = built.into_iter().filter(|(_, v)| *v > declared).collect();
        above.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        reports.push(MemberReport {
            name,
            declared,
            highest,
            above,
        });
    }
    Ok(Report { members: reports })
}

/// The host target triple (`rustc -vV`'s `host:` line).
fn host_triple() -> Option<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().ok()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_owned())
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
    let mut command = Command::new(cargo);
    command.current_dir(workspace_root()).args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--offline",
    ]);
    // Only the host's dependencies: packages behind another platform's cfg (or a
    // custom cfg nobody sets) are never downloaded, and --offline cannot read them.
    if let Some(host) = host_triple() {
        command.args(["--filter-platform", &host]);
    }
    let output = command.output();
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
        Ok(report) => {
            for m in &report.members {
                let highest = m
                    .highest
                    .map_or_else(|| "none declared".to_owned(), |v| v.to_string());
                if m.above.is_empty() {
                    println!(
                        "msrv: {:<28} rust-version {} holds (highest it builds: {highest})",
                        m.name, m.declared
                    );
                    continue;
                }
                eprintln!(
                    "error: {} declares rust-version {} but builds {} packages needing more:",
                    m.name,
                    m.declared,
                    m.above.len()
                );
                for (package, version) in &m.above {
                    eprintln!("  {package:<40} rust-version {version}");
                }
                eprintln!(
                    "raise {}'s `rust-version` to {} (or lock older dependencies)",
                    m.name, m.above[0].1
                );
            }
            if report.failing().next().is_some() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

#[cfg(test)]
mod tests;
