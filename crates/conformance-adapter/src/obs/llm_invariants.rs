//! Spec: conformance-adapter §5.9 — the named invariants of the observability suite's
//! LLM fixtures (LLM spans, cache attributes, typed `LlmCompletionEvent` /
//! `LlmFailedEvent`), each checked concretely against the exported spans, the
//! implicit recorder's events (every event of the invocation, in delivery order), the
//! typed observers' storage and the calls the nodes made. An unknown name falls
//! through to the caller, which fails the case.

use std::collections::BTreeSet;

use openarmature_llm::Message;
use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value};

use super::spans::attr;
use super::typed::{self, usage_json};
use super::Run;
use crate::matchers::json_eq;

fn fail<T>(m: impl Into<String>) -> Result<T, String> {
    Err(m.into())
}

fn ensure(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// The implicit recorder's spec events as fixture records, in delivery order.
fn records(run: &Run<'_>) -> Vec<Value> {
    run.events
        .iter()
        .filter_map(|e| typed::record(e, None))
        .collect()
}

fn of_type(records: &[Value], t: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some(t))
        .cloned()
        .collect()
}

fn completions(run: &Run<'_>) -> Vec<Value> {
    of_type(&records(run), "LlmCompletionEvent")
}

fn failures(run: &Run<'_>) -> Vec<Value> {
    of_type(&records(run), "LlmFailedEvent")
}

fn field<'v>(r: &'v Value, k: &str) -> &'v Value {
    r.get(k).unwrap_or(&Value::Null)
}

fn exactly(events: &[Value], n: usize, what: &str) -> Result<(), String> {
    ensure(events.len() == n, || {
        format!("{} {what}, expected {n}", events.len())
    })
}

fn one_span<'r>(run: &'r Run<'_>) -> Result<&'r SpanData, String> {
    match run.llm_spans().as_slice() {
        [one] => Ok(one),
        other => fail(format!("{} LLM spans, expected one", other.len())),
    }
}

fn successful_calls(run: &Run<'_>) -> usize {
    run.calls.iter().filter(|c| c.result.is_ok()).count()
}

fn failed_calls(run: &Run<'_>) -> usize {
    run.calls.iter().filter(|c| c.result.is_err()).count()
}

/// The §7 category the first failed invocation raised through a node.
fn raised(run: &Run<'_>) -> Result<String, String> {
    match run.failures.first() {
        Some(Some(Some(c))) => Ok(c.clone()),
        Some(Some(None)) => fail("the invocation failed without an LLM error in its cause chain"),
        _ => fail("the invocation did not fail"),
    }
}

fn call_ids(events: &[Value]) -> Result<Vec<String>, String> {
    events
        .iter()
        .map(|e| match field(e, "call_id") {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            other => fail(format!("call_id {other} is not a non-empty string")),
        })
        .collect()
}

