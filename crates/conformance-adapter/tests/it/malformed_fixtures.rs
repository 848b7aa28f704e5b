//! The adapter's handling of malformed fixtures (conformance-adapter §4.4, §8.2, §9).
//!
//! Each test writes a fixture into its own temporary directory and runs it through
//! the public runner API ([`runner::list_cases`] then [`runner::run_case`]), the
//! same path both front ends take. A broken fixture MUST surface as the §9
//! category that names the file and the offending directive, never as a pass,
//! a silent default, or a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use openarmature_conformance::{runner, AdapterError, CaseId, CaseOutcome};

const CAPABILITY: &str = "graph-engine";

/// A fixture file in a fresh temporary directory, removed on drop.
struct TempFixture {
    dir: PathBuf,
    path: PathBuf,
}

impl TempFixture {
    fn new(stem: &str, yaml: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "openarmature-malformed-{}-{n}-{stem}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        let path = dir.join(format!("{stem}.yaml"));
        std::fs::write(&path, yaml).expect("write fixture");
        TempFixture { dir, path }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// The file name, as error messages should name it.
    fn file_name(&self) -> String {
        self.path
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned()
    }

    fn list(&self) -> Result<Vec<CaseId>, AdapterError> {
        runner::list_cases(CAPABILITY, &self.path)
    }

    /// Lists the file (expecting exactly one case) and runs it.
    fn run_single(&self) -> CaseOutcome {
        let ids = self
            .list()
            .unwrap_or_else(|e| panic!("list_cases failed: {e}"));
        assert_eq!(ids.len(), 1, "expected a single case, got {ids:?}");
        runner::run_case(&self.path, &ids[0])
    }
}

impl Drop for TempFixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The failure message of an outcome that must have failed.
fn failure(outcome: CaseOutcome) -> String {
    match outcome {
        CaseOutcome::Failed(message) => message.to_string(),
        CaseOutcome::Passed => panic!("the case passed but was expected to fail"),
    }
}

/// Asserts `message` contains every one of `needles`.
fn assert_mentions(message: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            message.contains(needle),
            "message does not mention `{needle}`:\n{message}"
        );
    }
}

/// A small valid single-case fixture; `{EXTRA}` and `{EXPECTED_EXTRA}` are
/// substitution points for the malformed variants.
const VALID: &str = r#"
state:
  fields:
    v: {type: int, default: 0}
    trace: {type: list<string>, reducer: append, default: []}
entry: a
nodes:
  a:
    update: {v: 1, trace: ["a"]}
  b:
    update: {v: 2, trace: ["b"]}
edges:
  - {from: a, to: b}
  - {from: b, to: END}
initial_state: {}
expected:
  final_state: {v: 2, trace: ["a", "b"]}
  execution_order: [a, b]
"#;

fn valid_with(from: &str, to: &str) -> String {
    assert!(VALID.contains(from), "`{from}` not in the base fixture");
    VALID.replacen(from, to, 1)
}

/// Asserts a single-case fixture fails with `category`, naming the file and
/// every one of `needles`.
fn assert_fails(stem: &str, yaml: &str, category: &str, needles: &[&str]) -> String {
    let fixture = TempFixture::new(stem, yaml);
    let message = failure(fixture.run_single());
    let file = fixture.file_name();
    let mut all = vec![category, file.as_str()];
    all.extend_from_slice(needles);
    assert_mentions(&message, &all);
    message
}

// ---------------------------------------------------------------------------
// Positive controls
// ---------------------------------------------------------------------------

#[test]
fn valid_fixture_passes() {
    let fixture = TempFixture::new("valid", VALID);
    let ids = fixture.list().expect("list_cases");
    assert_eq!(
        ids,
        vec![CaseId {
            capability: CAPABILITY.into(),
            fixture: "valid".into(),
            case: None,
        }]
    );
    assert_eq!(
        runner::run_case(fixture.path(), &ids[0]),
        CaseOutcome::Passed
    );
}

#[test]
fn wrong_final_state_fails_naming_final_state() {
    let yaml = valid_with(
        "final_state: {v: 2, trace: [\"a\", \"b\"]}",
        "final_state: {v: 3, trace: [\"a\", \"b\"]}",
    );
    let fixture = TempFixture::new("wrong-final", &yaml);
    let message = failure(fixture.run_single());
    assert_mentions(&message, &["final_state", "v"]);
}

