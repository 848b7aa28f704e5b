//! Spec: conformance-adapter §5.9 — the typed-event request-side invariants of the
//! observability suite's LLM fixtures: input messages (060), output content with
//! tool calls (061), request params and extras (062 / 063), the active prompt (065),
//! call ids (067 / 071), the response model (068), failure events (069–072) and
//! the failure event's response side (121 / 122).

use std::collections::BTreeSet;

use openarmature_llm::Message;
use serde_json::{Map, Value};

use super::{
    call_ids, completions, ensure, exactly, failed_calls, failures, field, raised, successful_calls,
};
use crate::failure::{Check, Failure};
use crate::matchers::json_eq;
use crate::obs::Run;
use crate::table::{lookup, names, Table};

/// The request-side typed-event invariants (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    // 060
    (
        "input_messages_populated_unconditionally",
        input_messages_populated,
    ),
    (
        "input_messages_shape_matches_llm_provider_section_3",
        input_messages_shape,
    ),
    // 061
    (
        "output_content_null_when_tool_calls_present_with_empty_content",
        output_content_null_with_tool_calls,
    ),
    // 062 / 063
    (
        "request_params_carries_only_caller_supplied_keys",
        request_params_supplied_only,
    ),
    (
        "absence_distinct_from_zero_value",
        request_params_supplied_only,
    ),
    (
        "request_extras_is_native_mapping_not_json_string",
        request_extras_mapping,
    ),
    // 065
    (
        "active_prompt_null_parallels_prompt_attr_absence_on_span",
        active_prompt_null,
    ),
    // 067 / 071
    ("all_call_ids_present", all_call_ids),
    ("all_call_ids_are_non_empty_strings", all_call_ids),
    ("call_ids_pairwise_distinct", |run| {
        call_ids(&completions(run)).and_then(|ids| {
            let set: BTreeSet<&String> = ids.iter().collect();
            ensure(
                set.len() == ids.len() && ids.len() == run.calls.len(),
                || format!("call ids {ids:?} for {} calls", run.calls.len()),
            )
        })
    }),
    ("completion_event_call_id_present_and_non_empty", |run| {
        let events = completions(run);
        exactly(&events, 1, "LlmCompletionEvent").and_then(|()| call_ids(&events).map(|_| ()))
    }),
    ("failed_event_call_id_present_and_non_empty", |run| {
        let events = failures(run);
        exactly(&events, 1, "LlmFailedEvent").and_then(|()| call_ids(&events).map(|_| ()))
    }),
    (
        "completion_and_failed_event_call_ids_distinct",
        completion_and_failure_ids_distinct,
    ),
    // 068
    ("response_model_distinct_from_request_model", |run| {
        completions(run).iter().try_for_each(|e| {
            let (m, r) = (field(e, "model"), field(e, "response_model"));
            ensure(m.is_string() && r.is_string() && m != r, || {
                format!("model {m}, response_model {r}")
            })
        })
    }),
    (
        "response_model_null_when_absent_from_response",
        response_model_null,
    ),
    // 069–072
    ("exactly_one_llm_failed_event_observed", one_failed_event),
    (
        "exactly_one_llm_failed_event_per_failed_call",
        one_failed_event,
    ),
    (
        "zero_llm_completion_events_on_failed_call",
        no_completion_on_failure,
    ),
    (
        "zero_llm_completion_events_per_failed_call",
        no_completion_on_failure,
    ),
    (
        "exception_propagates_alongside_typed_event",
        category_matches_raised,
    ),
    (
        "error_category_matches_raised_exception_category",
        category_matches_raised,
    ),
    // 121 / 122: the failure event's response side.
    ("finish_reason_is_stop_not_truncation", |run| {
        failures(run).iter().try_for_each(|e| {
            ensure(field(e, "finish_reason") == "stop", || {
                format!("finish_reason {}", field(e, "finish_reason"))
            })
        })
    }),
    (
        "response_side_surface_null_for_non_structured_output_failure",
        response_side_null,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks `name`, or `None` when it is not a request-side typed-event invariant.
pub(super) fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(run))
}

/// 060: every typed LLM event carries a non-empty `input_messages`.
fn input_messages_populated(run: &Run<'_>) -> Check {
    let events = [completions(run), failures(run)].concat();
    ensure(!events.is_empty(), || "no typed LLM event".into()).and_then(|()| {
        events.iter().try_for_each(|e| {
            ensure(
                field(e, "input_messages")
                    .as_array()
                    .is_some_and(|m| !m.is_empty()),
                || format!("input_messages in {e}"),
            )
        })
    })
}

/// 060: every input message is an llm-provider §3 message.
fn input_messages_shape(run: &Run<'_>) -> Check {
    completions(run).iter().try_for_each(|e| {
        field(e, "input_messages")
            .as_array()
            .ok_or("input_messages is not a list")?
            .iter()
            .try_for_each(|m| {
                Message::from_json(m)
                    .map(|_| ())
                    .map_err(|x| Failure::mismatch(format!("{m} is not a §3 message: {x}")))
            })
    })
}

