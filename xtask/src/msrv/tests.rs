//! `check` over hand-made metadata.

use super::*;
use serde_json::json;

/// One member `oa` depending on every dep (`dev` ones as dev-dependencies); `a`
/// depends on `a2` when both are given.
fn metadata(member_version: Option<&str>, deps: &[(&str, Option<&str>)]) -> Value {
    metadata_with(member_version, deps, &[])
}

fn id(name: &str) -> String {
    format!("registry+https://x#{name}@1.0.0")
}

fn metadata_with(
    member_version: Option<&str>,
    deps: &[(&str, Option<&str>)],
    dev: &[&str],
) -> Value {
    let member = "path+file:///ws#oa@0.1.0";
    let mut packages = vec![json!({
        "id": member,
        "name": "oa",
        "version": "0.1.0",
        "rust_version": member_version,
    })];
    let mut edges = Vec::new();
    let mut nodes = Vec::new();
    for (name, rust_version) in deps {
        packages.push(json!({
            "id": id(name),
            "name": name,
            "version": "1.0.0",
            "rust_version": rust_version,
        }));
        let kind = if dev.contains(name) {
            json!("dev")
        } else {
            Value::Null
        };
        if !name.ends_with('2') {
            edges.push(json!({"pkg": id(name), "dep_kinds": [{"kind": kind}]}));
        }
        let inner: Vec<Value> = deps
            .iter()
            .filter(|(other, _)| *other == format!("{name}2"))
            .map(|(other, _)| json!({"pkg": id(other), "dep_kinds": [{"kind": null}]}))
            .collect();
        nodes.push(json!({"id": id(name), "deps": inner}));
    }
    nodes.push(json!({"id": member, "deps": edges}));
    json!({"workspace_members": [member], "packages": packages, "resolve": {"nodes": nodes}})
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
    let m = &report.members[0];
    assert_eq!(m.declared, v("1.85"));
    assert_eq!(m.highest, Some(v("1.89")));
    let names: Vec<&str> = m.above.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a 1.0.0", "d 1.0.0"]);
    assert_eq!(report.failing().count(), 1);
    Ok(())
}

#[test]
fn a_true_declaration_passes() -> Result<(), String> {
    let m = metadata(Some("1.89"), &[("a", Some("1.89")), ("b", Some("1.70"))]);
    let report = check(&m)?;
    assert!(report.members[0].above.is_empty());
    assert_eq!(report.members[0].highest, Some(v("1.89")));
    assert_eq!(report.failing().count(), 0);
    Ok(())
}

#[test]
fn transitive_and_own_dev_dependencies_count() -> Result<(), String> {
    // oa -> a -> a2 (1.92): counted through a.
    let m = metadata(Some("1.89"), &[("a", Some("1.80")), ("a2", Some("1.92"))]);
    let above = &check(&m)?.members[0].above;
    assert_eq!(above, &[("a2 1.0.0".to_owned(), v("1.92"))]);
    // A dev-dependency of the member counts (its tests must build).
    let m = metadata_with(Some("1.89"), &[("t", Some("1.90"))], &["t"]);
    assert_eq!(check(&m)?.members[0].above.len(), 1);
    Ok(())
}

#[test]
fn members_are_judged_each_by_its_own_declaration() -> Result<(), String> {
    let mut m = metadata(Some("1.89"), &[("x", Some("1.89"))]);
    // A second member declaring 1.90 and building a 1.90 package holds.
    let second = "path+file:///ws#oa-restate@0.1.0";
    m["workspace_members"]
        .as_array_mut()
        .ok_or("members")?
        .push(json!(second));
    m["packages"].as_array_mut().ok_or("packages")?.extend([
        json!({"id": second, "name": "oa-restate", "version": "0.1.0", "rust_version": "1.90"}),
        json!({"id": id("sdk"), "name": "sdk", "version": "1.0.0", "rust_version": "1.90"}),
    ]);
    m["resolve"]["nodes"]
        .as_array_mut()
        .ok_or("nodes")?
        .extend([
            json!({"id": second, "deps": [{"pkg": id("sdk"), "dep_kinds": [{"kind": null}]}]}),
            json!({"id": id("sdk"), "deps": []}),
        ]);
    let report = check(&m)?;
    assert_eq!(report.members.len(), 2);
    assert_eq!(report.failing().count(), 0, "{report:?}");
    assert_eq!(report.members[1].highest, Some(v("1.90")));
    Ok(())
}

#[test]
fn a_member_without_rust_version_is_an_error() {
    let err = check(&metadata(None, &[])).err();
    assert!(err.is_some_and(|e| e.contains("declares no rust-version")));
    let err = check(&json!({"packages": []})).err();
    assert!(err.is_some_and(|e| e.contains("workspace_members")));
    let err = check(&json!({"workspace_members": [], "packages": []})).err();
    assert!(err.is_some_and(|e| e.contains("resolve")));
}