#[test]
fn wrong_execution_order_fails() {
    let yaml = valid_with("execution_order: [a, b]", "execution_order: [b, a]");
    let fixture = TempFixture::new("wrong-order", &yaml);
    let message = failure(fixture.run_single());
    assert_mentions(&message, &["execution_order"]);
}

// ---------------------------------------------------------------------------
// (a) invalid YAML syntax
// ---------------------------------------------------------------------------

#[test]
fn invalid_yaml_is_schema_invalid_naming_the_file() {
    let fixture = TempFixture::new("broken-syntax", "state: {fields: [unclosed\nentry: a\n");
    let err = fixture.list().expect_err("broken YAML must not list");
    assert!(
        matches!(err, AdapterError::SchemaInvalid { .. }),
        "expected SchemaInvalid, got {err:?}"
    );
    assert_eq!(err.category(), "fixture_schema_invalid");
    let shown = err.to_string();
    assert_mentions(&shown, &["fixture_schema_invalid", &fixture.file_name()]);

    // run_case on the same file reports the same error instead of panicking.
    let id = CaseId {
        capability: CAPABILITY.into(),
        fixture: "broken-syntax".into(),
        case: None,
    };
    let message = failure(runner::run_case(fixture.path(), &id));
    assert_mentions(&message, &["fixture_schema_invalid", &fixture.file_name()]);
}

#[test]
fn non_mapping_document_is_schema_invalid() {
    for (stem, text) in [
        ("top-level-list", "- a\n- b\n"),
        ("top-level-scalar", "42\n"),
        ("empty-file", ""),
    ] {
        let fixture = TempFixture::new(stem, text);
        let err = fixture.list().expect_err(stem);
        assert_eq!(err.category(), "fixture_schema_invalid", "{stem}: {err}");
        assert_mentions(&err.to_string(), &[&fixture.file_name()]);
    }
}

#[test]
fn missing_file_is_an_io_error() {
    let path = std::env::temp_dir().join(format!(
        "openarmature-malformed-{}-does-not-exist.yaml",
        std::process::id()
    ));
    let err = runner::list_cases(CAPABILITY, &path).expect_err("missing file");
    assert_eq!(err.category(), "io");
    assert_mentions(&err.to_string(), &["does-not-exist.yaml"]);
}

// ---------------------------------------------------------------------------
// (b) unknown directives
// ---------------------------------------------------------------------------

const UNKNOWN: &str = "fixture_directive_unknown";

