//! Spec: conformance-adapter §5.9 — the llm-provider streaming invariants (059, 060,
//! 071, 073, 077; llm-provider §5 / §6 *Streaming assembly* / §8.1.6).
//!
//! Each check compares the call's response and token events with what the mock
//! actually streamed (the served chunks of the last request): the content deltas in
//! order, the reasoning deltas, the tool-call fragments by index, the last non-null
//! `finish_reason` and the usage chunk.

use openarmature_llm::{Content, ContentBlock, Response};
use serde_json::{Map, Value};

use super::CallRun;

use crate::failure::{ensure, Check};
use crate::table::{names, Table};

pub(super) type CheckFn = fn(&CallRun) -> Check;

/// What the served stream says the response must be.
#[derive(Default)]
struct Streamed {
    content: Option<String>,
    reasoning: String,
    tool_calls: Vec<(u64, String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

fn streamed(run: &CallRun) -> Check<Streamed> {
    let served = run
        .requests
        .last()
        .and_then(|r| r.served.as_ref())
        .and_then(Value::as_array)
        .ok_or("the mock streamed nothing")?;
    let mut out = Streamed::default();
    for chunk in served {
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            out.usage = Some(u.clone());
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                out.finish_reason = Some(f.to_owned());
            }
            let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
            let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default();
            out.reasoning.push_str(text("reasoning_content"));
            out.reasoning.push_str(text("reasoning"));
            if !text("content").is_empty() {
                out.content
                    .get_or_insert_with(String::new)
                    .push_str(text("content"));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let f = |k: &str| {
                    call.get("function")
                        .and_then(|f| f.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                match out.tool_calls.iter_mut().find(|c| c.0 == index) {
                    Some(c) => c.3.push_str(&f("arguments")),
                    None => out
                        .tool_calls
                        .push((index, id.to_owned(), f("name"), f("arguments"))),
                }
            }
        }
    }
    Ok(out)
}

fn response(run: &CallRun) -> Check<&Response> {
    match &run.result {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err("no response".into()),
        Err(e) => Err(format!("the call raised {}: {e}", e.category().as_str()).into()),
    }
}

fn tokens_of(run: &CallRun, kind: &str) -> String {
    run.tokens
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.delta.as_str())
        .collect()
}

fn sends_stream_flags(run: &CallRun) -> Check {
    let body = run.bodies().last().copied().ok_or("no request was sent")?;
    ensure(
        body.get("stream") == Some(&Value::Bool(true))
            && body.get("stream_options") == Some(&serde_json::json!({"include_usage": true})),
        || format!("wire body {body}"),
    )
}

fn content_is_concatenation(run: &CallRun) -> Check {
    let want = streamed(run)?.content;
    let got = response(run)?.message.text();
    ensure(got == want, || {
        format!("content {got:?}, streamed {want:?}")
    })?;
    let deltas = tokens_of(run, "content");
    ensure(Some(&deltas) == want.as_ref(), || {
        format!("content token deltas concatenate to {deltas:?}, streamed {want:?}")
    })?;
    let first = run.tokens.first().map(|t| t.call_id.as_str());
    ensure(
        run.tokens
            .iter()
            .enumerate()
            .all(|(i, t)| t.chunk_index as usize == i && Some(t.call_id.as_str()) == first),
        || "token events are not one call's 0-based chunk sequence".into(),
    )
}

fn usage_and_finish_from_terminal(run: &CallRun) -> Check {
    let s = streamed(run)?;
    let r = response(run)?;
    ensure(
        Some(r.finish_reason.as_str()) == s.finish_reason.as_deref(),
        || format!("finish_reason {} vs {:?}", r.finish_reason, s.finish_reason),
    )?;
    let usage = s.usage.ok_or("the stream carried no usage")?;
    ensure(r.raw.get("usage") == Some(&usage), || {
        format!(
            "raw.usage {:?} is not the terminal chunk's {usage}",
            r.raw.get("usage")
        )
    })?;
    normalized_counters(r, &usage)
}

fn normalized_counters(r: &Response, usage: &Value) -> Check {
    let counters = [
        ("prompt_tokens", r.usage.prompt_tokens),
        ("completion_tokens", r.usage.completion_tokens),
        ("total_tokens", r.usage.total_tokens),
    ];
    for (key, got) in counters {
        let want = usage.get(key).and_then(Value::as_u64);
        ensure(got == want, || {
            format!("usage.{key} is {got:?}, expected {want:?}")
        })?;
    }
    Ok(())
}

fn equals_non_streamed(run: &CallRun) -> Check {
    content_is_concatenation(run)?;
    usage_and_finish_from_terminal(run)?;
    let r = response(run)?;
    ensure(
        matches!(&r.message.content, None | Some(Content::Text(_))),
        || "the content is not the atomic (string) form".into(),
    )?;
    tool_calls_reassembled(run)
}

fn tool_calls_reassembled(run: &CallRun) -> Check {
    let want = streamed(run)?.tool_calls;
    let got = &response(run)?.message.tool_calls;
    ensure(got.len() == want.len(), || {
        format!("{} tool calls, streamed {}", got.len(), want.len())
    })?;
    for (call, (_, id, name, args)) in got.iter().zip(&want) {
        let parsed: Option<Map<String, Value>> = serde_json::from_str(args).ok();
        ensure(
            call.id == *id && call.name == *name && call.arguments == parsed,
            || format!("tool call {call:?} vs streamed ({id}, {name}, {args})"),
        )?;
    }
    ensure(run.tokens.iter().all(|t| t.kind != "tool_call"), || {
        "a tool_call token event was emitted".into()
    })
}

fn blocks(run: &CallRun) -> Check<&[ContentBlock]> {
    match &response(run)?.message.content {
        Some(Content::Blocks(b)) => Ok(b),
        other => Err(format!("content is not a block sequence: {other:?}").into()),
    }
}

fn reasoning_in_thinking_block(run: &CallRun) -> Check {
    let want = streamed(run)?.reasoning;
    let ok = matches!(blocks(run)?.first(), Some(ContentBlock::Thinking(t)) if t.text == want);
    ensure(ok && !want.is_empty(), || {
        format!("no leading thinking block with {want:?}")
    })
}

fn content_in_text_block(run: &CallRun) -> Check {
    let want = streamed(run)?.content.ok_or("no content was streamed")?;
    let ok = blocks(run)?
        .iter()
        .any(|b| matches!(b, ContentBlock::Text(t) if t.text == want));
    ensure(ok, || format!("no text block with {want:?}"))
}

fn reasoning_shape(run: &CallRun) -> Check {
    reasoning_in_thinking_block(run)?;
    content_in_text_block(run)?;
    let b = blocks(run)?;
    ensure(b.len() == 2, || {
        format!("{} blocks, expected thinking + text", b.len())
    })
}

fn rejected(run: &CallRun) -> Check {
    match &run.result {
        Err(e) if e.category().as_str() == "provider_invalid_request" => {}
        Err(e) => return Err(format!("raised {}", e.category().as_str()).into()),
        Ok(_) => return Err("the call succeeded".into()),
    }
    ensure(run.requests.is_empty(), || {
        format!("{} request(s) were sent", run.requests.len())
    })?;
    ensure(run.tokens.is_empty(), || "token events were emitted".into())
}

fn streamed_and_rejected(run: &CallRun) -> Check {
    ensure(run.streamed, || "the call was not streamed".into())?;
    rejected(run)
}

fn atomic_unaffected(run: &CallRun) -> Check {
    ensure(!run.streamed, || "the call was streamed".into())?;
    ensure(response(run)?.content().is_some(), || "no content".into())
}

fn terminal_usage_verbatim(run: &CallRun) -> Check {
    let usage = streamed(run)?.usage.ok_or("the stream carried no usage")?;
    let raw = response(run)?.raw.get("usage");
    ensure(raw == Some(&usage), || {
        format!("raw.usage {raw:?} != {usage}")
    })
}

fn malformed_counter_nulled(run: &CallRun) -> Check {
    let usage = streamed(run)?.usage.ok_or("the stream carried no usage")?;
    normalized_counters(response(run)?, &usage)
}

/// The llm-provider streaming `invariants`.
pub(super) const TABLE: &Table<CheckFn> = &[
    (
        "streamed_request_sends_stream_true_and_include_usage",
        sends_stream_flags,
    ),
    (
        "assembled_content_is_ordered_concatenation_of_deltas",
        content_is_concatenation,
    ),
    (
        "usage_and_finish_reason_sourced_from_terminal_chunks",
        usage_and_finish_from_terminal,
    ),
    (
        "finish_reason_tool_calls_sourced_from_terminal_content_chunk",
        usage_and_finish_from_terminal,
    ),
    (
        "assembled_response_equals_non_streamed_equivalent",
        equals_non_streamed,
    ),
    (
        "streamed_tool_call_arguments_reassemble_and_parse",
        tool_calls_reassembled,
    ),
    (
        "reassembled_tool_calls_equal_non_streamed_equivalent",
        tool_calls_reassembled,
    ),
    (
        "reasoning_delta_assembles_into_thinking_block",
        reasoning_in_thinking_block,
    ),
    (
        "content_delta_assembles_into_text_block",
        content_in_text_block,
    ),
    (
        "streamed_reasoning_response_shape_identical_to_non_streamed",
        reasoning_shape,
    ),
    (
        "stream_unsupported_mapping_rejects_pre_send",
        streamed_and_rejected,
    ),
    (
        "conditionally_managed_stream_options_conflict_rejected_pre_send",
        streamed_and_rejected,
    ),
    (
        "streaming_call_conflicting_stream_rejected_pre_send",
        streamed_and_rejected,
    ),
    ("no_token_events_on_rejected_stream", streamed_and_rejected),
    ("rejection_category_is_provider_invalid_request", rejected),
    ("no_silent_atomic_fallback", rejected),
    ("stream_options_neither_dropped_nor_forwarded", rejected),
    ("stream_neither_dropped_nor_forwarded", rejected),
    (
        "atomic_call_unaffected_by_streaming_rejection",
        atomic_unaffected,
    ),
    (
        "terminal_chunk_usage_preserved_verbatim_on_raw",
        terminal_usage_verbatim,
    ),
    (
        "malformed_terminal_counter_nulled_on_normalized_usage",
        malformed_counter_nulled,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);