/// Every span attribute from the case's caller metadata is present with its value.
fn caller_metadata_everywhere(run: &Run<'_>) -> Result<(), String> {
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

/// The completion events' response fields equal what the calls returned.
fn fields_match_response(run: &Run<'_>) -> Result<(), String> {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())?;
    for e in &events {
        let hit = run
            .calls
            .iter()
            .filter_map(|c| c.result.as_ref().ok())
            .any(|r| {
                json_eq(field(e, "response_id"), &Value::from(r.response_id()))
                    && json_eq(field(e, "response_model"), &Value::from(r.response_model()))
                    && json_eq(
                        field(e, "finish_reason"),
                        &Value::from(r.finish_reason.as_str()),
                    )
                    && json_eq(field(e, "output_content"), &Value::from(r.message.text()))
                    && usage_json(&r.usage).as_object().is_some_and(|u| {
                        u.iter().all(|(k, v)| {
                            v.is_null() && field(field(e, "usage"), k).is_null()
                                || json_eq(field(field(e, "usage"), k), v)
                        })
                    })
            });
        ensure(hit, || {
            format!("no call returned the response the event reports: {e}")
        })?;
    }
    Ok(())
}

/// Identity / scoping fields: this run's invocation, a named node, its namespace.
fn identity_populated(run: &Run<'_>) -> Result<(), String> {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())?;
    for e in &events {
        let inv = field(e, "invocation_id").as_str().unwrap_or_default();
        ensure(run.invocation_ids.iter().any(|i| i == inv), || {
            format!("invocation_id {inv} is not this run's")
        })?;
        let node = field(e, "node_name").as_str().unwrap_or_default();
        let ns = field(e, "namespace")
            .as_array()
            .cloned()
            .unwrap_or_default();
        ensure(
            !node.is_empty() && ns.last().and_then(Value::as_str) == Some(node),
            || format!("node_name {node:?} / namespace {ns:?}"),
        )?;
        ensure(field(e, "attempt_index").is_u64(), || {
            "attempt_index is not an integer".into()
        })?;
    }
    Ok(())
}

/// 056: the completion arrives between its node's started and completed events.
fn arrives_within_node(run: &Run<'_>, which: &str) -> Result<(), String> {
    let recs = records(run);
    let mut seen = 0;
    for (i, e) in recs.iter().enumerate() {
        if field(e, "event_type") != "LlmCompletionEvent" {
            continue;
        }
        seen += 1;
        let same_node = |r: &Value, phase: &str| {
            field(r, "event_type") == "NodeEvent"
                && field(r, "phase") == phase
                && field(r, "namespace") == field(e, "namespace")
                && field(r, "attempt_index") == field(e, "attempt_index")
                && field(r, "fan_out_index_chain") == field(e, "fan_out_index_chain")
                && field(r, "branch_name_chain") == field(e, "branch_name_chain")
        };
        let started = recs[..i].iter().any(|r| same_node(r, "started"));
        let completed = recs[i + 1..].iter().any(|r| same_node(r, "completed"));
        let ok = match which {
            "after" => started,
            "before" => completed,
            _ => started && completed,
        };
        ensure(ok, || {
            format!("the completion event is not inside its node's events (started {started}, completed after {completed})")
        })?;
    }
    ensure(seen > 0, || "no LlmCompletionEvent".into())
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

fn cache_attr(span: &SpanData, key: &str) -> Option<Value> {
    attr(span, key)
}

/// The usage of the one successful call.
fn one_usage(run: &Run<'_>) -> Result<Value, String> {
    match run.calls.as_slice() {
        [call] => call
            .result
            .as_ref()
            .map(|r| usage_json(&r.usage))
            .map_err(|e| format!("the call raised {e}")),
        other => fail(format!("{} calls, expected one", other.len())),
    }
}

fn truthy(v: &Value) -> Result<(), String> {
    match v {
        Value::Bool(true) => Ok(()),
        other => fail(format!(
            "expected `true` as the invariant's value, got {other}"
        )),
    }
}

/// Checks `name`, or `None` when it is not an LLM invariant.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Result<(), String>> {
    let verdict = check_named(name, run)?;
    Some(truthy(v).and(verdict))
}

#[allow(clippy::too_many_lines)]
fn check_named(name: &str, run: &Run<'_>) -> Option<Result<(), String>> {
    let cache_read = a::LLM_CACHE_READ_INPUT_TOKENS;
    let cache_creation = a::LLM_CACHE_CREATION_INPUT_TOKENS;
    Some(match name {
        // 026
        "caller_metadata_cross_cutting" => caller_metadata_everywhere(run),
        // 040–042: cache attributes against the response's usage record.
        "cache_read_attribute_equals_usage_field" => one_span(run).and_then(|s| {
            let usage = one_usage(run)?;
            let want = field(&usage, "cached_tokens");
            let got = cache_attr(s, cache_read).unwrap_or(Value::Null);
            ensure(!want.is_null() && json_eq(&got, want), || {
                format!("cache_read attribute {got}, usage.cached_tokens {want}")
            })
        }),
        "cache_creation_attribute_absent_for_openai_compatible" => one_span(run).and_then(|s| {
            let usage = one_usage(run)?;
            ensure(
                cache_attr(s, cache_creation).is_none()
                    && field(&usage, "cache_creation_tokens").is_null(),
                || "cache_creation is populated".into(),
            )
        }),
        "cache_attribute_absent_when_field_unpopulated" | "absent_distinct_from_zero" => {
            one_span(run).and_then(|s| {
                let usage = one_usage(run)?;
                ensure(
                    field(&usage, "cached_tokens").is_null()
                        && cache_attr(s, cache_read).is_none()
                        && cache_attr(s, cache_creation).is_none(),
                    || format!("usage {usage}; cache_read {:?}", cache_attr(s, cache_read)),
                )
            })
        }
        "cache_read_attribute_emits_zero_when_reported" | "reported_zero_distinct_from_absent" => {
            one_span(run).and_then(|s| {
                let usage = one_usage(run)?;
                let got = cache_attr(s, cache_read);
                ensure(
                    field(&usage, "cached_tokens") == &Value::from(0)
                        && got.as_ref().is_some_and(|g| json_eq(g, &Value::from(0))),
                    || format!("usage {usage}; cache_read {got:?}"),
                )
            })
        }
        // 050 / 051
        "exactly_one_llm_completion_event_observed" => {
            exactly(&completions(run), 1, "LlmCompletionEvent")
        }
        "event_typed_fields_match_provider_response" => fields_match_response(run),
        "identity_scoping_fields_populated" => identity_populated(run),
        "type_discrimination_filter_works"
        | "type_filtered_count_independent_of_sentinel_emission" => {
            let total = completions(run).len();
            let filtered: Vec<_> = run
                .collectors
                .iter()
                .filter(|c| c.filter().is_some())
                .collect();
            if filtered.is_empty() {
                fail("no type-filtered observer")
            } else {
                filtered.iter().try_for_each(|c| {
                    let recs = c.records();
                    let t = c.filter().unwrap_or_default();
                    ensure(
                        !recs.is_empty()
                            && recs.len() == of_type(&recs, t).len()
                            && (t != "LlmCompletionEvent" || recs.len() == total),
                        || {
                            format!(
                                "`{}` holds {} events for {total} completions",
                                c.name,
                                recs.len()
                            )
                        },
                    )
                })
            }
        }
        // 052
        "opt_in_disabled_yields_null_caller_metadata" => run
            .collectors
            .iter()
            .filter(|c| !c.includes_caller_metadata())
            .flat_map(|c| c.records())
            .filter(|r| field(r, "event_type") == "LlmCompletionEvent")
            .try_for_each(|r| {
                ensure(field(&r, "caller_invocation_metadata").is_null(), || {
                    "caller metadata populated without the opt-in".into()
                })
            }),
        "opt_in_enabled_yields_snapshot_caller_metadata" | "snapshot_is_immutable_mapping" => {
            // The snapshot is the engine's shared `Arc<Map>` of the invocation's
            // metadata: immutable by type (no mutating API), so equality is the check.
            let want = Value::Object(run.caller_metadata());
            let recs: Vec<Value> = run
                .collectors
                .iter()
                .filter(|c| c.includes_caller_metadata())
                .flat_map(|c| c.records())
                .filter(|r| field(r, "event_type") == "LlmCompletionEvent")
                .collect();
            ensure(!recs.is_empty(), || "no opted-in completion event".into()).and_then(|()| {
                recs.iter().try_for_each(|r| {
                    ensure(
                        json_eq(field(r, "caller_invocation_metadata"), &want),
                        || {
                            format!(
                                "snapshot {} is not {want}",
                                field(r, "caller_invocation_metadata")
                            )
                        },
                    )
                })
            })
        }
        // 053
        "no_typed_event_on_failure" => exactly(&completions(run), 0, "LlmCompletionEvent")
            .and_then(|()| ensure(failed_calls(run) > 0, || "no call failed".into())),
        "failure_surfaces_via_exception_path" => raised(run).map(|_| ()),
        // 054 / 055
        "per_instance_fan_out_index_populated" => completions(run).iter().try_for_each(|e| {
            ensure(field(e, "fan_out_index").is_u64(), || {
                format!("fan_out_index in {e}")
            })
        }),
        "sibling_instances_have_distinct_fan_out_index" => distinct(run, "fan_out_index"),
        "branch_name_null_outside_parallel_branches" => all_null(run, "branch_name"),
        "per_branch_branch_name_populated" => completions(run).iter().try_for_each(|e| {
            ensure(field(e, "branch_name").is_string(), || {
                format!("branch_name in {e}")
            })
        }),
        "sibling_branches_have_distinct_branch_name" => distinct(run, "branch_name"),
        "fan_out_index_null_outside_fan_out" => all_null(run, "fan_out_index"),
        // 056
        "typed_event_arrives_within_calling_node_span" => arrives_within_node(run, "within"),
        "typed_event_arrives_after_node_started" => arrives_within_node(run, "after"),
        "typed_event_arrives_before_node_completed" => arrives_within_node(run, "before"),
        // 057
        "exactly_one_llm_span_when_retry_absent" => one_span(run).map(|_| ()),
        "attempt_index_defaults_to_zero" => one_span(run).and_then(|s| {
            let got = attr(s, a::LLM_ATTEMPT_INDEX);
            ensure(got == Some(Value::from(0)), || {
                format!("attempt_index {got:?}")
            })
        }),
        "baseline_attributes_still_emit_alongside_attempt_index" => one_span(run).and_then(|s| {
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
        }),
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
                    .ok_or_else(|| "input_messages is not a list".to_owned())?
                    .iter()
                    .try_for_each(|m| {
                        Message::from_json(m)
                            .map(|_| ())
                            .map_err(|x| format!("{m} is not a §3 message: {x}"))
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
        // 085–087: §5.5.10 tool-call identity projections.
        "tool_call_names_and_ids_index_aligned"
        | "tool_call_arrays_in_request_order"
        | "count_equals_names_length"
        | "identity_projections_survive_payload_off"
        | "identity_projections_present_regardless_of_flag" => tool_call_identity(run),
        "tool_call_attributes_omitted_when_none_requested" => one_span(run).and_then(|s| {
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
        }),
        "gated_output_tool_calls_suppressed_when_payload_off" => one_span(run).and_then(|s| {
            ensure(attr(s, a::LLM_OUTPUT_TOOL_CALLS).is_none(), || {
                "the gated output.tool_calls is present".into()
            })
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
        // 124: the error span keeps the response side (proposal 0082).
        "error_span_carries_output_usage_finish_reason" => error_span(run, true, true),
        "error_status_and_exception_event_unchanged"
        | "finish_reason_usage_and_error_status_unchanged_under_payload_disabled" => {
            error_span(run, false, true)
        }
        "output_content_redacted_under_payload_disabled" => one_span(run).and_then(|s| {
            ensure(attr(s, a::LLM_OUTPUT_CONTENT).is_none(), || {
                "output.content is present with payload off".into()
            })
        }),
        _ => return None,
    })
}

/// The `(id, name)` pairs of the one call's reply.
fn tool_calls_of(run: &Run<'_>) -> Result<Vec<(String, String)>, String> {
    match run.calls.as_slice() {
        [call] => call
            .result
            .as_ref()
            .map(|r| {
                r.message
                    .tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect()
            })
            .map_err(|e| format!("the call raised {e}")),
        other => fail(format!("{} calls, expected one", other.len())),
    }
}

/// §5.5.10: count / names / ids equal the reply's tool calls, in order.
fn tool_call_identity(run: &Run<'_>) -> Result<(), String> {
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
fn error_span(run: &Run<'_>, with_content: bool, with_usage: bool) -> Result<(), String> {
    let s = one_span(run)?;
    let category = attr(s, a::ERROR_CATEGORY).unwrap_or(Value::Null);
    let status_ok = matches!(&s.status, opentelemetry::trace::Status::Error { description }
        if category.as_str() == Some(description.as_ref()));
    ensure(status_ok && super::spans::has_exception(s), || {
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

fn distinct(run: &Run<'_>, key: &str) -> Result<(), String> {
    let events = completions(run);
    let values: Vec<String> = events.iter().map(|e| field(e, key).to_string()).collect();
    let set: BTreeSet<&String> = values.iter().collect();
    ensure(events.len() >= 2 && set.len() == values.len(), || {
        format!("{key} values {values:?}")
    })
}

fn all_null(run: &Run<'_>, key: &str) -> Result<(), String> {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())?;
    events
        .iter()
        .try_for_each(|e| ensure(field(e, key).is_null(), || format!("{key} in {e}")))
}
