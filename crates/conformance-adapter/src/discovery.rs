//! Finding the fixture root and the fixture files.
//!
//! Spec: conformance-adapter §3 (fixtures are data, read from a directory).
//!
//! Two sources are searched, in this order:
//!
//! 1. **Upstream** fixtures of the pinned specification release, laid out as
//!    upstream lays them: `<root>/<capability>/conformance/NNN-name.yaml`. The root
//!    is, in order of preference:
//!    - the directory named by the environment variable [`SPEC_DIR_ENV`]
//!      (`OPENARMATURE_SPEC_DIR`), when it is set and not empty;
//!    - `<workspace>/../shared/openarmature-spec`, when that directory exists;
//!    - nothing: only the project's own fixtures run, and [`Discovery::warnings`]
//!      explains how to point the runner at an upstream checkout.
//! 2. **Project** fixtures, the project's own material in upstream format:
//!    `<workspace>/spec/conformance/<capability>/*.yaml` (no `conformance/`
//!    level under the capability there).
//!
//! Upstream files are never copied into this repository.
//!
//! # Examples
//!
//! ```no_run
//! use openarmature_conformance::discovery::{discover, workspace_root};
//!
//! let found = discover(&workspace_root(), Some("graph-engine"));
//! for warning in &found.warnings {
//!     eprintln!("warning: {warning}");
//! }
//! for file in &found.files {
//!     println!("{}/{} ({})", file.capability, file.fixture, file.path.display());
//! }
//! ```

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// Environment variable naming the upstream specification checkout.
pub const SPEC_DIR_ENV: &str = "OPENARMATURE_SPEC_DIR";

/// Where the upstream checkout is looked for when [`SPEC_DIR_ENV`] is unset,
/// relative to the parent directory of the workspace root.
pub const DEFAULT_SPEC_DIR: &str = "shared/openarmature-spec";

/// Where the project's own fixtures live, relative to the workspace root.
pub const PROJECT_FIXTURES_DIR: &str = "spec/conformance";

/// Where a fixture file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// The pinned upstream specification checkout.
    Upstream,
    /// The project's own fixtures under `spec/conformance/`.
    Project,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Upstream => "upstream",
            Origin::Project => "project",
        })
    }
}

/// One fixture file found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureFile {
    /// Capability directory name, e.g. `graph-engine`.
    pub capability: String,
    /// File stem, e.g. `007-compile-errors`.
    pub fixture: String,
    /// Full path of the YAML file.
    pub path: PathBuf,
    /// Upstream or project fixture.
    pub origin: Origin,
}

impl FixtureFile {
    /// `capability/fixture`, the key used in `conformance.toml` and by
    /// [`crate::CaseId::fixture_key`].
    pub fn key(&self) -> String {
        format!("{}/{}", self.capability, self.fixture)
    }
}

/// How the upstream fixture root was (or was not) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamRoot {
    /// Named by [`SPEC_DIR_ENV`] and present.
    FromEnv(PathBuf),
    /// The default `../shared/openarmature-spec` beside the workspace, present.
    Default(PathBuf),
    /// [`SPEC_DIR_ENV`] is set but does not name a directory.
    EnvNotADirectory(PathBuf),
    /// [`SPEC_DIR_ENV`] is unset and the default location (carried here) does not exist.
    NotFound(PathBuf),
}

impl UpstreamRoot {
    /// The root directory to read, when one was found.
    pub fn path(&self) -> Option<&Path> {
        match self {
            UpstreamRoot::FromEnv(p) | UpstreamRoot::Default(p) => Some(p),
            UpstreamRoot::EnvNotADirectory(_) | UpstreamRoot::NotFound(_) => None,
        }
    }

    /// True when [`SPEC_DIR_ENV`] was set explicitly but is unusable: a
    /// misconfiguration rather than an absent optional checkout.
    pub fn is_misconfigured(&self) -> bool {
        matches!(self, UpstreamRoot::EnvNotADirectory(_))
    }

