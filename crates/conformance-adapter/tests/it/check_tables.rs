//! The adapter's name → check tables against the fixtures (conformance-adapter §5,
//! §8.2): every invariant name a fixture writes under a table's key has a check,
//! and every check in a table is used by at least one fixture (a dead check is
//! removed, not kept "just in case").
//!
//! Walks every fixture the suite runs: the upstream ones (`$OPENARMATURE_SPEC_DIR`
//! or the pinned checkout) and the project's own `spec/` fixtures. Without the
//! upstream fixtures only the first half is judged (the project's fixtures use too
//! few names to judge the second).

use std::collections::{BTreeMap, BTreeSet};

use openarmature_conformance::discovery::{discover, workspace_root};
use openarmature_conformance::table::registry;
use serde_norway::Value;

/// Table entries no fixture uses yet, each with the reason it stays.
const UNUSED_ALLOWED: &[(&str, &str)] = &[(
    "inner_branch_names_seen",
    "graph-engine 033 writes it under node_accumulator_snapshot_invariants.<node>.<observer>, \
     below the node and observer keys this walk reads as names",
)];

/// The keys of every mapping found under `key`, at any depth of `v`.
fn names_under(v: &Value, key: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Mapping(m) => {
            for (k, child) in m {
                if k.as_str() == Some(key) {
                    if let Value::Mapping(names) = child {
                        out.extend(names.keys().filter_map(|n| n.as_str().map(str::to_owned)));
                    }
                }
                names_under(child, key, out);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|i| names_under(i, key, out)),
        Value::Tagged(t) => names_under(&t.value, key, out),
        _ => {}
    }
}

#[test]
fn every_fixture_invariant_has_a_check_and_every_check_is_used() {
    let found = discover(&workspace_root(), None);
    let upstream = found.upstream_path().is_some();
    // (capability, key) → the names fixtures use there, and those the tables know.
    let mut used: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
    let mut known: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    let mut complete: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    for t in registry() {
        for key in t.keys {
            known
                .entry((t.capability, key))
                .or_default()
                .extend((t.names)());
            used.entry((t.capability, key)).or_default();
            *complete.entry((t.capability, key)).or_insert(true) &= t.complete;
        }
    }
    for file in &found.files {
        let text = std::fs::read_to_string(&file.path).unwrap();
        let doc: Value = serde_norway::from_str(&text).unwrap();
        for ((capability, key), names) in &mut used {
            if file.capability == *capability {
                names_under(&doc, key, names);
            }
        }
    }
    let mut problems = Vec::new();
    if upstream {
        // A key that matches nothing would make the first half vacuous.
        for (place, names) in &used {
            if names.is_empty() {
                problems.push(format!("{place:?}: no fixture lists a name there"));
            }
        }
    }
    for (place, names) in used.iter().filter(|(p, _)| complete[*p]) {
        for name in names {
            if !known[place].contains(name.as_str()) {
                problems.push(format!(
                    "{place:?}: `{name}` is in a fixture but in no table"
                ));
            }
        }
    }
    if upstream {
        for t in registry() {
            for name in (t.names)() {
                let allowed = UNUSED_ALLOWED.iter().any(|(n, _)| *n == name);
                // A table registered for several capabilities is used when any of
                // them uses the name.
                let in_use = registry()
                    .iter()
                    .filter(|u| u.table == t.table)
                    .flat_map(|u| u.keys.iter().map(|k| (u.capability, *k)))
                    .any(|place| used[&place].contains(name));
                if !allowed && !in_use {
                    problems.push(format!("{}: `{name}` is used by no fixture", t.table));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
