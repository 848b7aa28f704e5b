//! A failing case reports why as a typed [`Failure`]: each [`FailureKind`] is
//! produced by the kind of problem it names (a fixture held in memory, run through
//! the public runner API both front ends use).

use std::path::Path;

use openarmature_conformance::{runner, CaseOutcome, Failure, FailureKind};

/// A one-node linear graph; each test adds or replaces a part of it.
const GRAPH: &str = r#"
state:
  fields:
    n: {type: int, default: 0}
entry: a
nodes:
  a:
    update: {n: 1}
initial_state: {}
"#;

const EDGES: &str = "edges:\n  - {from: a, to: END}\n";

/// Lists `yaml` as a graph-engine fixture (one case) and runs it.
fn run(yaml: &str) -> CaseOutcome {
    let path = Path::new("900-failure-kind.yaml");
    let ids = runner::list_cases_in("graph-engine", path, yaml).expect("the fixture lists");
    assert_eq!(ids.len(), 1, "{ids:?}");
    runner::run_case_in(path, yaml, &ids[0])
}

/// The failure of a case that must fail.
fn failure(yaml: &str) -> Failure {
    match run(yaml) {
        CaseOutcome::Failed(f) => f,
        CaseOutcome::Passed => panic!("the case passed but was expected to fail:\n{yaml}"),
    }
}

#[test]
fn the_base_fixture_passes() {
    let yaml = format!("{GRAPH}{EDGES}expected:\n  final_state: {{n: 1}}\n");
    assert_eq!(run(&yaml), CaseOutcome::Passed);
}

#[test]
fn a_wrong_final_state_is_a_mismatch() {
    let f = failure(&format!(
        "{GRAPH}{EDGES}expected:\n  final_state: {{n: 2}}\n"
    ));
    assert_eq!(f.kind(), FailureKind::Mismatch, "{f}");
    assert!(f.to_string().starts_with("mismatch: "), "{f}");
}

#[test]
fn an_unknown_invariant_name_is_unsupported() {
    let yaml = format!(
        "{GRAPH}{EDGES}expected:\n  final_state: {{n: 1}}\n  observer_event_invariants:\n    \
         no_such_invariant: true\n"
    );
    let f = failure(&yaml);
    assert_eq!(f.kind(), FailureKind::Unsupported, "{f}");
    assert!(f.message().contains("no_such_invariant"), "{f}");
    assert!(f.to_string().starts_with("unsupported: "), "{f}");
}

#[test]
fn an_unknown_directive_is_unsupported() {
    let f = failure(&format!("{GRAPH}{EDGES}frobnicate: true\n"));
    assert_eq!(f.kind(), FailureKind::Unsupported, "{f}");
    assert!(f.message().contains("frobnicate"), "{f}");
}

#[test]
fn a_directive_of_the_wrong_shape_is_a_fixture_failure() {
    let f = failure(&format!("{GRAPH}edges: {{from: a}}\n"));
    assert_eq!(f.kind(), FailureKind::Fixture, "{f}");
    assert!(f.to_string().starts_with("fixture: "), "{f}");
}

#[test]
fn a_graph_the_engine_refuses_to_compile_is_a_setup_failure() {
    let f = failure(&format!("{GRAPH}edges:\n  - {{from: a, to: ghost}}\n"));
    assert_eq!(f.kind(), FailureKind::Setup, "{f}");
    assert!(f.message().contains("compile"), "{f}");
}

#[test]
fn an_unknown_capability_is_unsupported() {
    let path = Path::new("900-failure-kind.yaml");
    let yaml = format!("{GRAPH}{EDGES}");
    let ids = runner::list_cases_in("no-such-capability", path, &yaml).expect("lists");
    match runner::run_case_in(path, &yaml, &ids[0]) {
        CaseOutcome::Failed(f) => assert_eq!(f.kind(), FailureKind::Unsupported, "{f}"),
        CaseOutcome::Passed => panic!("a capability without a runner passed"),
    }
}
