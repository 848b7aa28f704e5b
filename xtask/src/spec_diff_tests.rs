//! Tests of `spec-diff` on two small fixture trees made here (graph-engine fixtures the
//! current adapter runs for real, plus a capability `conformance.toml` does not know).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> std::io::Result<TempDir> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("oa-spec-diff-{label}-{}-{n}", std::process::id()));
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

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, text)
}

/// A one-node graph-engine fixture expecting `x` to end at `want` (the node sets 1).
fn ge_fixture(want: i64) -> String {
    format!(
        "state:\n  fields:\n    x: {{type: int, default: 0}}\nentry: a\nnodes:\n  a:\n    \
         update: {{x: 1}}\nedges:\n  - {{from: a, to: END}}\ninitial_state: {{}}\nexpected:\n  \
         final_state: {{x: {want}}}\n"
    )
}

const CONFIG: &str = r#"
[spec]
release = "0.1.0"
[capabilities.graph-engine]
crate = "openarmature-graph"
[capabilities.sessions]
crate = "openarmature-graph"
[capabilities.observability]
crate = "openarmature-observability"
[[deferred]]
fixture = "graph-engine/006-deferred"
reason = "known failure"
"#;

/// old → new: 001 unchanged, 002 changed to fail, 003 removed, 004 comment only,
/// 005 added (passes), 006 changed and deferred, a companion `.md` edit, a new
/// capability, and a `spec.md` edit in a checkout-layout tree.
fn trees(tmp: &TempDir) -> std::io::Result<(PathBuf, PathBuf)> {
    let (old, new) = (tmp.0.join("old"), tmp.0.join("new/spec"));
    let ge = |root: &Path, name: &str| root.join("graph-engine/conformance").join(name);
    for root in [&old, &new] {
        write(&ge(root, "001-same.yaml"), &ge_fixture(1))?;
        write(&ge(root, "007-prose.yaml"), &ge_fixture(1))?;
    }
    write(&ge(&old, "007-prose.md"), "# old words\n")?;
    write(&ge(&new, "007-prose.md"), "# new words\n")?;
    write(&ge(&old, "002-changed.yaml"), &ge_fixture(1))?;
    write(&ge(&new, "002-changed.yaml"), &ge_fixture(2))?;
    write(&ge(&old, "003-removed.yaml"), &ge_fixture(1))?;
    write(&ge(&old, "004-cosmetic.yaml"), &ge_fixture(1))?;
    write(
        &ge(&new, "004-cosmetic.yaml"),
        &format!("# a new comment\n{}", ge_fixture(1)),
    )?;
    write(&ge(&new, "005-added.yaml"), &ge_fixture(1))?;
    write(&ge(&old, "006-deferred.yaml"), &ge_fixture(1))?;
    write(&ge(&new, "006-deferred.yaml"), &ge_fixture(3))?;
    write(
        &new.join("brand-new/conformance/001-x.yaml"),
        &ge_fixture(1),
    )?;
    write(&old.join("graph-engine/spec.md"), "v1\n")?;
    write(&new.join("graph-engine/spec.md"), "v2\n")?;
    Ok((old, tmp.0.join("new")))
}

fn fixture<'d>(d: &'d Diff, capability: &str, name: &str) -> Option<&'d FixtureDiff> {
    d.capabilities
        .iter()
        .find(|c| c.capability == capability)?
        .fixtures
        .iter()
        .find(|f| f.fixture == name)
}