    /// A human explanation when no root was found, `None` otherwise.
    pub fn problem(&self) -> Option<String> {
        let hint = format!(
            "set {SPEC_DIR_ENV} to an openarmature-spec checkout (the directory containing \
             `<capability>/conformance/*.yaml`), or place the checkout at \
             ../{DEFAULT_SPEC_DIR} beside this repository; until then only the project's own \
             fixtures under {PROJECT_FIXTURES_DIR}/ run"
        );
        match self {
            UpstreamRoot::FromEnv(_) | UpstreamRoot::Default(_) => None,
            UpstreamRoot::EnvNotADirectory(p) => Some(format!(
                "upstream fixtures not found: {SPEC_DIR_ENV}={} does not exist or is not a \
                 directory; {hint}",
                p.display()
            )),
            UpstreamRoot::NotFound(p) => Some(format!(
                "upstream fixtures not found: {SPEC_DIR_ENV} is not set and {} does not exist; \
                 {hint}",
                p.display()
            )),
        }
    }
}

/// The workspace root, derived at compile time from this crate's manifest
/// directory (`<root>/crates/conformance-adapter`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// Finds the upstream fixture root, reading [`SPEC_DIR_ENV`] from the environment.
///
/// See [`resolve_upstream_root`] for the rules.
pub fn upstream_root(workspace_root: &Path) -> UpstreamRoot {
    resolve_upstream_root(workspace_root, std::env::var_os(SPEC_DIR_ENV).as_deref())
}

/// Finds the upstream fixture root given the value of [`SPEC_DIR_ENV`] (`None`
/// when unset; an empty value counts as unset).
///
/// A relative value is taken relative to the current directory, as a shell would.
pub fn resolve_upstream_root(workspace_root: &Path, env_value: Option<&OsStr>) -> UpstreamRoot {
    if let Some(value) = env_value.filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        return if path.is_dir() {
            UpstreamRoot::FromEnv(path)
        } else {
            UpstreamRoot::EnvNotADirectory(path)
        };
    }
    let default = default_upstream_dir(workspace_root);
    if default.is_dir() {
        UpstreamRoot::Default(default)
    } else {
        UpstreamRoot::NotFound(default)
    }
}

/// `<parent of workspace_root>/shared/openarmature-spec`.
fn default_upstream_dir(workspace_root: &Path) -> PathBuf {
    match workspace_root.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.join(DEFAULT_SPEC_DIR),
        _ => workspace_root.join("..").join(DEFAULT_SPEC_DIR),
    }
}

/// What [`discover`] found.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// How the upstream root was resolved.
    pub upstream: UpstreamRoot,
    /// Upstream fixtures (sorted by capability, then file name), followed by
    /// project fixtures (sorted the same way).
    pub files: Vec<FixtureFile>,
    /// Human-readable problems worth printing: a missing upstream root (with
    /// instructions), an unreadable directory, a root with no fixtures, a
    /// project fixture that shadows an upstream one.
    pub warnings: Vec<String>,
}

impl Discovery {
    /// The upstream root in use, if any.
    pub fn upstream_path(&self) -> Option<&Path> {
        self.upstream.path()
    }

    /// The distinct capabilities of the files found, sorted.
    pub fn capabilities(&self) -> BTreeSet<&str> {
        self.files.iter().map(|f| f.capability.as_str()).collect()
    }
}

/// Discovers fixtures, reading [`SPEC_DIR_ENV`] from the environment.
///
/// `capability_filter` keeps only the capability with that exact directory name.
pub fn discover(workspace_root: &Path, capability_filter: Option<&str>) -> Discovery {
    discover_with(
        upstream_root(workspace_root),
        workspace_root,
        capability_filter,
    )
}

