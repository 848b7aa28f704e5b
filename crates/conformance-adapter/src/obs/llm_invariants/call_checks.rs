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

/// Checks `name`, or `None` when it is not a request-side typed-event invariant.
#[allow(clippy::too_many_lines)]
pub(super) fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    Some(match name {
        // 060
        "input_messages_populated_unconditionally" => {
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
        "input_messages_shape_matches_llm_provider_section_3" => {
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
        // 061
        "output_content_null_when_tool_calls_present_with_empty_content" => {
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
        // 062 / 063
        "request_params_carries_only_caller_supplied_keys" | "absence_distinct_from_zero_value" => {
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
        "request_extras_is_native_mapping_not_json_string" => {
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
        // 065
        "active_prompt_null_parallels_prompt_attr_absence_on_span" => {
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
        // 067 / 071
        "all_call_ids_present" | "all_call_ids_are_non_empty_strings" => {
            let events = completions(run);
            ensure(!events.is_empty(), || "no LlmCompletionEvent".into())
                .and_then(|()| call_ids(&events).map(|_| ()))
        }
        "call_ids_pairwise_distinct" => call_ids(&completions(run)).and_then(|ids| {
            let set: BTreeSet<&String> = ids.iter().collect();
            ensure(
                set.len() == ids.len() && ids.len() == run.calls.len(),
                || format!("call ids {ids:?} for {} calls", run.calls.len()),
            )
        }),
        "completion_event_call_id_present_and_non_empty" => {
            let events = completions(run);
            exactly(&events, 1, "LlmCompletionEvent").and_then(|()| call_ids(&events).map(|_| ()))
        }
        "failed_event_call_id_present_and_non_empty" => {
            let events = failures(run);
            exactly(&events, 1, "LlmFailedEvent").and_then(|()| call_ids(&events).map(|_| ()))
        }
        "completion_and_failed_event_call_ids_distinct" => {
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
        // 068
        "response_model_distinct_from_request_model" => completions(run).iter().try_for_each(|e| {
            let (m, r) = (field(e, "model"), field(e, "response_model"));
            ensure(m.is_string() && r.is_string() && m != r, || {
                format!("model {m}, response_model {r}")
            })
        }),
        "response_model_null_when_absent_from_response" => {
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
        // 069–072
        "exactly_one_llm_failed_event_observed"
        | "exactly_one_llm_failed_event_per_failed_call" => {
            exactly(&failures(run), 1, "LlmFailedEvent").and_then(|()| {
                ensure(failed_calls(run) == 1, || {
                    format!("{} failed calls", failed_calls(run))
                })
            })
        }
        "zero_llm_completion_events_on_failed_call"
        | "zero_llm_completion_events_per_failed_call" => exactly(
            &completions(run),
            successful_calls(run),
            "LlmCompletionEvent",
        )
        .and_then(|()| exactly(&completions(run), 0, "LlmCompletionEvent")),
        "exception_propagates_alongside_typed_event"
        | "error_category_matches_raised_exception_category" => raised(run).and_then(|category| {
            let events = failures(run);
            ensure(
                !events.is_empty()
                    && events
                        .iter()
                        .all(|e| field(e, "error_category") == &Value::from(category.as_str())),
                || format!("raised {category}; failure events {events:?}"),
            )
        }),
        // 121 / 122: the failure event's response side.
        "finish_reason_is_stop_not_truncation" => failures(run).iter().try_for_each(|e| {
            ensure(field(e, "finish_reason") == "stop", || {
                format!("finish_reason {}", field(e, "finish_reason"))
            })
        }),
        "response_side_surface_null_for_non_structured_output_failure" => {
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
        _ => return None,
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