#[test]
fn unknown_top_level_directive() {
    let yaml = format!("frobnicate: 1\n{VALID}");
    assert_fails("unknown-top", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_node_directive() {
    let yaml = valid_with("update: {v: 1, trace: [\"a\"]}", "frobnicate: 1");
    let message = assert_fails("unknown-node", &yaml, UNKNOWN, &["frobnicate"]);
    assert_mentions(&message, &["nodes.a.frobnicate"]);
}

#[test]
fn unknown_node_directive_after_a_known_one() {
    // Order-preserving parsing must still reject a later unknown sibling.
    let yaml = valid_with(
        "update: {v: 1, trace: [\"a\"]}",
        "update: {v: 1, trace: [\"a\"]}\n    frobnicate: 1",
    );
    assert_fails("unknown-node-2", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_expected_key() {
    let yaml = valid_with(
        "execution_order: [a, b]",
        "execution_order: [a, b]\n  frobnicate: 1",
    );
    assert_fails("unknown-expected", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_invariant_name() {
    let yaml = format!("{VALID}invariants:\n  frobnicate_holds: true\n");
    assert_fails("unknown-invariant", &yaml, UNKNOWN, &["frobnicate_holds"]);
}

#[test]
fn unknown_invariant_name_inside_expected() {
    let yaml = valid_with(
        "execution_order: [a, b]",
        "execution_order: [a, b]\n  invariants:\n    frobnicate_holds: true",
    );
    assert_fails("unknown-invariant-2", &yaml, UNKNOWN, &["frobnicate_holds"]);
}

#[test]
fn unknown_reducer_name() {
    let yaml = valid_with("reducer: append", "reducer: frobnicate");
    assert_fails("unknown-reducer", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_reducer_factory() {
    let yaml = valid_with("reducer: append", "reducer: {frobnicate: {max_len: 2}}");
    assert_fails("unknown-factory", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_field_key() {
    let yaml = valid_with(
        "v: {type: int, default: 0}",
        "v: {type: int, default: 0, frobnicate: 1}",
    );
    assert_fails("unknown-field-key", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_edge_key_and_callable() {
    let yaml = valid_with("{from: a, to: b}", "{from: a, to: b, frobnicate: 1}");
    assert_fails("unknown-edge-key", &yaml, UNKNOWN, &["frobnicate"]);

    let yaml = valid_with(
        "{from: a, to: b}",
        "{from: a, condition: {callable: frobnicate}}",
    );
    assert_fails("unknown-callable", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_observer_key_and_behavior() {
    let yaml = format!("{VALID}observers:\n  - {{name: o, frobnicate: 1}}\n");
    assert_fails("unknown-observer-key", &yaml, UNKNOWN, &["frobnicate"]);

    let yaml = format!("{VALID}observers:\n  - {{name: o, behavior: frobnicate}}\n");
    assert_fails("unknown-behavior", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_observer_event_key() {
    let yaml = valid_with(
        "execution_order: [a, b]",
        "execution_order: [a, b]\n  observer_events:\n    o:\n      - {step: 0, phase: started, frobnicate: 1}\n      - {step: 0, phase: completed}\n      - {step: 1, phase: started}\n      - {step: 1, phase: completed}",
    );
    let yaml = format!("{yaml}observers:\n  - {{name: o}}\n");
    assert_fails("unknown-event-key", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_expected_error_key() {
    let yaml = valid_with("update: {v: 2, trace: [\"b\"]}", "raises: boom");
    let yaml = valid_expected_error(&yaml, "{category: node_exception, frobnicate: 1}");
    assert_fails(
        "unknown-expected-error-key",
        &yaml,
        UNKNOWN,
        &["frobnicate"],
    );
}

/// Replaces the `expected:` block with `expected_error: <block>`.
fn valid_expected_error(yaml: &str, block: &str) -> String {
    let head = yaml.split("expected:\n").next().expect("expected block");
    format!("{head}expected_error: {block}\n")
}

#[test]
fn unknown_subgraph_directive() {
    let yaml = format!(
        "{VALID}subgraph:\n  name: inner\n  frobnicate: 1\n  state: {{fields: {{v: {{type: int}}}}}}\n  entry: x\n  nodes: {{x: {{update: {{v: 1}}}}}}\n  edges: [{{from: x, to: END}}]\n"
    )
    .replacen("  b:\n    update: {v: 2, trace: [\"b\"]}", "  b:\n    subgraph: inner", 1);
    assert_fails("unknown-subgraph-key", &yaml, UNKNOWN, &["frobnicate"]);
}

#[test]
fn unknown_root_directive_in_a_cases_fixture() {
    // §8.2: a `cases:` file's root keys are directives too; an unknown one must
    // not be silently skipped.
    let yaml = format!(
        "frobnicate: 1\ncases:\n  - name: only\n{}",
        indent(VALID, 4)
    );
    let fixture = TempFixture::new("unknown-root-in-cases", &yaml);
    let ids = fixture.list();
    let message = match ids {
        Err(e) => e.to_string(),
        Ok(ids) => {
            assert_eq!(ids.len(), 1);
            failure(runner::run_case(fixture.path(), &ids[0]))
        }
    };
    assert_mentions(&message, &[UNKNOWN, &fixture.file_name(), "frobnicate"]);
}

/// Indents every non-empty line of `text` by `n` spaces (to nest a fixture
/// under `cases:`).
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{pad}{l}\n"))
        .collect()
}

// ---------------------------------------------------------------------------
// (c) wrong types
// ---------------------------------------------------------------------------

const INVALID: &str = "fixture_schema_invalid";

#[test]
fn entry_must_be_a_string() {
    let yaml = valid_with("entry: a", "entry: [a]");
    assert_fails(
        "entry-list",
        &yaml,
        INVALID,
        &["entry", "expected a string"],
    );
}

#[test]
fn field_type_must_be_a_string() {
    let yaml = valid_with("v: {type: int, default: 0}", "v: {type: 3, default: 0}");
    assert_fails("type-number", &yaml, INVALID, &["state.fields.v.type"]);
}

#[test]
fn field_type_must_parse() {
    let yaml = valid_with(
        "v: {type: int, default: 0}",
        "v: {type: \"list<\", default: 0}",
    );
    assert_fails("type-unparseable", &yaml, INVALID, &["state.fields.v.type"]);
}

#[test]
fn initial_state_must_be_a_mapping() {
    let yaml = valid_with("initial_state: {}", "initial_state: 5");
    assert_fails("initial-state-scalar", &yaml, INVALID, &["initial_state"]);
}

#[test]
fn initial_state_scalar_never_passes() {
    // Whatever the category, a non-mapping initial_state must not pass.
    let yaml = valid_with("initial_state: {}", "initial_state: 5");
    let fixture = TempFixture::new("initial-state-scalar-2", &yaml);
    let message = failure(fixture.run_single());
    assert_mentions(&message, &["initial"]);
}

#[test]
fn state_fields_must_be_a_mapping() {
    let yaml = valid_with(
        "fields:\n    v: {type: int, default: 0}\n    trace: {type: list<string>, reducer: append, default: []}",
        "fields: [v, trace]",
    );
    assert_fails("fields-list", &yaml, INVALID, &["state.fields"]);
}

#[test]
fn missing_state_is_schema_invalid() {
    let yaml = valid_with(
        "state:\n  fields:\n    v: {type: int, default: 0}\n    trace: {type: list<string>, reducer: append, default: []}\n",
        "",
    );
    assert_fails("no-state", &yaml, INVALID, &["state"]);
}

#[test]
fn nodes_must_be_a_mapping() {
    let yaml = valid_with(
        "nodes:\n  a:\n    update: {v: 1, trace: [\"a\"]}\n  b:\n    update: {v: 2, trace: [\"b\"]}",
        "nodes: [a, b]",
    );
    assert_fails("nodes-list", &yaml, INVALID, &["nodes"]);
}

#[test]
fn edges_must_be_a_list() {
    let yaml = valid_with(
        "edges:\n  - {from: a, to: b}\n  - {from: b, to: END}",
        "edges: {a: b}",
    );
    assert_fails("edges-map", &yaml, INVALID, &["edges"]);
}

#[test]
fn edge_without_destination() {
    let yaml = valid_with("{from: a, to: b}", "{from: a}");
    assert_fails("edge-no-to", &yaml, INVALID, &["edges.0"]);
}

#[test]
fn edge_target_must_be_a_string() {
    let yaml = valid_with("{from: a, to: b}", "{from: a, to: 3}");
    assert_fails("edge-to-number", &yaml, INVALID, &["edges.0.to"]);
}

#[test]
fn update_must_be_a_mapping() {
    let yaml = valid_with("update: {v: 1, trace: [\"a\"]}", "update: [v, 1]");
    assert_fails("update-list", &yaml, INVALID, &["nodes.a.update"]);
}

#[test]
fn raises_must_be_a_string_or_a_message_mapping() {
    // `raises: {message, exception_kind}` is the PU 063 spelling; a list is malformed.
    let yaml = valid_with("update: {v: 1, trace: [\"a\"]}", "raises: [boom]");
    assert_fails("raises-list", &yaml, INVALID, &["nodes.a.raises"]);
    let yaml = valid_with(
        "update: {v: 1, trace: [\"a\"]}",
        "raises: {message: boom, colour: red}",
    );
    assert_fails(
        "raises-map-unknown",
        &yaml,
        "fixture_directive_unknown",
        &["colour"],
    );
}

#[test]
fn reducer_factory_shapes() {
    let yaml = valid_with("reducer: append", "reducer: {}");
    assert_fails(
        "reducer-empty-map",
        &yaml,
        INVALID,
        &["state.fields.trace.reducer"],
    );

    let yaml = valid_with("reducer: append", "reducer: 7");
    assert_fails(
        "reducer-number",
        &yaml,
        INVALID,
        &["state.fields.trace.reducer"],
    );

    let yaml = valid_with(
        "reducer: append",
        "reducer: {bounded_append: {max_len: two}}",
    );
    assert_fails("max-len-string", &yaml, INVALID, &["max_len"]);
}

#[test]
fn expected_shapes() {
    let yaml = valid_with(
        "final_state: {v: 2, trace: [\"a\", \"b\"]}\n  execution_order: [a, b]",
        "- final_state",
    );
    assert_fails("expected-list", &yaml, INVALID, &["expected"]);

    let yaml = valid_with(
        "execution_order: [a, b]",
        "execution_order: [a, b]\n  no_propagated_error: yes please",
    );
    assert_fails("flag-string", &yaml, INVALID, &["no_propagated_error"]);
}

#[test]
fn observer_shapes() {
    let yaml = format!("{VALID}observers:\n  - {{attach: graph}}\n");
    assert_fails("observer-no-name", &yaml, INVALID, &["observers.0", "name"]);

    let yaml = format!("{VALID}observers:\n  - {{name: o, phases: [frobnicated]}}\n");
    assert_fails(
        "observer-bad-phase",
        &yaml,
        INVALID,
        &["observers.0.phases.0"],
    );

    let yaml = format!("{VALID}observers:\n  - {{name: o, phases: []}}\n");
    assert_fails(
        "observer-empty-phases",
        &yaml,
        INVALID,
        &["observers.0.phases"],
    );

    let yaml = format!("{VALID}observers:\n  - {{name: o, sleep_ms_per_event: -5}}\n");
    assert_fails(
        "observer-negative-sleep",
        &yaml,
        INVALID,
        &["sleep_ms_per_event"],
    );

    let yaml = format!("{VALID}observers:\n  - {{name: o, attach: graph, target: nowhere}}\n");
    assert_fails("observer-unknown-target", &yaml, INVALID, &["nowhere"]);
}

#[test]
fn drain_timeout_shapes() {
    for (stem, value) in [
        ("drain-negative", "-1"),
        ("drain-nan", ".nan"),
        ("drain-inf", ".inf"),
        ("drain-string", "soon"),
    ] {
        let yaml = format!("{VALID}invoke:\n  drain: {{timeout_seconds: {value}}}\n");
        assert_fails(stem, &yaml, INVALID, &["timeout_seconds"]);
    }
}

#[test]
fn unknown_or_recursive_subgraph_reference() {
    let yaml = valid_with("update: {v: 2, trace: [\"b\"]}", "subgraph: nowhere");
    assert_fails("subgraph-unknown", &yaml, INVALID, &["nowhere"]);

    // A subgraph that uses itself must be rejected, not recursed into forever.
    let yaml = format!(
        "{VALID}subgraph:\n  name: loop\n  state: {{fields: {{v: {{type: int}}}}}}\n  entry: x\n  nodes: {{x: {{subgraph: loop}}}}\n  edges: [{{from: x, to: END}}]\n"
    )
    .replacen("update: {v: 2, trace: [\"b\"]}", "subgraph: loop", 1);
    assert_fails("subgraph-self", &yaml, INVALID, &["loop"]);
}

#[test]
fn tagged_values_are_schema_invalid() {
    let yaml = valid_with("initial_state: {}", "initial_state: !custom {v: 1}");
    assert_fails("tagged", &yaml, INVALID, &["initial_state", "tag"]);
}

#[test]
fn case_name_must_be_a_string() {
    let yaml = format!("cases:\n  - name: [x]\n{}", indent(VALID, 4));
    let fixture = TempFixture::new("case-name-list", &yaml);
    let err = fixture.list().expect_err("a list as case name");
    assert_eq!(err.category(), INVALID);
    assert_mentions(&err.to_string(), &["cases.0.name", &fixture.file_name()]);
}

#[test]
fn cases_must_be_a_list() {
    let fixture = TempFixture::new("cases-map", "cases: {a: 1}\n");
    let err = fixture.list().expect_err("cases as a mapping");
    assert_eq!(err.category(), INVALID);
    assert_mentions(&err.to_string(), &["cases", &fixture.file_name()]);
}

#[test]
fn an_empty_case_list_is_rejected_not_silently_passed() {
    let fixture = TempFixture::new("no-cases", "cases: []\n");
    let err = fixture.list().expect_err("a fixture with no case");
    assert_eq!(err.category(), INVALID);
    assert_mentions(
        &err.to_string(),
        &["cases", "no case", &fixture.file_name()],
    );
}

#[test]
fn duplicate_case_names_are_rejected() {
    let case = indent(VALID, 4);
    let yaml = format!("cases:\n  - name: same\n{case}  - name: same\n{case}");
    let fixture = TempFixture::new("duplicate-cases", &yaml);
    let err = fixture.list().expect_err("duplicate case names");
    assert_eq!(err.category(), INVALID);
    assert_mentions(&err.to_string(), &["duplicate", "same"]);
}

// ---------------------------------------------------------------------------
// (d) conformance_version
// ---------------------------------------------------------------------------

#[test]
fn newer_conformance_version_is_unsupported() {
    let yaml = format!("conformance_version: \"99.0.0\"\n{VALID}");
    let fixture = TempFixture::new("too-new", &yaml);
    let err = fixture.list().expect_err("a newer conformance_version");
    assert!(
        matches!(err, AdapterError::VersionUnsupported { .. }),
        "{err:?}"
    );
    assert_eq!(err.category(), "fixture_version_unsupported");
    assert_mentions(
        &err.to_string(),
        &[
            "fixture_version_unsupported",
            "99.0.0",
            openarmature_conformance::CONFORMANCE_VERSION,
            &fixture.file_name(),
        ],
    );
    let id = CaseId {
        capability: CAPABILITY.into(),
        fixture: "too-new".into(),
        case: None,
    };
    let message = failure(runner::run_case(fixture.path(), &id));
    assert_mentions(&message, &["fixture_version_unsupported"]);
}

#[test]
fn newer_minor_or_patch_is_unsupported() {
    for version in ["0.110.0", "0.109.1", "1.0"] {
        let yaml = format!("conformance_version: \"{version}\"\n{VALID}");
        let fixture = TempFixture::new("too-new-minor", &yaml);
        let err = fixture.list().expect_err(version);
        assert_eq!(err.category(), "fixture_version_unsupported", "{version}");
    }
}

#[test]
fn older_or_equal_conformance_version_is_accepted() {
    for version in [
        "\"0.48.0\"",
        "\"v0.48.0\"",
        "\"0.109.0\"",
        "\"0.109\"",
        "0.48",
    ] {
        let yaml = format!("conformance_version: {version}\n{VALID}");
        let fixture = TempFixture::new("old-enough", &yaml);
        assert_eq!(fixture.run_single(), CaseOutcome::Passed, "{version}");
    }
}

#[test]
fn unparseable_conformance_version_is_schema_invalid() {
    for (stem, version) in [("version-word", "\"latest\""), ("version-list", "[0, 48]")] {
        let yaml = format!("conformance_version: {version}\n{VALID}");
        let fixture = TempFixture::new(stem, &yaml);
        let err = fixture.list().expect_err(stem);
        assert_eq!(err.category(), INVALID, "{stem}: {err}");
        assert_mentions(&err.to_string(), &["conformance_version"]);
    }
}

// ---------------------------------------------------------------------------
// (e) cases: listing and selection
// ---------------------------------------------------------------------------

#[test]
fn cases_are_listed_by_name_or_position() {
    let case = indent(VALID, 4);
    let yaml = format!("cases:\n  - name: first_case\n{case}  - description: unnamed\n{case}");
    let fixture = TempFixture::new("two-cases", &yaml);
    let ids = fixture.list().expect("list_cases");
    let names: Vec<_> = ids.iter().map(|id| id.case.clone()).collect();
    assert_eq!(
        names,
        vec![Some("first_case".to_owned()), Some("case-2".to_owned())]
    );
    assert_eq!(ids[0].to_string(), "graph-engine/two-cases/first_case");
    assert_eq!(ids[1].fixture_key(), "graph-engine/two-cases");
    for id in &ids {
        assert_eq!(
            runner::run_case(fixture.path(), id),
            CaseOutcome::Passed,
            "{id}"
        );
    }

    let missing = CaseId {
        case: Some("no_such_case".into()),
        ..ids[0].clone()
    };
    let message = failure(runner::run_case(fixture.path(), &missing));
    assert_mentions(&message, &["no_such_case"]);
}

#[test]
fn cases_run_independently() {
    // The second case fails; the first still passes on its own.
    let good = indent(VALID, 4);
    let bad = indent(
        &VALID.replace("final_state: {v: 2", "final_state: {v: 9"),
        4,
    );
    let yaml = format!("cases:\n  - name: good\n{good}  - name: bad\n{bad}");
    let fixture = TempFixture::new("mixed-cases", &yaml);
    let ids = fixture.list().expect("list_cases");
    assert_eq!(
        runner::run_case(fixture.path(), &ids[0]),
        CaseOutcome::Passed
    );
    let message = failure(runner::run_case(fixture.path(), &ids[1]));
    assert_mentions(&message, &["final_state"]);
}

#[test]
fn case_with_unknown_directive_names_it() {
    let case = indent(&format!("frobnicate: 1\n{VALID}"), 4);
    let yaml = format!("cases:\n  - name: bad\n{case}");
    let fixture = TempFixture::new("case-unknown", &yaml);
    let ids = fixture.list().expect("list_cases");
    let message = failure(runner::run_case(fixture.path(), &ids[0]));
    assert_mentions(&message, &[UNKNOWN, &fixture.file_name(), "frobnicate"]);
}

#[test]
fn a_case_that_asserts_nothing_fails() {
    let yaml = valid_with(
        "expected:\n  final_state: {v: 2, trace: [\"a\", \"b\"]}\n  execution_order: [a, b]\n",
        "",
    );
    let fixture = TempFixture::new("asserts-nothing", &yaml);
    let message = failure(fixture.run_single());
    assert_mentions(&message, &["asserts nothing"]);
}

#[test]
fn an_unexpected_failure_fails_the_case() {
    let yaml = valid_with("update: {v: 2, trace: [\"b\"]}", "raises: boom")
        .replace("  final_state: {v: 2, trace: [\"a\", \"b\"]}\n", "");
    let fixture = TempFixture::new("unexpected-failure", &yaml);
    let message = failure(fixture.run_single());
    assert_mentions(&message, &["node_exception"]);
}

// ---------------------------------------------------------------------------
// (f) nothing panics
// ---------------------------------------------------------------------------

#[test]
fn malformed_inputs_never_panic() {
    let inputs: Vec<(&str, String)> = vec![
        ("p-empty", String::new()),
        ("p-null", "~\n".into()),
        ("p-binary", "\u{0}\u{1}\u{2}: [".into()),
        (
            "p-deep",
            format!("initial_state: {}1{}\n", "[".repeat(200), "]".repeat(200)),
        ),
        ("p-complex-key", format!("? [a, b]\n: 1\n{VALID}")),
        ("p-cases-scalars", "cases: [1, two, ~]\n".into()),
        ("p-cases-empty", "cases: []\n".into()),
        (
            "p-invocations-scalar",
            valid_with("initial_state: {}", "invocations: 5"),
        ),
        (
            "p-invocations-items",
            valid_with("initial_state: {}", "invocations: [1, {initial_state: 3}]"),
        ),
        ("p-run-count-string", format!("run_count: many\n{VALID}")),
        (
            "p-entry-missing-node",
            valid_with("entry: a", "entry: nowhere"),
        ),
        ("p-no-entry", valid_with("entry: a\n", "")),
        (
            "p-node-null",
            valid_with("update: {v: 1, trace: [\"a\"]}", "~"),
        ),
        (
            "p-node-scalar",
            valid_with("  a:\n    update: {v: 1, trace: [\"a\"]}", "  a: 5"),
        ),
        (
            "p-update-undeclared",
            valid_with("update: {v: 1, trace: [\"a\"]}", "update: {nope: 1}"),
        ),
        (
            "p-update-wrong-type",
            valid_with("update: {v: 1, trace: [\"a\"]}", "update: {v: \"one\"}"),
        ),
        (
            "p-from-field-bad",
            valid_with(
                "update: {v: 1, trace: [\"a\"]}",
                "update_from_field: {v: trace, multiplier: x}",
            ),
        ),
        (
            "p-from-field-overflow",
            valid_with(
                "update: {v: 1, trace: [\"a\"]}",
                "update_from_field: {v: v, multiplier: 9223372036854775807}",
            )
            .replace("initial_state: {}", "initial_state: {v: 9}"),
        ),
        (
            "p-default-wrong-type",
            valid_with("default: 0", "default: \"zero\""),
        ),
        (
            "p-huge-int",
            valid_with(
                "initial_state: {}",
                "initial_state: {v: 99999999999999999999999}",
            ),
        ),
        (
            "p-condition-missing",
            valid_with("{from: a, to: b}", "{from: a, condition: {if_field: v}}"),
        ),
        (
            "p-condition-scalar",
            valid_with("{from: a, to: b}", "{from: a, condition: 5}"),
        ),
        (
            "p-drain-node-bad",
            valid_with(
                "update: {v: 1, trace: [\"a\"]}",
                "invoke_drain_events_for: {timeout_seconds: -2}",
            ),
        ),
        (
            "p-observer-events-scalar",
            format!("{VALID}observers: [{{name: o}}]\n").replace(
                "execution_order: [a, b]",
                "execution_order: [a, b]\n  observer_events: {o: 5}",
            ),
        ),
        (
            "p-delivery-order-garbage",
            valid_with(
                "execution_order: [a, b]",
                "execution_order: [a, b]\n  delivery_order: [1, 2, 3, 4]",
            ),
        ),
        (
            "p-expected-error-on-success",
            valid_expected_error(VALID, "{category: node_exception}"),
        ),
        (
            "p-compile-error-garbage",
            format!("expected_compile_error: [1, 2]\n{VALID}"),
        ),
        (
            "p-version-huge",
            format!("conformance_version: \"99999999999999999999999.0\"\n{VALID}"),
        ),
    ];
    for (stem, yaml) in inputs {
        let fixture = TempFixture::new(stem, &yaml);
        let result = catch_unwind(AssertUnwindSafe(|| match fixture.list() {
            Err(e) => vec![CaseOutcome::Failed(e.into())],
            Ok(ids) => ids
                .iter()
                .map(|id| runner::run_case(fixture.path(), id))
                .collect(),
        }));
        match result {
            Ok(outcomes) => {
                for outcome in outcomes {
                    assert!(
                        !outcome.is_pass(),
                        "{stem}: a malformed fixture passed:\n{yaml}"
                    );
                }
            }
            Err(_) => panic!("{stem}: the adapter panicked on:\n{yaml}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Known adapter leniencies (ignored until fixed; `cargo test -- --ignored`)
// ---------------------------------------------------------------------------

#[test]
fn run_count_must_be_positive() {
    for (stem, n) in [("run-count-negative", "-3"), ("run-count-zero", "0")] {
        let yaml = format!("run_count: {n}\n{VALID}");
        assert_fails(stem, &yaml, INVALID, &["run_count"]);
    }
}

#[test]
fn conformance_version_with_trailing_garbage_is_schema_invalid() {
    let yaml = format!("conformance_version: \"0.48.0.1x\"\n{VALID}");
    let fixture = TempFixture::new("version-suffix", &yaml);
    let err = fixture
        .list()
        .expect_err("trailing garbage in conformance_version");
    assert_eq!(err.category(), INVALID, "{err}");
}

#[test]
fn case_level_conformance_version_is_checked_or_rejected() {
    let case = indent(&format!("conformance_version: \"99.0.0\"\n{VALID}"), 4);
    let yaml = format!("cases:\n  - name: pinned_too_new\n{case}");
    let fixture = TempFixture::new("case-version", &yaml);
    let outcome = match fixture.list() {
        Err(e) => CaseOutcome::Failed(e.into()),
        Ok(ids) => runner::run_case(fixture.path(), &ids[0]),
    };
    let message = failure(outcome);
    assert!(
        message.contains("fixture_version_unsupported") || message.contains(UNKNOWN),
        "{message}"
    );
}

#[test]
fn nested_cases_key_is_rejected() {
    let case = indent(&format!("cases: [{{name: inner}}]\n{VALID}"), 4);
    let yaml = format!("cases:\n  - name: outer\n{case}");
    let fixture = TempFixture::new("nested-cases", &yaml);
    let ids = fixture.list().expect("list_cases");
    let message = failure(runner::run_case(fixture.path(), &ids[0]));
    assert_mentions(&message, &[UNKNOWN, "cases"]);
}

#[test]
fn default_must_match_declared_type() {
    let yaml = valid_with(
        "v: {type: int, default: 0}",
        "v: {type: int, default: \"zero\"}",
    );
    assert_fails(
        "default-wrong-type",
        &yaml,
        INVALID,
        &["state.fields.v.default"],
    );
}