/// Discovers fixtures under an already resolved upstream root (no environment access).
pub fn discover_with(
    upstream: UpstreamRoot,
    workspace_root: &Path,
    capability_filter: Option<&str>,
) -> Discovery {
    let mut warnings = Vec::new();
    let mut files = Vec::new();

    match upstream.path() {
        Some(root) => {
            let mut found = scan_root(
                root,
                Some(Path::new("conformance")),
                Origin::Upstream,
                capability_filter,
                &mut warnings,
            );
            if found.is_empty() && capability_filter.is_none() {
                warnings.push(format!(
                    "upstream root {} holds no `<capability>/conformance/*.yaml` files; is {} \
                     pointing at the right directory?",
                    root.display(),
                    SPEC_DIR_ENV
                ));
            }
            files.append(&mut found);
        }
        None => {
            if let Some(problem) = upstream.problem() {
                warnings.push(problem);
            }
        }
    }

    let project_root = workspace_root.join(PROJECT_FIXTURES_DIR);
    if project_root.is_dir() {
        let project = scan_root(
            &project_root,
            None,
            Origin::Project,
            capability_filter,
            &mut warnings,
        );
        let upstream_keys: BTreeSet<String> = files.iter().map(FixtureFile::key).collect();
        for file in &project {
            if upstream_keys.contains(&file.key()) {
                warnings.push(format!(
                    "project fixture {} has the same id `{}` as an upstream fixture; rename it \
                     so the two can be told apart",
                    file.path.display(),
                    file.key()
                ));
            }
        }
        files.extend(project);
    }

    Discovery {
        upstream,
        files,
        warnings,
    }
}

/// One fixture tree read by [`scan_tree`].
#[derive(Debug, Clone)]
pub struct FixtureTree {
    /// The directory holding the `<capability>/` directories: the root given, or its
    /// `spec/` directory for a whole upstream checkout.
    pub base: PathBuf,
    /// Its fixtures (all [`Origin::Upstream`]), sorted by capability, then file name.
    pub files: Vec<FixtureFile>,
    /// Unreadable directories, or a tree without fixtures.
    pub warnings: Vec<String>,
}

/// Scans one fixture tree laid out as upstream lays it,
/// `<root>/<capability>/conformance/*.yaml`, or a whole upstream checkout (the same
/// under `<root>/spec/`). Unlike [`discover`] it reads no environment and no project
/// fixtures: it is for comparing two trees (`cargo xtask spec-diff`).
pub fn scan_tree(root: &Path) -> FixtureTree {
    let mut warnings = Vec::new();
    let conformance = Some(Path::new("conformance"));
    let mut base = root.to_path_buf();
    let mut files = scan_root(root, conformance, Origin::Upstream, None, &mut warnings);
    let checkout = root.join("spec");
    if files.is_empty() && checkout.is_dir() {
        files = scan_root(
            &checkout,
            conformance,
            Origin::Upstream,
            None,
            &mut warnings,
        );
        base = checkout;
    }
    if files.is_empty() {
        warnings.push(format!(
            "{} holds no `<capability>/conformance/*.yaml` files (nor `spec/<capability>/...`)",
            root.display()
        ));
    }
    FixtureTree {
        base,
        files,
        warnings,
    }
}

/// Scans `<root>/<capability>/<sub>/*.yaml` (or `<root>/<capability>/*.yaml`
/// when `sub` is `None`), sorted by capability then file name.
fn scan_root(
    root: &Path,
    sub: Option<&Path>,
    origin: Origin,
    capability_filter: Option<&str>,
    warnings: &mut Vec<String>,
) -> Vec<FixtureFile> {
    let mut capabilities: Vec<(String, PathBuf)> = Vec::new();
    for entry in read_dir_sorted(root, warnings) {
        if !entry.is_dir() {
            continue;
        }
        let Some(name) = entry.file_name().and_then(OsStr::to_str) else {
            continue;
        };
        if name.starts_with('.') || capability_filter.is_some_and(|f| f != name) {
            continue;
        }
        let dir = match sub {
            Some(sub) => entry.join(sub),
            None => entry.clone(),
        };
        if dir.is_dir() {
            capabilities.push((name.to_owned(), dir));
        }
    }

    let mut files = Vec::new();
    for (capability, dir) in capabilities {
        for path in read_dir_sorted(&dir, warnings) {
            if !path.is_file() || !is_yaml(&path) {
                continue;
            }
            let Some(stem) = path.file_stem().and_then(OsStr::to_str) else {
                warnings.push(format!(
                    "skipping fixture with a non UTF-8 name: {}",
                    path.display()
                ));
                continue;
            };
            files.push(FixtureFile {
                capability: capability.clone(),
                fixture: stem.to_owned(),
                path: path.clone(),
                origin,
            });
        }
    }
    files
}

fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(OsStr::to_str),
        Some("yaml" | "yml")
    )
}

/// Directory entries sorted by file name; an unreadable directory becomes a warning.
fn read_dir_sorted(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut paths = Vec::new();
            for entry in entries {
                match entry {
                    Ok(entry) => paths.push(entry.path()),
                    Err(err) => {
                        warnings.push(format!("cannot read an entry of {}: {err}", dir.display()));
                    }
                }
            }
            paths.sort();
            paths
        }
        Err(err) => {
            warnings.push(format!("cannot read directory {}: {err}", dir.display()));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary directory removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(label: &str) -> std::io::Result<Self> {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("oa-discovery-{label}-{}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path)?;
            Ok(TempDir(path))
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn touch(path: &Path) -> std::io::Result<()> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, "description: test\n")
    }

    /// `<tmp>/ws` (workspace) and `<tmp>/shared/openarmature-spec` (default upstream).
    fn layout(tmp: &TempDir) -> (PathBuf, PathBuf) {
        (
            tmp.0.join("ws"),
            tmp.0.join("shared").join("openarmature-spec"),
        )
    }

    fn ids(found: &Discovery) -> Vec<String> {
        found
            .files
            .iter()
            .map(|f| format!("{}:{}", f.origin, f.key()))
            .collect()
    }

    #[test]
    fn finds_default_root_and_sorts() -> std::io::Result<()> {
        let tmp = TempDir::new("default")?;
        let (ws, up) = layout(&tmp);
        touch(&up.join("pipeline-utilities/conformance/001-a.yaml"))?;
        touch(&up.join("graph-engine/conformance/010-b.yaml"))?;
        touch(&up.join("graph-engine/conformance/002-a.yaml"))?;
        touch(&up.join("graph-engine/conformance/notes.md"))?;
        touch(&up.join("graph-engine/spec.yaml"))?; // not under conformance/
        touch(&ws.join("spec/conformance/graph-engine/x001-own.yaml"))?;

        let root = resolve_upstream_root(&ws, None);
        assert_eq!(root, UpstreamRoot::Default(up.clone()));
        let found = discover_with(root, &ws, None);
        assert_eq!(
            ids(&found),
            [
                "upstream:graph-engine/002-a",
                "upstream:graph-engine/010-b",
                "upstream:pipeline-utilities/001-a",
                "project:graph-engine/x001-own",
            ]
        );
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        assert_eq!(
            found.files[0].path,
            up.join("graph-engine/conformance/002-a.yaml")
        );
        Ok(())
    }

    #[test]
    fn env_wins_over_default_and_empty_env_is_unset() -> std::io::Result<()> {
        let tmp = TempDir::new("env")?;
        let (ws, up) = layout(&tmp);
        fs::create_dir_all(&up)?;
        let other = tmp.0.join("elsewhere");
        touch(&other.join("llm-provider/conformance/001-x.yaml"))?;

        let root = resolve_upstream_root(&ws, Some(other.as_os_str()));
        assert_eq!(root, UpstreamRoot::FromEnv(other.clone()));
        let found = discover_with(root, &ws, None);
        assert_eq!(ids(&found), ["upstream:llm-provider/001-x"]);

        let root = resolve_upstream_root(&ws, Some(OsStr::new("")));
        assert_eq!(root, UpstreamRoot::Default(up));
        Ok(())
    }

    #[test]
    fn env_pointing_nowhere_is_reported() -> std::io::Result<()> {
        let tmp = TempDir::new("env-missing")?;
        let (ws, _) = layout(&tmp);
        touch(&ws.join("spec/conformance/graph-engine/x001-own.yaml"))?;
        let missing = tmp.0.join("no-such-dir");

        let root = resolve_upstream_root(&ws, Some(missing.as_os_str()));
        assert_eq!(root, UpstreamRoot::EnvNotADirectory(missing.clone()));
        assert!(root.is_misconfigured());
        let found = discover_with(root, &ws, None);
        assert_eq!(ids(&found), ["project:graph-engine/x001-own"]);
        assert_eq!(found.warnings.len(), 1);
        let warning = &found.warnings[0];
        assert!(warning.contains(SPEC_DIR_ENV), "{warning}");
        assert!(
            warning.contains(&missing.display().to_string()),
            "{warning}"
        );
        assert!(warning.contains("does not exist"), "{warning}");
        Ok(())
    }

    #[test]
    fn missing_root_explains_how_to_fix() -> std::io::Result<()> {
        let tmp = TempDir::new("none")?;
        let (ws, up) = layout(&tmp);
        fs::create_dir_all(&ws)?;

        let root = resolve_upstream_root(&ws, None);
        assert_eq!(root, UpstreamRoot::NotFound(up));
        assert!(!root.is_misconfigured());
        let found = discover_with(root, &ws, None);
        assert!(found.files.is_empty());
        assert!(found.upstream_path().is_none());
        assert_eq!(found.warnings.len(), 1);
        let warning = &found.warnings[0];
        assert!(warning.contains(SPEC_DIR_ENV), "{warning}");
        assert!(warning.contains("shared/openarmature-spec"), "{warning}");
        assert!(
            warning.contains("<capability>/conformance/*.yaml"),
            "{warning}"
        );
        Ok(())
    }

    #[test]
    fn capability_filter_applies_to_both_sources() -> std::io::Result<()> {
        let tmp = TempDir::new("filter")?;
        let (ws, up) = layout(&tmp);
        touch(&up.join("graph-engine/conformance/001-a.yaml"))?;
        touch(&up.join("observability/conformance/001-b.yml"))?;
        touch(&ws.join("spec/conformance/observability/x001-c.yaml"))?;
        touch(&ws.join("spec/conformance/graph-engine/x001-d.yaml"))?;

        let found = discover_with(resolve_upstream_root(&ws, None), &ws, Some("observability"));
        assert_eq!(
            ids(&found),
            [
                "upstream:observability/001-b",
                "project:observability/x001-c"
            ]
        );
        assert_eq!(
            found.capabilities().into_iter().collect::<Vec<_>>(),
            ["observability"]
        );
        Ok(())
    }

    #[test]
    fn empty_root_and_shadowing_are_warned() -> std::io::Result<()> {
        let tmp = TempDir::new("warn")?;
        let (ws, up) = layout(&tmp);
        fs::create_dir_all(up.join("graph-engine"))?;
        let found = discover_with(resolve_upstream_root(&ws, None), &ws, None);
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(found.warnings[0].contains("holds no"));

        touch(&up.join("graph-engine/conformance/001-a.yaml"))?;
        touch(&ws.join("spec/conformance/graph-engine/001-a.yaml"))?;
        let found = discover_with(resolve_upstream_root(&ws, None), &ws, None);
        assert_eq!(found.files.len(), 2);
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(found.warnings[0].contains("same id `graph-engine/001-a`"));
        Ok(())
    }

    #[test]
    fn scan_tree_reads_both_layouts() -> std::io::Result<()> {
        let tmp = TempDir::new("tree")?;
        let flat = tmp.0.join("flat");
        touch(&flat.join("sessions/conformance/001-a.yaml"))?;
        touch(&flat.join("sessions/conformance/001-a.md"))?;
        let tree = scan_tree(&flat);
        assert_eq!(tree.base, flat);
        assert_eq!(tree.files.len(), 1);
        assert_eq!(tree.files[0].key(), "sessions/001-a");
        assert!(tree.warnings.is_empty(), "{:?}", tree.warnings);

        let checkout = tmp.0.join("checkout");
        touch(&checkout.join("spec/graph-engine/conformance/002-b.yaml"))?;
        let tree = scan_tree(&checkout);
        assert_eq!(tree.base, checkout.join("spec"));
        assert_eq!(tree.files[0].key(), "graph-engine/002-b");

        let empty = scan_tree(&tmp.0.join("nothing-here"));
        assert!(empty.files.is_empty());
        assert!(empty.warnings.iter().any(|w| w.contains("holds no")));
        Ok(())
    }

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        let root = workspace_root();
        assert!(root.join("Cargo.toml").is_file(), "{}", root.display());
        assert!(root.join("crates/conformance-adapter").is_dir());
    }
}
