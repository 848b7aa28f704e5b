//! Spec: conformance-adapter §5.9 — the named invariants of the streaming fixtures
//! (observability 111–118; graph-engine §6 `LlmTokenEvent`, llm-provider §6
//! *Streaming assembly*), checked against the recorded events, the calls' responses,
//! the LLM spans and the chunks `mock_llm_stream` served.

use std::collections::BTreeSet;

use openarmature_llm::{Content, ContentBlock};
use openarmature_observability::attributes as a;
use serde_json::Value;

use super::super::spans::attr_str;
use super::super::Run;
use super::{completions, ensure, exactly, failures, field, raised, records};

use crate::failure::{mismatch, Check};
use crate::table::{lookup, names, Table};

/// The token events, in delivery order.
fn tokens(run: &Run<'_>) -> Vec<Value> {
    super::of_type(&records(run), "LlmTokenEvent")
}

fn str_of<'v>(r: &'v Value, k: &str) -> &'v str {
    field(r, k).as_str().unwrap_or_default()
}

/// The token events grouped by `call_id`, groups in first-appearance order.
fn streams(run: &Run<'_>) -> Vec<(String, Vec<Value>)> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for t in tokens(run) {
        let id = str_of(&t, "call_id").to_owned();
        match out.iter_mut().find(|(c, _)| *c == id) {
            Some((_, group)) => group.push(t),
            None => out.push((id, vec![t])),
        }
    }
    out
}

fn deltas(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|t| str_of(t, "delta_kind") == kind)
        .map(|t| str_of(t, "delta"))
        .collect()
}

/// Every chunk `mock_llm_stream` lists (all calls, all wire attempts), flattened.
fn served_chunks(run: &Run<'_>) -> Vec<Value> {
    let Some(Ok(Value::Array(entries))) = run.case.get("mock_llm_stream").map(|y| y.json()) else {
        return Vec::new();
    };
    fn flatten(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
            Value::Object(m) if m.contains_key("wire_attempts") => {
                flatten(&m["wire_attempts"], out);
            }
            other => out.push(other.clone()),
        }
    }
    let mut out = Vec::new();
    entries.iter().for_each(|e| flatten(e, &mut out));
    out
}

