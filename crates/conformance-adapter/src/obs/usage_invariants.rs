//! Spec: conformance-adapter §5.9 — the named invariants of the observability §5.5.3
//! per-field usage fixtures (144: a null counter on the wire; 149: malformed wire
//! counters nulled by the llm-provider §7 mapping), checked against three independent
//! surfaces of each completed call:
//!
//! - the **wire** counters: the `usage` of the `mock_llm` body the call received
//!   (found by its `id`), as the fixture wrote it;
//! - the **event** counters: the `usage` of the implicit recorder's
//!   `LlmCompletionEvent` (graph-engine §6 mirror of the response);
//! - the **span** attributes: the `openarmature.llm.complete` span whose
//!   `gen_ai.response.id` is the event's `response_id`.
//!
//! Every predicate first requires the situation it is about (a null or malformed wire
//! counter, a sound one), so none passes vacuously. An unknown name falls through to
//! the caller, which fails the case.

use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};

use super::spans::{attr, attr_str};
use super::{typed, Run};

use super::invariants::truthy;
use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};

/// The three §6 counters, with the span attributes that render each (§5.5.3).
const COUNTERS: [(&str, &[&str]); 3] = [
    (
        "prompt_tokens",
        &[a::GEN_AI_USAGE_INPUT_TOKENS, a::LLM_USAGE_PROMPT_TOKENS],
    ),
    (
        "completion_tokens",
        &[
            a::GEN_AI_USAGE_OUTPUT_TOKENS,
            a::LLM_USAGE_COMPLETION_TOKENS,
        ],
    ),
    ("total_tokens", &[a::LLM_USAGE_TOTAL_TOKENS]),
];

/// One completed call seen on its three surfaces.
struct Call<'r> {
    id: String,
    /// The wire `usage` object (`None` when the body had none).
    wire: Option<Map<String, Value>>,
    /// The event's `usage` field, verbatim (a present record or null).
    event: Value,
    span: &'r SpanData,
}

impl Call<'_> {
    fn wire(&self, counter: &str) -> Option<&Value> {
        self.wire.as_ref().and_then(|u| u.get(counter))
    }

    fn event(&self, counter: &str) -> &Value {
        self.event.get(counter).unwrap_or(&Value::Null)
    }
}

/// The 2xx `mock_llm` bodies, by their `id`.
fn wire_bodies(run: &Run<'_>) -> Vec<Value> {
    run.case
        .get("mock_llm")
        .and_then(|m| m.json().ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.get("status")
                .and_then(Value::as_u64)
                .is_none_or(|s| (200..300).contains(&s))
        })
        .filter_map(|e| e.get("body").cloned())
        .collect()
}

/// Every completed call on its three surfaces; fails when a surface is missing.
fn calls<'r>(run: &'r Run<'_>) -> Check<Vec<Call<'r>>> {
    let bodies = wire_bodies(run);
    let spans = run.llm_spans();
    let mut out = Vec::new();
    for record in run.events.iter().filter_map(|e| typed::record(e, None)) {
        if record.get("event_type").and_then(Value::as_str) != Some("LlmCompletionEvent") {
            continue;
        }
        let id = record
            .get("response_id")
            .and_then(Value::as_str)
            .ok_or("an LlmCompletionEvent has no response_id to pair it by")?
            .to_owned();
        let body = bodies
            .iter()
            .find(|b| b.get("id").and_then(Value::as_str) == Some(id.as_str()))
            .ok_or_else(|| format!("no mock_llm body has id `{id}`"))?;
        let span = spans
            .iter()
            .copied()
            .find(|s| attr_str(s, a::GEN_AI_RESPONSE_ID).as_deref() == Some(id.as_str()))
            .ok_or_else(|| format!("no LLM span has {} `{id}`", a::GEN_AI_RESPONSE_ID))?;
        out.push(Call {
            wire: body.get("usage").and_then(Value::as_object).cloned(),
            event: record.get("usage").cloned().unwrap_or(Value::Null),
            span,
            id,
        });
    }
    ensure(!out.is_empty(), || "no completed LLM call".into())?;
    Ok(out)
}

/// A wire counter the §7 mapping must null: present but not a non-negative integer.
fn malformed(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null() && !v.is_u64())
}

/// A wire counter that reports no value: absent, null, or malformed.
fn unreported(v: Option<&Value>) -> bool {
    v.is_none_or(|v| !v.is_u64())
}

