//! The observability runner's LLM side (conformance-adapter §8.2/§9, §5.9): `calls_llm`
//! against the mock provider, LLM span and typed-observer assertions. Unknown
//! directives fail, wrong expectations are caught (nothing passes vacuously), and an
//! exhausted `mock_llm` fails clearly.

use openarmature_conformance::CaseOutcome;

use crate::probe::failure;

/// Writes `yaml` as a one-case observability fixture and runs it.
fn run(yaml: &str) -> CaseOutcome {
    crate::probe::run("observability", yaml)
}

/// One LLM-calling node, one reply, a collector; `{extra}` goes at case level and
/// `{expected}` under `expected:`.
fn fixture(extra: &str, expected: &str) -> String {
    format!(
        r#"state:
  fields:
    msg: {{type: string, default: ""}}
entry: ask
nodes:
  ask:
    calls_llm:
      messages: [{{role: user, content: "hi"}}]
      stores_response_in: msg
      config: {{temperature: 0.5, extras: {{top_k: 3}}}}
edges:
  - {{from: ask, to: END}}
initial_state: {{}}
mock_llm:
  - status: 200
    body:
      id: cc-1
      model: test-model
      choices:
        - {{index: 0, message: {{role: assistant, content: "hello"}}, finish_reason: stop}}
      usage: {{prompt_tokens: 5, completion_tokens: 1, total_tokens: 6}}
typed_observers:
  - {{name: collector, kind: typed_event_collector}}
{extra}
expected:
{expected}
"#
    )
}

const GOOD: &str = r#"  final_state: {msg: hello}
  span_tree:
    - name: openarmature.invocation
      status: OK
      children:
        - name: ask
          status: OK
          children:
            - name: openarmature.llm.complete
              status: OK
              attributes:
                openarmature.llm.model: test-model
                openarmature.llm.attempt_index: 0
                gen_ai.request.temperature: 0.5
              attribute_parses_as_object:
                openarmature.llm.request.extras: {top_k: 3}
              children: []
  observers:
    collector:
      contains_event:
        event_type: LlmCompletionEvent
        fields: {provider: openai, model: test-model, output_content: hello, request_extras: {top_k: 3}}
      event_counts:
        - {event_type: LlmCompletionEvent, count: 1}
        - {event_type: LlmFailedEvent, count: 0}
      relative_order_of_events_matching:
        filter: {node_name: ask}
        expected_order:
          - {event_type: NodeEvent, phase: started}
          - {event_type: LlmCompletionEvent}
          - {event_type: NodeEvent, phase: completed}
  invariants:
    exactly_one_llm_completion_event_observed: true
    event_typed_fields_match_provider_response: true"#;

#[test]
fn a_matching_llm_fixture_passes() {
    assert_eq!(
        run(&fixture("disable_provider_payload: false", GOOD)),
        CaseOutcome::Passed
    );
}

#[test]
fn wrong_expectations_fail() {
    for (from, to, needle) in [
        (
            "openarmature.llm.model: test-model",
            "openarmature.llm.model: gpt-test",
            "openarmature.llm.model",
        ),
        ("provider: openai,", "provider: vllm,", "provider"),
        (
            "{event_type: LlmFailedEvent, count: 0}",
            "{event_type: LlmFailedEvent, count: 1}",
            "LlmFailedEvent",
        ),
        (
            "event_typed_fields_match_provider_response",
            "made_up_invariant",
            "made_up_invariant",
        ),
        (
            "contains_event:",
            "contains_surprise:",
            "fixture_directive_unknown",
        ),
        (
            "request_extras: {top_k: 3}}",
            "request_extras: {top_k: 4}}",
            "request_extras",
        ),
    ] {
        let expected = GOOD.replace(from, to);
        assert_ne!(expected, GOOD, "{from}");
        let m = failure(run(&fixture("disable_provider_payload: false", &expected)));
        assert!(m.contains(needle), "{from}: {m}");
    }
    // Payload is off by default: the extras attribute is absent.
    let m = failure(run(&fixture("", GOOD)));
    assert!(m.contains("openarmature.llm.request.extras"), "{m}");
    // The order is asserted, not just membership.
    let swapped = GOOD.replace(
        "          - {event_type: NodeEvent, phase: started}\n          - {event_type: LlmCompletionEvent}",
        "          - {event_type: LlmCompletionEvent}\n          - {event_type: NodeEvent, phase: started}",
    );
    assert_ne!(swapped, GOOD);
    let m = failure(run(&fixture("disable_provider_payload: false", &swapped)));
    assert!(m.contains("out of order"), "{m}");
}

#[test]
fn unknown_directives_fail() {
    for (extra, needle) in [
        ("typed_observers_extra: 1", "typed_observers_extra"),
        ("provider: {type: anthropic}", "harness_primitive_missing"),
    ] {
        let m = failure(run(&fixture(extra, GOOD)));
        assert!(m.contains(needle), "{extra}: {m}");
    }
    let kind = fixture("", GOOD).replace("kind: typed_event_collector", "kind: event_counter");
    assert!(failure(run(&kind)).contains("event_counter"));
    let key = fixture("", GOOD).replace(
        "stores_response_in: msg",
        "stores_response_in: msg\n      frobnicate: 1",
    );
    assert!(failure(run(&key)).contains("frobnicate"));
}

#[test]
fn an_exhausted_mock_llm_fails_clearly() {
    let two_calls = fixture("disable_provider_payload: false", GOOD).replace(
        "edges:\n  - {from: ask, to: END}",
        "  again:\n    calls_llm:\n      messages: [{role: user, content: \"more\"}]\n      stores_response_in: msg\nedges:\n  - {from: ask, to: again}\n  - {from: again, to: END}",
    );
    let m = failure(run(&two_calls));
    assert!(m.contains("exhausted"), "{m}");
}
