//! The retrieval-provider runner's own behaviour (conformance-adapter §5.15, §9):
//! unknown directives, mappings and invariants fail loudly with their §9 category,
//! an exhausted mock fails clearly, and wrong expectations are caught (the harness
//! cannot pass vacuously).

use openarmature_conformance::CaseOutcome;

use crate::probe::failure;

/// Writes `yaml` as a one-case retrieval-provider fixture and runs it.
fn run(yaml: &str) -> CaseOutcome {
    crate::probe::run("retrieval-provider", yaml)
}

/// A TEI `/embed` case; `extra` is spliced into the case, `invariants` into
/// `expected.invariants`.
fn tei_case(extra: &str, invariants: &str, mocks: &str) -> String {
    format!(
        r#"
mapping: tei
tei_embedding_provider:
  base_url: "http://embedder.invalid"
  model: probe-embed
  chunk_size: 2
cases:
  - name: probe
    state:
      fields:
        out: {{type: record, default: null}}
    entry: e
    nodes:
      e:
        calls_embed:
          input: ["a", "b", "c"]
          stores_response_in: out
    edges:
      - {{from: e, to: END}}
    initial_state: {{}}
    mock_embedding:
{mocks}
{extra}
    expected:
      final_state:
        out:
          vectors: [[1.0], [2.0], [3.0]]
          usage: null
      invariants:
        vectors_length_matches_input_length: true
{invariants}
"#
    )
}

const TWO_CHUNKS: &str =
    "      - {status: 200, body: [[1.0], [2.0]]}\n      - {status: 200, body: [[3.0]]}";

#[test]
fn a_matching_fixture_passes() {
    let yaml = tei_case(
        r#"    expected_wire_request: [{inputs: ["a", "b"]}, {inputs: ["c"]}]
    expected_wire_url: "http://embedder.invalid/embed""#,
        "        chunk_inputs_sizes_2_2_1_consecutive_slices: false\n",
        TWO_CHUNKS,
    );
    // `false` invariants are refused; the same case with the right chunk sizes passes.
    assert!(failure(run(&yaml)).contains("only `true`"));
    let yaml = tei_case(
        r#"    expected_wire_request: [{inputs: ["a", "b"]}, {inputs: ["c"]}]
    expected_wire_url: "http://embedder.invalid/embed""#,
        "        vectors_concatenated_in_input_order: true\n        identical_per_call_params_across_chunks: true\n",
        TWO_CHUNKS,
    );
    assert!(
        matches!(run(&yaml), CaseOutcome::Passed),
        "{:?}",
        run(&yaml)
    );
}

#[test]
fn wrong_wire_expectations_fail() {
    let body = tei_case(
        r#"    expected_wire_request: [{inputs: ["a", "b"], truncate: false}, {inputs: ["c"]}]"#,
        "",
        TWO_CHUNKS,
    );
    assert!(failure(run(&body)).contains("expected_wire_request[0]"));
    let url = tei_case(
        r#"    expected_wire_url: "http://other.invalid/embed""#,
        "",
        TWO_CHUNKS,
    );
    assert!(failure(run(&url)).contains("expected_wire_url"));
    let count = tei_case("    expected_wire_request_count: 1", "", TWO_CHUNKS);
    assert!(failure(run(&count)).contains("expected_wire_request_count"));
}

#[test]
fn invariants_that_do_not_hold_fail() {
    let truncate = tei_case("", "        wire_request_truncate_none: true\n", TWO_CHUNKS);
    assert!(failure(run(&truncate)).contains("wire_request_truncate_none"));
    let sizes = tei_case(
        "",
        "        chunk_texts_sizes_96_4_consecutive_slices: true\n",
        TWO_CHUNKS,
    );
    assert!(failure(run(&sizes)).contains("chunk_texts_sizes_96_4"));
    // A stored-record expectation the response does not meet fails final_state.
    let order =
        tei_case("", "", TWO_CHUNKS).replace("[[1.0], [2.0], [3.0]]", "[[2.0], [1.0], [3.0]]");
    assert!(failure(run(&order)).contains("final_state.out.vectors"));
}

#[test]
fn unknown_directives_and_invariants_fail_loudly() {
    let directive = tei_case("    surprise_directive: 1", "", TWO_CHUNKS);
    let m = failure(run(&directive));
    assert!(
        m.contains("fixture_directive_unknown") && m.contains("surprise_directive"),
        "{m}"
    );
    let invariant = tei_case("", "        no_such_invariant: true\n", TWO_CHUNKS);
    let m = failure(run(&invariant));
    assert!(
        m.contains("fixture_directive_unknown") && m.contains("no_such_invariant"),
        "{m}"
    );
    let mapping = tei_case("", "", TWO_CHUNKS).replace("mapping: tei", "mapping: voyage");
    let m = failure(run(&mapping));
    assert!(
        m.contains("fixture_directive_unknown") && m.contains("voyage"),
        "{m}"
    );
    let block =
        tei_case("", "", TWO_CHUNKS).replace("  chunk_size: 2", "  chunk_size: 2\n  api_key: k");
    assert!(failure(run(&block)).contains("not a construction parameter"));
}

#[test]
fn an_exhausted_mock_fails_clearly() {
    let m = failure(run(&tei_case(
        "",
        "",
        "      - {status: 200, body: [[1.0], [2.0]]}",
    )));
    assert!(m.contains("mock provider exhausted"), "{m}");
}

#[test]
fn errors_and_events_are_checked() {
    let error = tei_case(
        "    expected_error: {category: provider_rate_limit, raised_from: e}",
        "",
        "      - {status: 400, body: {error: bad}}",
    )
    .replace(
        "      final_state:\n        out:\n          vectors: [[1.0], [2.0], [3.0]]\n          usage: null\n",
        "",
    )
    .replace("vectors_length_matches_input_length", "exception_raised_out_of_embed_call");
    let m = failure(run(&error));
    assert!(m.contains("provider_invalid_request"), "{m}");
    let events = tei_case(
        "    typed_observers: [{name: c, kind: typed_event_collector}]",
        "",
        TWO_CHUNKS,
    )
    .replace(
        "      invariants:",
        "      observers:\n        c:\n          contains_event:\n            event_type: EmbeddingEvent\n            fields: {node_name: e, request_params: {input_type: query}}\n      invariants:",
    );
    assert!(failure(run(&events)).contains("request_params"));
}
