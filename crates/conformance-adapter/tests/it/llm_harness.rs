//! The llm-provider runner's own behaviour (conformance-adapter §8.2/§9, §5.9,
//! llm-provider §9): an exhausted mock fails clearly instead of hanging, unknown
//! directives and invariants fail, and wrong expectations are caught (the harness
//! cannot pass vacuously).

use openarmature_conformance::CaseOutcome;

use crate::probe::failure;

/// Writes `yaml` as a one-case llm-provider fixture and runs it.
fn run(yaml: &str) -> CaseOutcome {
    crate::probe::run("llm-provider", yaml)
}

const OK_BODY: &str = r#"
mock_provider:
  responses:
    - status: 200
      body:
        id: cc-1
        model: test-model
        choices:
          - {index: 0, message: {role: assistant, content: "hi"}, finish_reason: stop}
        usage: {prompt_tokens: 1, completion_tokens: 1, total_tokens: 2}
"#;

#[test]
fn a_matching_fixture_passes() {
    let yaml = format!(
        "{OK_BODY}
calls:
  - operation: complete
    messages: [{{role: user, content: go}}]
    expected_wire_request:
      model: test-model
      messages: [{{role: user, content: go}}]
    expected:
      response: {{message: {{role: assistant, content: hi, tool_calls: null}}, finish_reason: stop}}
      provider_call_count: 1
"
    );
    assert_eq!(run(&yaml), CaseOutcome::Passed);
}

#[test]
fn an_exhausted_mock_fails_clearly() {
    let m = failure(run("mock_provider: {responses: []}
calls:
  - operation: complete
    messages: [{role: user, content: go}]
    expected: {response: {finish_reason: stop}}
"));
    assert!(m.contains("exhausted"), "{m}");
}

#[test]
fn wrong_expectations_fail() {
    for (expected, needle) in [
        ("response: {message: {content: bye}}", "message.content"),
        ("response: {usage: {total_tokens: 3}}", "usage.total_tokens"),
        (
            "raises: {category: provider_unavailable}",
            "expected a raise",
        ),
        ("provider_call_count: 2", "provider_call_count"),
        ("invariants: {no_request_issued: true}", "no_request_issued"),
        ("invariants: {made_up_invariant: true}", "made_up_invariant"),
        ("surprise: true", "fixture_directive_unknown"),
    ] {
        let yaml = format!(
            "{OK_BODY}
calls:
  - operation: complete
    messages: [{{role: user, content: go}}]
    expected:
      {expected}
"
        );
        let m = failure(run(&yaml));
        assert!(m.contains(needle), "{expected}: {m}");
    }
}

#[test]
fn wire_comparison_is_literal() {
    let yaml = format!(
        "{OK_BODY}
calls:
  - operation: complete
    messages: [{{role: user, content: go}}]
    config: {{temperature: 0.5}}
    expected_wire_request:
      model: test-model
      messages: [{{role: user, content: go}}]
"
    );
    let m = failure(run(&yaml));
    assert!(m.contains("unexpected key `temperature`"), "{m}");
}

#[test]
fn unimplemented_mappings_and_streaming_are_refused() {
    let m = failure(run(&format!(
        "mapping: bedrock\n{OK_BODY}\ncalls:\n  - {{operation: complete, messages: [{{role: user, content: go}}]}}\n"
    )));
    assert!(m.contains("mapping `bedrock`"), "{m}");
    let m = failure(run(&format!(
        "{OK_BODY}\ncalls:\n  - {{operation: complete, stream: true, messages: [{{role: user, content: go}}]}}\n"
    )));
    assert!(m.contains("stream"), "{m}");
}

/// A transient failure, then the OK reply: two attempt spans.
fn retried(spans: &str) -> String {
    format!(
        "mock_provider:
  responses:
    - {{status: 503, body: {{error: {{message: down}}}}}}
    - status: 200
      body:
        id: cc-1
        model: test-model
        choices:
          - {{index: 0, message: {{role: assistant, content: hi}}, finish_reason: stop}}
calls:
  - operation: complete
    messages: [{{role: user, content: go}}]
    retry: {{max_attempts: 2, backoff: {{type: deterministic, seconds: 0}}}}
    expected:
      llm_spans:
{spans}
"
    )
}

#[test]
fn llm_spans_are_asserted_on_the_exported_spans() {
    let good = "        - {attempt_index: 0, error_category: provider_unavailable, attributes_absent: [openarmature.llm.retry_reason]}
        - {attempt_index: 1, error_category: null, attributes: {openarmature.llm.retry_reason: transient, openarmature.llm.model: test-model, gen_ai.system: openai}}";
    assert_eq!(run(&retried(good)), CaseOutcome::Passed);
    for (spans, needle) in [
        (
            "        - {attempt_index: 0, error_category: provider_unavailable}",
            "1 spans expected, but 2",
        ),
        (
            "        - {attempt_index: 0, error_category: null}
        - {attempt_index: 1, error_category: null}",
            "expected status OK",
        ),
        (
            "        - {attempt_index: 0, error_category: provider_unavailable}
        - {attempt_index: 1, error_category: provider_unavailable}",
            "expected ERROR",
        ),
        (
            "        - {attempt_index: 0, attributes: {openarmature.llm.retry_reason: transient}}
        - {attempt_index: 1}",
            "retry_reason` is missing",
        ),
        (
            "        - {attempt_index: 0}
        - {attempt_index: 1, attributes_absent: [openarmature.llm.retry_reason]}",
            "should be absent",
        ),
    ] {
        let m = failure(run(&retried(spans)));
        assert!(m.contains(needle), "{spans}: {m}");
    }
}
