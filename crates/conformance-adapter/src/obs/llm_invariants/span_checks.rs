//! Spec: conformance-adapter §5.9 — the LLM-span invariants of the observability
//! suite's LLM fixtures: caller metadata on every span (026), cache attributes
//! (040–042), the attempt index (057), §5.5.10 tool-call identity projections
//! (085–087) and the error span's response side (124).

use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::{ensure, field, one_span};
use crate::failure::{mismatch, Check};
use crate::matchers::json_eq;
use crate::obs::spans::attr;
use crate::obs::typed::usage_json;
use crate::obs::Run;
use crate::table::{lookup, names, Table};

const CACHE_READ: &str = a::LLM_CACHE_READ_INPUT_TOKENS;
const CACHE_CREATION: &str = a::LLM_CACHE_CREATION_INPUT_TOKENS;

/// The LLM-span invariants (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    // 026
    ("caller_metadata_cross_cutting", caller_metadata_everywhere),
    // 040–042: cache attributes against the response's usage record.
    (
        "cache_read_attribute_equals_usage_field",
        cache_read_equals_usage,
    ),
    (
        "cache_creation_attribute_absent_for_openai_compatible",
        |run| {
            one_span(run).and_then(|s| {
                let usage = one_usage(run)?;
                ensure(
                    cache_attr(s, CACHE_CREATION).is_none()
                        && field(&usage, "cache_creation_tokens").is_null(),
                    || "cache_creation is populated".into(),
                )
            })
        },
    ),
    (
        "cache_attribute_absent_when_field_unpopulated",
        cache_absent_when_unpopulated,
    ),
    ("absent_distinct_from_zero", cache_absent_when_unpopulated),
    (
        "cache_read_attribute_emits_zero_when_reported",
        cache_read_zero_when_reported,
    ),
    (
        "reported_zero_distinct_from_absent",
        cache_read_zero_when_reported,
    ),
    // 057
    ("exactly_one_llm_span_when_retry_absent", |run| {
        one_span(run).map(|_| ())
    }),
    ("attempt_index_defaults_to_zero", |run| {
        one_span(run).and_then(|s| {
            let got = attr(s, a::LLM_ATTEMPT_INDEX);
            ensure(got == Some(Value::from(0)), || {
                format!("attempt_index {got:?}")
            })
        })
    }),
    (
        "baseline_attributes_still_emit_alongside_attempt_index",
        baseline_attributes,
    ),
    // 085–087: §5.5.10 tool-call identity projections.
    ("tool_call_names_and_ids_index_aligned", tool_call_identity),
    ("tool_call_arrays_in_request_order", tool_call_identity),
    ("count_equals_names_length", tool_call_identity),
    (
        "identity_projections_survive_payload_off",
        tool_call_identity,
    ),
    (
        "identity_projections_present_regardless_of_flag",
        tool_call_identity,
    ),
    (
        "tool_call_attributes_omitted_when_none_requested",
        tool_call_attributes_omitted,
    ),
    (
        "gated_output_tool_calls_suppressed_when_payload_off",
        |run| {
            one_span(run).and_then(|s| {
                ensure(attr(s, a::LLM_OUTPUT_TOOL_CALLS).is_none(), || {
                    "the gated output.tool_calls is present".into()
                })
            })
        },
    ),
    // 124: the error span keeps the response side (proposal 0082).
    ("error_span_carries_output_usage_finish_reason", |run| {
        error_span(run, true, true)
    }),
    ("error_status_and_exception_event_unchanged", |run| {
        error_span(run, false, true)
    }),
    (
        "finish_reason_usage_and_error_status_unchanged_under_payload_disabled",
        |run| error_span(run, false, true),
    ),
    ("output_content_redacted_under_payload_disabled", |run| {
        one_span(run).and_then(|s| {
            ensure(attr(s, a::LLM_OUTPUT_CONTENT).is_none(), || {
                "output.content is present with payload off".into()
            })
        })
    }),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks `name`, or `None` when it is not an LLM-span invariant.
pub(super) fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(run))
}

/// 040: the cache-read attribute equals the usage's `cached_tokens`.
fn cache_read_equals_usage(run: &Run<'_>) -> Check {
    one_span(run).and_then(|s| {
        let usage = one_usage(run)?;
        let want = field(&usage, "cached_tokens");
        let got = cache_attr(s, CACHE_READ).unwrap_or(Value::Null);
        ensure(!want.is_null() && json_eq(&got, want), || {
            format!("cache_read attribute {got}, usage.cached_tokens {want}")
        })
    })
}

/// 040–042: no cache attribute when the usage reports no cached tokens.
fn cache_absent_when_unpopulated(run: &Run<'_>) -> Check {
    one_span(run).and_then(|s| {
        let usage = one_usage(run)?;
        ensure(
            field(&usage, "cached_tokens").is_null()
                && cache_attr(s, CACHE_READ).is_none()
                && cache_attr(s, CACHE_CREATION).is_none(),
            || format!("usage {usage}; cache_read {:?}", cache_attr(s, CACHE_READ)),
        )
    })
}

/// 040–042: a reported zero is emitted as zero.
fn cache_read_zero_when_reported(run: &Run<'_>) -> Check {
    one_span(run).and_then(|s| {
        let usage = one_usage(run)?;
        let got = cache_attr(s, CACHE_READ);
        ensure(
            field(&usage, "cached_tokens") == &Value::from(0)
                && got.as_ref().is_some_and(|g| json_eq(g, &Value::from(0))),
            || format!("usage {usage}; cache_read {got:?}"),
        )
    })
}