#[test]
fn diff_reports_changes_crates_and_failures_today() -> Result<(), String> {
    let tmp = TempDir::new("two-trees").map_err(|e| e.to_string())?;
    let (old, new) = trees(&tmp).map_err(|e| e.to_string())?;
    let deferrals =
        Deferrals::parse(CONFIG, "conformance.toml".as_ref()).map_err(|e| e.to_string())?;
    let d = diff(&old, &new, &deferrals, 2);

    let caps: Vec<&str> = d
        .capabilities
        .iter()
        .map(|c| c.capability.as_str())
        .collect();
    assert_eq!(caps, ["brand-new", "graph-engine"]);
    let ge = &d.capabilities[1];
    assert_eq!(ge.crate_name.as_deref(), Some("openarmature-graph"));
    assert!(ge.spec_changed);
    assert_eq!(d.capabilities[0].crate_name, None);
    assert_eq!(d.crates_affected(), ["openarmature-graph"]);

    let names: Vec<&str> = ge.fixtures.iter().map(|f| f.fixture.as_str()).collect();
    assert_eq!(
        names,
        [
            "002-changed",
            "003-removed",
            "004-cosmetic",
            "005-added",
            "006-deferred",
            "007-prose"
        ]
    );
    let get = |name| fixture(&d, "graph-engine", name).ok_or(format!("no {name}"));

    let changed = get("002-changed")?;
    assert_eq!(changed.change, Change::Changed { cosmetic: false });
    let today = changed.today.as_ref().ok_or("002 was not run")?;
    assert_eq!(today.failing, ["graph-engine/002-changed"]);
    assert_eq!(today.passed, 0);

    assert_eq!(get("003-removed")?.change, Change::Removed);
    assert_eq!(get("003-removed")?.today, None);

    let cosmetic = get("004-cosmetic")?;
    assert_eq!(cosmetic.change, Change::Changed { cosmetic: true });
    assert_eq!(cosmetic.today.as_ref().map(|t| t.passed), Some(1));

    let added = get("005-added")?;
    assert_eq!(added.change, Change::Added);
    let today = added.today.as_ref().ok_or("005 was not run")?;
    assert_eq!((today.passed, today.failing.len()), (1, 0));

    let deferred = get("006-deferred")?
        .today
        .as_ref()
        .ok_or("006 was not run")?;
    assert_eq!((deferred.deferred, deferred.failing.len()), (1, 0));

    assert_eq!(get("007-prose")?.change, Change::ProseOnly);
    assert!(fixture(&d, "graph-engine", "001-same").is_none());

    // The unknown capability has no runner: its added fixture fails today.
    let brand = fixture(&d, "brand-new", "001-x").ok_or("no brand-new/001-x")?;
    assert_eq!(brand.change, Change::Added);
    assert_eq!(
        brand.today.as_ref().map(|t| t.failing.clone()),
        Some(vec!["brand-new/001-x".to_owned()])
    );

    let report = render(&d, &old, &new);
    for needle in [
        "graph-engine (crate openarmature-graph): 1 added, 1 removed, 4 changed; spec.md changed",
        "brand-new (not declared in conformance.toml): 1 added, 0 removed, 0 changed",
        "  ~ 002-changed  (FAILS today: 1 of 1 case(s))",
        "      failing: graph-engine/002-changed",
        "  ~ 004-cosmetic  (comments/formatting only; passes today (1 case(s)))",
        "  - 003-removed\n",
        "  ~ 007-prose  (companion .md only)",
        "crates affected: openarmature-graph\n",
        "added or changed fixture cases failing today: 2\n",
    ] {
        assert!(report.contains(needle), "missing `{needle}` in:\n{report}");
    }
    Ok(())
}

#[test]
fn identical_trees_have_no_changes() -> Result<(), String> {
    let tmp = TempDir::new("same").map_err(|e| e.to_string())?;
    for side in ["a", "b"] {
        write(
            &tmp.0.join(side).join("graph-engine/conformance/001-x.yaml"),
            &ge_fixture(1),
        )
        .map_err(|e| e.to_string())?;
    }
    let deferrals =
        Deferrals::parse(CONFIG, "conformance.toml".as_ref()).map_err(|e| e.to_string())?;
    let d = diff(&tmp.0.join("a"), &tmp.0.join("b"), &deferrals, 1);
    assert!(d.capabilities.is_empty(), "{d:?}");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let report = render(&d, &tmp.0.join("a"), &tmp.0.join("b"));
    assert!(report.contains("no fixture changed"), "{report}");
    assert!(report.contains("crates affected: none"), "{report}");
    Ok(())
}

#[test]
fn parses_options() {
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let o = Options::parse(&args(&["old", "new", "-j", "3"]));
    assert!(matches!(o, Ok(Options { ref old, jobs: Some(3), .. }) if old == Path::new("old")));
    assert!(Options::parse(&args(&["only-one"])).is_err());
    assert!(Options::parse(&args(&["a", "b", "c"])).is_err());
    assert!(Options::parse(&args(&["a", "b", "--what"])).is_err());
}