/// 061: a tool-calling completion with empty content reports `output_content` null.
fn output_content_null_with_tool_calls(run: &Run<'_>) -> Check {
    let with_calls: Vec<Value> = completions(run)
        .into_iter()
        .filter(|e| {
            field(e, "output_tool_calls")
                .as_array()
                .is_some_and(|c| !c.is_empty())
        })
        .collect();
    ensure(!with_calls.is_empty(), || {
        "no tool-calling completion".into()
    })
    .and_then(|()| {
        with_calls.iter().try_for_each(|e| {
            ensure(field(e, "output_content").is_null(), || {
                format!("output_content {}", field(e, "output_content"))
            })
        })
    })
}

/// 062 / 063: `request_params` holds exactly the keys the caller supplied, none null.
fn request_params_supplied_only(run: &Run<'_>) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into()).and_then(|()| {
        events.iter().try_for_each(|e| {
            let supplied = Value::Object(supplied_params(run, e));
            let got = field(e, "request_params");
            ensure(
                json_eq(got, &supplied)
                    && got
                        .as_object()
                        .is_some_and(|m| m.values().all(|v| !v.is_null())),
                || format!("request_params {got}, supplied {supplied}"),
            )
        })
    })
}

/// 062 / 063: `request_extras` is a non-empty mapping.
fn request_extras_mapping(run: &Run<'_>) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into()).and_then(|()| {
        events.iter().try_for_each(|e| {
            ensure(
                field(e, "request_extras")
                    .as_object()
                    .is_some_and(|m| !m.is_empty()),
                || format!("request_extras {}", field(e, "request_extras")),
            )
        })
    })
}

/// 065: no active prompt on the events, no prompt attribute on the LLM spans.
fn active_prompt_null(run: &Run<'_>) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())
        .and_then(|()| {
            events.iter().try_for_each(|e| {
                ensure(field(e, "active_prompt").is_null(), || {
                    "active_prompt".into()
                })
            })
        })
        .and_then(|()| {
            run.llm_spans().iter().try_for_each(|s| {
                ensure(
                    !s.attributes
                        .iter()
                        .any(|kv| kv.key.as_str().starts_with("openarmature.prompt.")),
                    || "an openarmature.prompt.* attribute is on the LLM span".into(),
                )
            })
        })
}

/// 067 / 071: every completion event has a non-empty call id.
fn all_call_ids(run: &Run<'_>) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())
        .and_then(|()| call_ids(&events).map(|_| ()))
}

/// 067 / 071: the completion and the failure events have call ids, none shared.
fn completion_and_failure_ids_distinct(run: &Run<'_>) -> Check {
    let done = call_ids(&completions(run));
    let failed = call_ids(&failures(run));
    done.and_then(|d| {
        let f = failed?;
        ensure(
            !d.is_empty() && !f.is_empty() && d.iter().all(|x| !f.contains(x)),
            || format!("completion {d:?} / failure {f:?}"),
        )
    })
}

/// 068: `response_model` is null (the request `model` a string) on every completion.
fn response_model_null(run: &Run<'_>) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into()).and_then(|()| {
        events.iter().try_for_each(|e| {
            ensure(
                field(e, "response_model").is_null() && field(e, "model").is_string(),
                || format!("response_model {}", field(e, "response_model")),
            )
        })
    })
}

/// 069–072: one failure event, for the one failed call.
fn one_failed_event(run: &Run<'_>) -> Check {
    exactly(&failures(run), 1, "LlmFailedEvent").and_then(|()| {
        ensure(failed_calls(run) == 1, || {
            format!("{} failed calls", failed_calls(run))
        })
    })
}

/// 069–072: no completion event for a failed call.
fn no_completion_on_failure(run: &Run<'_>) -> Check {
    exactly(
        &completions(run),
        successful_calls(run),
        "LlmCompletionEvent",
    )
    .and_then(|()| exactly(&completions(run), 0, "LlmCompletionEvent"))
}

/// 069–072: the failure events carry the category the invocation raised.
fn category_matches_raised(run: &Run<'_>) -> Check {
    raised(run).and_then(|category| {
        let events = failures(run);
        ensure(
            !events.is_empty()
                && events
                    .iter()
                    .all(|e| field(e, "error_category") == &Value::from(category.as_str())),
            || format!("raised {category}; failure events {events:?}"),
        )
    })
}

/// 121 / 122: a failure other than `structured_output_invalid` has no response side.
fn response_side_null(run: &Run<'_>) -> Check {
    let events = failures(run);
    ensure(!events.is_empty(), || "no LlmFailedEvent".into()).and_then(|()| {
        events
            .iter()
            .filter(|e| field(e, "error_category") != "structured_output_invalid")
            .try_for_each(|e| {
                [
                    "output_content",
                    "finish_reason",
                    "usage",
                    "response_id",
                    "response_model",
                ]
                .iter()
                .try_for_each(|k| {
                    ensure(field(e, k).is_null(), || format!("{k} is {}", field(e, k)))
                })
            })
    })
}

/// The calls_llm `config` of the node an event came from (declared fields only).
fn supplied_params(run: &Run<'_>, e: &Value) -> Map<String, Value> {
    let node = field(e, "node_name").as_str().unwrap_or_default();
    let config = run
        .call_configs()
        .into_iter()
        .find(|(n, _)| n == node)
        .map(|(_, c)| c)
        .unwrap_or(Value::Null);
    config
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| *k != "extras")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}