/// Every span attribute rendering `counter` is absent on the call's span.
fn omitted(call: &Call<'_>, counter: &str) -> Check {
    for (c, keys) in COUNTERS {
        if c != counter {
            continue;
        }
        for k in keys {
            if let Some(v) = attr(call.span, k) {
                return Err(format!(
                    "call `{}`: {counter} is not reported, yet the span carries `{k}` ({v})",
                    call.id
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Every span attribute rendering `counter` equals the sound wire value.
fn rendered(call: &Call<'_>, counter: &str) -> Check {
    let want = call
        .wire(counter)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("call `{}`: {counter} is not sound on the wire", call.id))?;
    for (c, keys) in COUNTERS {
        if c != counter {
            continue;
        }
        for k in keys {
            let got = attr(call.span, k).and_then(|v| v.as_u64());
            ensure(got == Some(want), || {
                format!("call `{}`: `{k}` is {got:?}, expected {want}", call.id)
            })?;
        }
    }
    Ok(())
}

/// The calls whose wire `counter` satisfies `pick`; at least one must.
fn picked<'c, 'r>(
    calls: &'c [Call<'r>],
    counter: &str,
    pick: fn(Option<&Value>) -> bool,
    what: &str,
) -> Check<Vec<&'c Call<'r>>> {
    let out: Vec<&Call<'_>> = calls.iter().filter(|c| pick(c.wire(counter))).collect();
    ensure(!out.is_empty(), || {
        format!("no call received a {what} {counter} on the wire")
    })?;
    Ok(out)
}

/// 144: a null (or malformed) `prompt_tokens` reaches neither input attribute.
fn input_omitted(run: &Run<'_>) -> Check {
    let calls = calls(run)?;
    for call in picked(&calls, "prompt_tokens", unreported, "unreported")? {
        omitted(call, "prompt_tokens")?;
    }
    Ok(())
}

/// 144: the sound output and total counters still render, with the wire values.
fn sound_rendered(run: &Run<'_>) -> Check {
    let calls = calls(run)?;
    for counter in ["completion_tokens", "total_tokens"] {
        for call in picked(&calls, counter, |v| v.is_some_and(Value::is_u64), "sound")? {
            rendered(call, counter)?;
        }
    }
    Ok(())
}

/// 144: `gen_ai.usage.input_tokens` is present exactly when `prompt_tokens` is sound,
/// and then carries it.
fn input_never_from_null(run: &Run<'_>) -> Check {
    let calls = calls(run)?;
    picked(&calls, "prompt_tokens", unreported, "unreported")?;
    for call in &calls {
        let got = attr(call.span, a::GEN_AI_USAGE_INPUT_TOKENS);
        let want = call.wire("prompt_tokens").and_then(Value::as_u64);
        ensure(got.as_ref().and_then(Value::as_u64) == want, || {
            format!(
                "call `{}`: `{}` is {got:?}, the wire prompt_tokens {:?}",
                call.id,
                a::GEN_AI_USAGE_INPUT_TOKENS,
                call.wire("prompt_tokens")
            )
        })?;
    }
    Ok(())
}

/// 149: each malformed wire counter among `counters` is null on the event (not the
/// wire value) and reaches no span attribute.
fn malformed_nulled(run: &Run<'_>, counters: &[&str], event: bool, span: bool) -> Check {
    let calls = calls(run)?;
    for counter in counters {
        for call in picked(&calls, counter, malformed, "malformed")? {
            if event {
                ensure(call.event(counter).is_null(), || {
                    format!(
                        "call `{}`: the event's {counter} is {}, wire {:?}; expected null",
                        call.id,
                        call.event(counter),
                        call.wire(counter)
                    )
                })?;
            }
            if span {
                omitted(call, counter)?;
            }
        }
    }
    Ok(())
}

/// 149: the event carries a present usage record (an object) whose counters are all
/// null, never a null usage.
fn present_record_of_nulls(run: &Run<'_>) -> Check {
    let calls = calls(run)?;
    let names = COUNTERS.map(|(c, _)| c);
    let all_malformed: Vec<&Call<'_>> = calls
        .iter()
        .filter(|c| names.iter().all(|n| malformed(c.wire(n))))
        .collect();
    ensure(!all_malformed.is_empty(), || {
        "no call received three malformed counters".into()
    })?;
    for call in all_malformed {
        ensure(call.event.is_object(), || {
            format!("call `{}`: the event's usage is {}", call.id, call.event)
        })?;
        for n in names {
            ensure(call.event(n).is_null(), || {
                format!("call `{}`: the event's {n} is {}", call.id, call.event(n))
            })?;
        }
    }
    Ok(())
}

/// Every usage counter.
const ALL: &[&str] = &["prompt_tokens", "completion_tokens", "total_tokens"];

/// The observability `invariants` this module checks (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    (
        "input_usage_attributes_omitted_when_prompt_tokens_null",
        input_omitted,
    ),
    (
        "output_and_total_usage_attributes_emitted_when_sound",
        sound_rendered,
    ),
    (
        "gen_ai_input_tokens_never_sourced_from_null_counter",
        input_never_from_null,
    ),
    (
        "malformed_wire_prompt_tokens_nulled_before_event_and_span",
        |run: &Run<'_>| malformed_nulled(run, &["prompt_tokens"], true, true),
    ),
    (
        "event_usage_prompt_tokens_null_not_verbatim_wire_value",
        |run: &Run<'_>| malformed_nulled(run, &["prompt_tokens"], true, false),
    ),
    (
        "span_omits_both_input_usage_attributes_on_malformed_wire_counter",
        |run: &Run<'_>| malformed_nulled(run, &["prompt_tokens"], false, true),
    ),
    (
        "all_three_malformed_wire_counters_nulled_before_event_and_span",
        |run: &Run<'_>| malformed_nulled(run, ALL, true, true),
    ),
    (
        "event_usage_is_present_record_of_nulls_not_null_record",
        present_record_of_nulls,
    ),
    (
        "span_omits_all_usage_attributes_when_all_counters_malformed",
        |run: &Run<'_>| malformed_nulled(run, ALL, false, true),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The usage invariant `name` (its value must be `true`), or `None` when it is not
/// one of these.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let verdict = lookup(TABLE, name)?;
    Some(truthy(v).and_then(|()| verdict(run)))
}
