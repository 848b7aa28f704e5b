//! The runner against small fixtures written here: valid ones pass, wrong
//! expectations fail, and every unknown or misplaced directive fails loudly with its
//! §9 category and location.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{runner, CaseOutcome};

/// Writes `yaml` to a fresh file and runs its only case (or `case`).
fn run(yaml: &str, case: Option<&str>) -> CaseOutcome {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "oa-prompt-runner-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("900-test.yaml");
    std::fs::write(&path, yaml).unwrap();
    let ids = runner::list_cases("prompt-management", &path).unwrap();
    let id = ids
        .iter()
        .find(|id| id.case.as_deref() == case)
        .unwrap_or_else(|| panic!("no case {case:?} in {ids:?}"))
        .clone();
    let outcome = runner::run_case(&path, &id);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn failure(yaml: &str) -> String {
    match run(yaml, None) {
        CaseOutcome::Failed(m) => m.to_string(),
        CaseOutcome::Passed => panic!("passed, expected a failure:\n{yaml}"),
    }
}

fn assert_mentions(message: &str, needles: &[&str]) {
    for n in needles {
        assert!(message.contains(n), "{message:?} does not mention {n:?}");
    }
}

const BACKEND: &str = "backends:
  - name: local
    prompts:
      - {name: greeting, label: production, version: v1, template: 'Hello, {{ user }}!', template_hash: 'sha256:abc'}
manager:
  backends: [local]
";

fn with_calls(calls: &str) -> String {
    format!("{BACKEND}calls:\n{calls}")
}

const RENDER: &str = "  - target: manager
    operation: render
    fetched_prompt: {name: greeting, label: production}
    variables: {user: Alice}
    capture_as: r
";

#[test]
fn a_valid_fixture_passes() {
    let yaml = with_calls(&format!(
        "{RENDER}expected:\n  r:\n    version: v1\n    messages: [{{role: user, content: 'Hello, Alice!'}}]\n"
    ));
    assert!(matches!(run(&yaml, None), CaseOutcome::Passed));
}

#[test]
fn a_wrong_expectation_fails_naming_the_field() {
    let yaml = with_calls(&format!("{RENDER}expected:\n  r:\n    version: v2\n"));
    assert_mentions(&failure(&yaml), &["r.version", "v2"]);
}

#[test]
fn an_unexpected_raise_fails() {
    let yaml = with_calls(
        "  - target: manager
    operation: render
    fetched_prompt: {name: greeting, label: production}
    variables: {}
",
    );
    assert_mentions(&failure(&yaml), &["prompt_render_error", "user"]);
}

#[test]
fn a_missing_raise_fails() {
    let yaml = with_calls(&format!(
        "{RENDER}    expected:\n      raises: {{category: prompt_render_error}}\n"
    ));
    assert_mentions(&failure(&yaml), &["expected prompt_render_error"]);
}

#[test]
fn unknown_directives_fail_loudly_with_their_location() {
    let cases = [
        (format!("{BACKEND}bogus: 1\n"), "`bogus`", "at bogus"),
        (
            with_calls("  - {target: manager, operation: fetch, name: greeting, colour: red}\n"),
            "`colour`",
            "calls.0.colour",
        ),
        (
            with_calls("  - {target: manager, operation: delete, name: greeting}\n"),
            "`delete`",
            "calls.0.operation",
        ),
        (
            with_calls("  - {target: somewhere, operation: fetch, name: greeting}\n"),
            "`somewhere`",
            "calls.0.target",
        ),
        (
            with_calls(&format!(
                "{RENDER}    expected:\n      prompt_resultz: {{}}\n"
            )),
            "`prompt_resultz`",
            "calls.0.expected.prompt_resultz",
        ),
        (
            with_calls(&format!("{RENDER}expected:\n  not_a_capture: {{}}\n")),
            "`not_a_capture`",
            "expected.not_a_capture",
        ),
        (
            with_calls(&format!("{RENDER}expected:\n  r: {{versoin: v1}}\n")),
            "`versoin`",
            "expected.r.versoin",
        ),
        (
            with_calls(
                "  - target: manager
    operation: render
    fetched_prompt: {name: greeting, label: production}
    variables: {}
    expected:
      raises: {category: prompt_render_error, carries: {colour_mentions: x}}
",
            ),
            "`colour_mentions`",
            "carries.colour_mentions",
        ),
    ];
    for (yaml, directive, location) in cases {
        let m = failure(&yaml);
        assert_mentions(&m, &["fixture_directive_unknown", directive, location]);
    }
}

#[test]
fn misplaced_fields_are_schema_errors() {
    for (calls, needle) in [
        (
            "  - {target: manager, operation: fetch, name: greeting, seconds: 3}\n",
            "`seconds` does not apply to fetch",
        ),
        (
            "  - {target: {backend: local}, operation: advance_clock, seconds: 3}\n",
            "not a caching backend",
        ),
        (
            "  - {target: {backend: local}, operation: render, fetched_prompt_ref: x}\n",
            "does not apply to this target",
        ),
        (
            "  - {target: manager, operation: render, variables: {}}\n",
            "exactly one of `fetched_prompt` and `fetched_prompt_ref`",
        ),
    ] {
        let m = failure(&with_calls(calls));
        assert_mentions(&m, &["fixture_schema_invalid", needle]);
    }
}

#[test]
fn cases_overlay_the_root() {
    let yaml = format!(
        "{BACKEND}cases:
  - name: fetches
    calls:
      - target: manager
        operation: fetch
        name: greeting
        expected:
          prompt: {{version: v1}}
          local_backend_call_count: 1
  - name: wrong_count
    calls:
      - target: manager
        operation: fetch
        name: greeting
        expected:
          backend_call_counts: {{local: 2}}
"
    );
    assert!(matches!(run(&yaml, Some("fetches")), CaseOutcome::Passed));
    match run(&yaml, Some("wrong_count")) {
        CaseOutcome::Failed(m) => {
            assert_mentions(&m.to_string(), &["fetched 1 time(s)", "expected 2"])
        }
        CaseOutcome::Passed => panic!("a wrong call count passed"),
    }
}