/// 057: the baseline LLM attributes are on the span with the attempt index.
fn baseline_attributes(run: &Run<'_>) -> Check {
    one_span(run).and_then(|s| {
        [
            a::LLM_MODEL,
            a::LLM_FINISH_REASON,
            a::LLM_USAGE_PROMPT_TOKENS,
            a::LLM_USAGE_COMPLETION_TOKENS,
            a::LLM_USAGE_TOTAL_TOKENS,
            a::LLM_ATTEMPT_INDEX,
        ]
        .iter()
        .try_for_each(|k| ensure(attr(s, k).is_some(), || format!("`{k}` is missing")))
    })
}

/// 085–087: no tool-call projection when the reply requested no tools.
fn tool_call_attributes_omitted(run: &Run<'_>) -> Check {
    one_span(run).and_then(|s| {
        ensure(tool_calls_of(run)?.is_empty(), || {
            "the reply requested tools".into()
        })?;
        [
            a::LLM_OUTPUT_TOOL_CALLS_COUNT,
            a::LLM_OUTPUT_TOOL_CALLS_NAMES,
            a::LLM_OUTPUT_TOOL_CALLS_IDS,
        ]
        .iter()
        .try_for_each(|k| ensure(attr(s, k).is_none(), || format!("`{k}` is present")))
    })
}

/// Every span attribute from the case's caller metadata is present with its value.
fn caller_metadata_everywhere(run: &Run<'_>) -> Check {
    let metadata = run.caller_metadata();
    ensure(!metadata.is_empty(), || {
        "the case has no caller metadata".into()
    })?;
    ensure(!run.llm_spans().is_empty(), || "no LLM span".into())?;
    for span in &run.forest.spans {
        for (k, v) in &metadata {
            let key = format!("{}{k}", a::USER_PREFIX);
            let got =
                attr(span, &key).ok_or_else(|| format!("span `{}` lacks `{key}`", span.name))?;
            ensure(json_eq(&got, v), || {
                format!("span `{}`: `{key}` is {got}, expected {v}", span.name)
            })?;
        }
    }
    Ok(())
}

fn cache_attr(span: &SpanData, key: &str) -> Option<Value> {
    attr(span, key)
}

/// The usage of the one successful call.
fn one_usage(run: &Run<'_>) -> Check<Value> {
    match run.calls.as_slice() {
        [call] => Ok(call
            .result
            .as_ref()
            .map(|r| usage_json(&r.usage))
            .map_err(|e| format!("the call raised {e}"))?),
        other => mismatch(format!("{} calls, expected one", other.len())),
    }
}

/// The `(id, name)` pairs of the one call's reply.
fn tool_calls_of(run: &Run<'_>) -> Check<Vec<(String, String)>> {
    match run.calls.as_slice() {
        [call] => Ok(call
            .result
            .as_ref()
            .map(|r| {
                r.message
                    .tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect()
            })
            .map_err(|e| format!("the call raised {e}"))?),
        other => mismatch(format!("{} calls, expected one", other.len())),
    }
}

/// §5.5.10: count / names / ids equal the reply's tool calls, in order.
fn tool_call_identity(run: &Run<'_>) -> Check {
    let s = one_span(run)?;
    let calls = tool_calls_of(run)?;
    ensure(!calls.is_empty(), || "the reply requested no tools".into())?;
    let ids: Vec<Value> = calls.iter().map(|(i, _)| Value::from(i.as_str())).collect();
    let names: Vec<Value> = calls.iter().map(|(_, n)| Value::from(n.as_str())).collect();
    let got = |k: &str| attr(s, k).unwrap_or(Value::Null);
    ensure(
        got(a::LLM_OUTPUT_TOOL_CALLS_COUNT) == calls.len()
            && got(a::LLM_OUTPUT_TOOL_CALLS_IDS) == Value::Array(ids)
            && got(a::LLM_OUTPUT_TOOL_CALLS_NAMES) == Value::Array(names),
        || {
            format!(
                "count {}, names {}, ids {} for {calls:?}",
                got(a::LLM_OUTPUT_TOOL_CALLS_COUNT),
                got(a::LLM_OUTPUT_TOOL_CALLS_NAMES),
                got(a::LLM_OUTPUT_TOOL_CALLS_IDS)
            )
        },
    )
}

/// The one LLM span is ERROR (description = its category, exception recorded) and
/// keeps the response side: finish reason and usage, plus the output content when
/// `with_content`.
fn error_span(run: &Run<'_>, with_content: bool, with_usage: bool) -> Check {
    let s = one_span(run)?;
    let category = attr(s, a::ERROR_CATEGORY).unwrap_or(Value::Null);
    let status_ok = matches!(&s.status, opentelemetry::trace::Status::Error { description }
        if category.as_str() == Some(description.as_ref()));
    ensure(status_ok && crate::obs::spans::has_exception(s), || {
        format!("status {:?}, category {category}", s.status)
    })?;
    let mut keys = vec![a::LLM_FINISH_REASON];
    if with_usage {
        keys.extend([
            a::LLM_USAGE_PROMPT_TOKENS,
            a::LLM_USAGE_COMPLETION_TOKENS,
            a::LLM_USAGE_TOTAL_TOKENS,
        ]);
    }
    if with_content {
        keys.push(a::LLM_OUTPUT_CONTENT);
    }
    keys.iter()
        .try_for_each(|k| ensure(attr(s, k).is_some(), || format!("`{k}` is missing")))
}