/// The non-empty `choices[*].delta.<key>` strings of the served chunks.
fn served_deltas(run: &Run<'_>, key: &str) -> Vec<String> {
    served_chunks(run)
        .iter()
        .filter_map(|c| c.pointer(&format!("/choices/0/delta/{key}"))?.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn chunk_indices_from_zero(run: &Run<'_>) -> Check {
    let groups = streams(run);
    ensure(!groups.is_empty(), || "no token events".into())?;
    for (id, group) in groups {
        let got: Vec<u64> = group
            .iter()
            .filter_map(|t| t["chunk_index"].as_u64())
            .collect();
        let want: Vec<u64> = (0..group.len() as u64).collect();
        ensure(got == want, || format!("call {id}: chunk indices {got:?}"))?;
    }
    Ok(())
}

fn tokens_link_to_terminal(run: &Run<'_>) -> Check {
    let terminal: BTreeSet<String> = completions(run)
        .iter()
        .chain(failures(run).iter())
        .map(|e| str_of(e, "call_id").to_owned())
        .collect();
    let groups = streams(run);
    ensure(!groups.is_empty(), || "no token events".into())?;
    for (id, _) in groups {
        ensure(!id.is_empty() && terminal.contains(&id), || {
            format!("token call_id {id:?} matches no terminal event")
        })?;
    }
    Ok(())
}

fn nth_stream_matches_nth_completion(run: &Run<'_>, n: usize) -> Check {
    let groups = streams(run);
    let done = completions(run);
    let (id, _) = groups.get(n).ok_or(format!("no token stream #{n}"))?;
    let completion = done.get(n).ok_or(format!("no completion #{n}"))?;
    ensure(str_of(completion, "call_id") == id, || {
        format!("stream #{n} call_id {id} != completion call_id")
    })
}

fn content_concatenates(run: &Run<'_>) -> Check {
    let groups = streams(run);
    let done = completions(run);
    ensure(!done.is_empty(), || "no completion event".into())?;
    for c in &done {
        let id = str_of(c, "call_id");
        let group = groups
            .iter()
            .find(|(g, _)| g == id)
            .map(|(_, t)| t.as_slice());
        let got = deltas(group.unwrap_or_default(), "content");
        ensure(
            field(c, "output_content").as_str() == Some(got.as_str()),
            || {
                format!(
                    "content deltas {got:?} vs output_content {}",
                    field(c, "output_content")
                )
            },
        )?;
    }
    Ok(())
}

fn only_content_tokens(run: &Run<'_>) -> Check {
    let t = tokens(run);
    ensure(
        !t.is_empty() && t.iter().all(|t| str_of(t, "delta_kind") == "content"),
        || {
            format!(
                "token kinds {:?}",
                t.iter()
                    .map(|t| str_of(t, "delta_kind"))
                    .collect::<Vec<_>>()
            )
        },
    )?;
    ensure(t.len() == served_deltas(run, "content").len(), || {
        "token events do not match the content chunks one to one".into()
    })
}

fn reassembled_tool_calls(run: &Run<'_>) -> Check {
    let mut want: Vec<(String, String, String)> = Vec::new();
    for chunk in served_chunks(run) {
        let calls = chunk
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(0) as usize;
            if index >= want.len() {
                want.resize(index + 1, Default::default());
            }
            let slot = &mut want[index];
            if let Some(id) = call["id"].as_str() {
                slot.0 = id.to_owned();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                slot.1 = name.to_owned();
            }
            slot.2.push_str(
                call.pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
    }
    let want: Vec<Value> = want
        .into_iter()
        .map(|(id, name, args)| {
            let arguments = serde_json::from_str::<Value>(&args).unwrap_or(Value::Null);
            serde_json::json!({"id": id, "name": name, "arguments": arguments})
        })
        .collect();
    let done = completions(run);
    exactly(&done, 1, "LlmCompletionEvent")?;
    let got = field(&done[0], "output_tool_calls");
    ensure(
        !want.is_empty() && *got == Value::Array(want.clone()),
        || format!("output_tool_calls {got} vs reassembled {want:?}"),
    )
}

fn no_argument_fragment_tokens(run: &Run<'_>) -> Check {
    let t = tokens(run);
    ensure(
        t.iter().all(|t| str_of(t, "delta_kind") != "tool_call"),
        || "a tool_call token event".into(),
    )?;
    only_content_tokens(run)
}

fn partial_then_failure(run: &Run<'_>) -> Check {
    let all = records(run);
    let last_token = all
        .iter()
        .rposition(|r| str_of(r, "event_type") == "LlmTokenEvent")
        .ok_or("no token events")?;
    let failed = all
        .iter()
        .position(|r| str_of(r, "event_type") == "LlmFailedEvent")
        .ok_or("no LlmFailedEvent")?;
    ensure(last_token < failed, || {
        "a token event follows the failure".into()
    })?;
    tokens_link_to_terminal(run)
}

fn exception_propagates(run: &Run<'_>) -> Check {
    let category = raised(run)?;
    let f = failures(run);
    exactly(&f, 1, "LlmFailedEvent")?;
    ensure(str_of(&f[0], "error_category") == category, || {
        format!(
            "raised {category}, the event says {}",
            f[0]["error_category"]
        )
    })?;
    ensure(run.calls.iter().any(|c| c.result.is_err()), || {
        "no call raised".into()
    })
}

fn node_level_index_zero(run: &Run<'_>) -> Check {
    let t = tokens(run);
    let retried = run.events.iter().any(
        |e| matches!(&**e, openarmature_graph::ObserverEvent::LlmAttempt(a) if a.attempt_index > 0),
    );
    ensure(retried, || "no call-level retry happened".into())?;
    ensure(
        !t.is_empty()
            && t.iter()
                .chain(completions(run).iter())
                .all(|e| e["attempt_index"] == 0),
        || "an event carries a non-zero node-level attempt_index".into(),
    )
}

fn successful_attempt_only(run: &Run<'_>) -> Check {
    content_concatenates(run)?;
    exactly(&failures(run), 0, "LlmFailedEvent")?;
    let want: String = served_deltas(run, "content").concat();
    let done = completions(run);
    ensure(
        done.len() == 1 && done[0]["output_content"] == want.as_str(),
        || format!("output_content is not the successful attempt's {want:?}"),
    )
}

fn reasoning_tokens_match(run: &Run<'_>, key: &str) -> Check {
    let want = served_deltas(run, key);
    let t = tokens(run);
    let got: Vec<&str> = t
        .iter()
        .filter(|t| str_of(t, "delta_kind") == "reasoning")
        .map(|t| str_of(t, "delta"))
        .collect();
    ensure(!want.is_empty() && got == want, || {
        format!("reasoning tokens {got:?}, `{key}` deltas {want:?}")
    })
}

fn any_reasoning_field(run: &Run<'_>) -> Check {
    reasoning_tokens_match(run, "reasoning_content")
        .or_else(|_| reasoning_tokens_match(run, "reasoning"))
}

fn reasoning_first(run: &Run<'_>) -> Check {
    let kinds: Vec<String> = tokens(run)
        .iter()
        .map(|t| str_of(t, "delta_kind").to_owned())
        .collect();
    let first_content = kinds
        .iter()
        .position(|k| k == "content")
        .unwrap_or(kinds.len());
    ensure(
        first_content > 0 && kinds[first_content..].iter().all(|k| k == "content"),
        || format!("token kinds {kinds:?}"),
    )
}

fn thinking_block(run: &Run<'_>) -> Check {
    let want = deltas(&tokens(run), "reasoning");
    let response = run
        .calls
        .iter()
        .find_map(|c| c.result.as_ref().ok())
        .ok_or("no successful call")?;
    let ok = matches!(&response.message.content,
        Some(Content::Blocks(b)) if matches!(b.first(), Some(ContentBlock::Thinking(t)) if t.text == want));
    ensure(ok && !want.is_empty(), || {
        format!(
            "no leading thinking block {want:?}: {:?}",
            response.message.content
        )
    })
}

fn one_span_no_children(run: &Run<'_>) -> Check {
    let spans = run.llm_spans();
    let [span] = spans.as_slice() else {
        return mismatch(format!("{} LLM spans, expected one", spans.len()));
    };
    ensure(run.forest.children(span).is_empty(), || {
        "the LLM span has children".into()
    })
}

fn span_output_assembled(run: &Run<'_>) -> Check {
    let spans = run.llm_spans();
    let span = spans.first().ok_or("no LLM span")?;
    let want = deltas(&tokens(run), "content");
    let got = attr_str(span, a::LLM_OUTPUT_CONTENT);
    ensure(
        !want.is_empty() && got.as_deref() == Some(want.as_str()),
        || format!("span output {got:?}, streamed {want:?}"),
    )
}

/// One terminal completion event, no failure event.
fn one_completion_no_failure(run: &Run<'_>) -> Check {
    exactly(&completions(run), 1, "LlmCompletionEvent")
        .and_then(|()| exactly(&failures(run), 0, "LlmFailedEvent"))
}

/// No token event, one completion event.
fn no_tokens_one_completion(run: &Run<'_>) -> Check {
    exactly(&tokens(run), 0, "LlmTokenEvent")
        .and_then(|()| exactly(&completions(run), 1, "LlmCompletionEvent"))
}

/// The streaming invariants (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    ("n_content_chunks_emit_n_token_events", only_content_tokens),
    (
        "only_content_kind_token_events_emitted",
        only_content_tokens,
    ),
    ("chunk_index_monotonic_from_zero", chunk_indices_from_zero),
    (
        "chunk_index_restarts_at_zero_per_call",
        chunk_indices_from_zero,
    ),
    ("ordered_reasoning_then_content_chunk_indices", |run| {
        chunk_indices_from_zero(run).and_then(|()| reasoning_first(run))
    }),
    (
        "ordered_deltas_concatenate_to_assembled_content",
        content_concatenates,
    ),
    (
        "content_assembles_into_message_content",
        content_concatenates,
    ),
    (
        "all_token_event_call_ids_match_terminal_completion_event",
        tokens_link_to_terminal,
    ),
    (
        "token_event_call_id_matches_terminal_completion_event",
        tokens_link_to_terminal,
    ),
    (
        "exactly_one_terminal_llm_completion_event",
        one_completion_no_failure,
    ),
    (
        "exactly_one_llm_completion_event",
        one_completion_no_failure,
    ),
    (
        "no_per_attempt_typed_event_for_caught_transient",
        one_completion_no_failure,
    ),
    (
        "zero_token_events_on_non_streamed_call",
        no_tokens_one_completion,
    ),
    (
        "atomic_path_unchanged_by_streaming_capability",
        no_tokens_one_completion,
    ),
    (
        "tool_call_argument_deltas_emit_no_token_events",
        no_argument_fragment_tokens,
    ),
    (
        "no_tool_call_kind_token_events",
        no_argument_fragment_tokens,
    ),
    (
        "terminal_output_tool_calls_reassembled_complete_and_parsed",
        reassembled_tool_calls,
    ),
    (
        "reassembled_tool_calls_identical_to_non_streamed",
        reassembled_tool_calls,
    ),
    (
        "partial_token_events_fire_before_failure",
        partial_then_failure,
    ),
    ("exactly_one_terminal_llm_failed_event", |run| {
        exactly(&failures(run), 1, "LlmFailedEvent")
    }),
    ("zero_llm_completion_events_on_failed_stream", |run| {
        exactly(&completions(run), 0, "LlmCompletionEvent")
    }),
    ("no_llm_token_failed_event_variant_exists", |run| {
        exactly(
            &super::of_type(&records(run), "LlmTokenFailedEvent"),
            0,
            "LlmTokenFailedEvent",
        )
    }),
    ("exception_propagates_out_of_complete", exception_propagates),
    ("token_events_group_by_call_id_into_two_streams", |run| {
        let n = streams(run).len();
        ensure(n == 2, || format!("{n} token streams"))
    }),
    ("call1_token_events_share_call1_completion_call_id", |run| {
        nth_stream_matches_nth_completion(run, 0)
    }),
    ("call2_token_events_share_call2_completion_call_id", |run| {
        nth_stream_matches_nth_completion(run, 1)
    }),
    ("two_call_ids_distinct_and_non_null", |run| {
        let ids: BTreeSet<String> = completions(run)
            .iter()
            .map(|c| str_of(c, "call_id").to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        ensure(ids.len() == 2, || format!("call ids {ids:?}"))
    }),
    ("all_token_events_share_one_call_id", |run| {
        let n = streams(run).len();
        ensure(n == 1, || format!("{n} call ids among the token events"))
    }),
    (
        "all_token_events_node_level_attempt_index_zero",
        node_level_index_zero,
    ),
    (
        "wire_retry_does_not_advance_node_level_attempt_index",
        node_level_index_zero,
    ),
    (
        "assembled_response_reflects_successful_attempt_only",
        successful_attempt_only,
    ),
    (
        "exactly_one_llm_complete_span_under_stream",
        one_span_no_children,
    ),
    ("no_per_token_child_spans", one_span_no_children),
    (
        "span_output_is_full_assembled_content",
        span_output_assembled,
    ),
    (
        "reasoning_content_field_recognized_as_reasoning_kind",
        |run| reasoning_tokens_match(run, "reasoning_content"),
    ),
    ("reasoning_field_recognized_as_reasoning_kind", |run| {
        reasoning_tokens_match(run, "reasoning")
    }),
    (
        "both_reasoning_field_names_produce_identical_token_events",
        any_reasoning_field,
    ),
    ("reasoning_deltas_precede_content_deltas", reasoning_first),
    (
        "reasoning_assembles_into_terminal_thinking_block",
        thinking_block,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks `name`, or `None` when it is not a streaming invariant.
pub(super) fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(run))
}
