//! Spec: conformance-adapter §5.9 — the named invariants of the tool-execution
//! fixtures (observability 092–098, §5.5.11 / §5.5.12 / §8.4.6), checked against the
//! typed tool events every invocation delivered, the exported `openarmature.tool.call`
//! spans and the Langfuse `Tool` observations.

use openarmature_observability::attributes as a;
use openarmature_observability::langfuse::{Level, Observation, ObservationType};
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::spans::attr;
use super::typed::{self, records};
use super::Run;

use super::invariants::truthy;
use crate::failure::{holds, Check};
use crate::table::{lookup, names, Table};

const SUCCESS: &str = "ToolCallEvent";
const FAILURE: &str = "ToolCallFailedEvent";
/// Fields every tool event record carries (§5.5.12 / graph-engine §6).
const FULL_FIELD_SET: &[&str] = &[
    "invocation_id",
    "correlation_id",
    "node_name",
    "namespace",
    "attempt_index",
    "fan_out_index",
    "branch_name",
    "fan_out_index_chain",
    "branch_name_chain",
    "call_id",
    "tool_name",
    "tool_call_id",
    "arguments",
    "latency_ms",
];
const PAYLOAD: &[&str] = &[a::TOOL_CALL_ARGUMENTS, a::TOOL_CALL_RESULT];
const IDENTITY: &[&str] = &[a::TOOL_NAME, a::TOOL_CALL_ID];

fn counts(run: &Run<'_>, success: usize, failure: usize) -> Check {
    let (s, f) = (records(run, SUCCESS).len(), records(run, FAILURE).len());
    if (s, f) == (success, failure) {
        Ok(())
    } else {
        Err(format!("expected {success} {SUCCESS} and {failure} {FAILURE}, saw {s} and {f}").into())
    }
}

fn tool_spans<'f>(run: &Run<'f>) -> Check<Vec<&'f SpanData>> {
    let spans: Vec<&SpanData> = run
        .forest
        .spans
        .iter()
        .filter(|s| s.name == a::TOOL_SPAN)
        .collect();
    if spans.is_empty() {
        return Err(format!("no `{}` span", a::TOOL_SPAN).into());
    }
    Ok(spans)
}

/// Every tool span carries (`present`) or lacks (`!present`) each of `keys`.
fn tool_span_attrs(run: &Run<'_>, keys: &[&str], present: bool) -> Check {
    for span in tool_spans(run)? {
        for key in keys {
            if attr(span, key).is_some() != present {
                let what = if present { "lacks" } else { "carries" };
                return Err(format!("a tool span {what} `{key}`").into());
            }
        }
    }
    Ok(())
}

fn full_field_set(run: &Run<'_>) -> Check {
    let all = records(run, SUCCESS);
    if all.is_empty() {
        return Err(format!("no {SUCCESS}").into());
    }
    for r in &all {
        for field in FULL_FIELD_SET.iter().chain(&["result"]) {
            if r.get(*field).is_none() {
                return Err(format!("{SUCCESS} lacks `{field}`").into());
            }
        }
        if r["call_id"].as_str().is_none_or(str::is_empty) {
            return Err("empty call_id".into());
        }
    }
    Ok(())
}

fn latency_present(run: &Run<'_>) -> Check {
    let mut all = records(run, SUCCESS);
    all.extend(records(run, FAILURE));
    match all
        .iter()
        .find(|r| r["latency_ms"].as_f64().is_none_or(|ms| ms < 0.0))
    {
        Some(r) => Err(format!("latency_ms is {}", r["latency_ms"]).into()),
        None if all.is_empty() => Err("no tool events".into()),
        None => Ok(()),
    }
}

fn no_error_category(run: &Run<'_>) -> Check {
    let failures = records(run, FAILURE);
    if failures.is_empty() {
        return Err(format!("no {FAILURE}").into());
    }
    match failures.iter().find(|r| r.get("error_category").is_some()) {
        Some(_) => Err(format!("a {FAILURE} carries error_category").into()),
        None => Ok(()),
    }
}

fn propagates(run: &Run<'_>) -> Check {
    counts(run, 0, 1)?;
    if run.failures.iter().any(Option::is_some) {
        Ok(())
    } else {
        Err("the invocation did not raise".into())
    }
}

fn ids_link_to_llm_request(run: &Run<'_>) -> Check {
    let requested: Vec<Value> = run
        .events
        .iter()
        .filter_map(|e| typed::record(e, None))
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some("LlmCompletionEvent"))
        .flat_map(|r| {
            r["output_tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|call| call.get("id").cloned())
        .collect();
    let tools = records(run, SUCCESS);
    if tools.is_empty() {
        return Err(format!("no {SUCCESS}").into());
    }
    for r in tools {
        if !requested.contains(&r["tool_call_id"]) {
            return Err(format!(
                "tool_call_id {} is not among the requested ids {requested:?}",
                r["tool_call_id"]
            )
            .into());
        }
    }
    Ok(())
}

fn standalone_null(run: &Run<'_>) -> Check {
    let tools = records(run, SUCCESS);
    if tools.is_empty() {
        return Err(format!("no {SUCCESS}").into());
    }
    match tools.iter().find(|r| !r["tool_call_id"].is_null()) {
        Some(r) => Err(format!("tool_call_id is {}", r["tool_call_id"]).into()),
        None => Ok(()),
    }
}

fn no_execute_tool_names(run: &Run<'_>) -> Check {
    match run
        .forest
        .spans
        .iter()
        .find(|s| s.name.starts_with("execute_tool"))
    {
        Some(s) => Err(format!("span `{}` uses the execute_tool convention", s.name).into()),
        None => Ok(()),
    }
}

/// Every Langfuse observation named like a tool span (at least one).
fn langfuse_tools<'r>(run: &'r Run<'_>) -> Check<Vec<&'r Observation>> {
    let traces = run
        .langfuse
        .as_deref()
        .ok_or("no Langfuse observer in this case")?;
    let tools: Vec<&Observation> = traces
        .iter()
        .flat_map(|t| t.all_observations())
        .filter(|o| o.name == a::TOOL_SPAN)
        .collect();
    if tools.is_empty() {
        return Err("no Langfuse tool observation".into());
    }
    Ok(tools)
}

/// Every Langfuse tool observation satisfies `ok` (`what` names the rule).
fn each_langfuse_tool(run: &Run<'_>, what: &str, ok: impl Fn(&Observation) -> bool) -> Check {
    match langfuse_tools(run)?.into_iter().find(|o| !ok(o)) {
        Some(o) => Err(format!("tool observation {} breaks: {what}", o.id).into()),
        None => Ok(()),
    }
}

fn has_meta(o: &Observation, key: &str) -> bool {
    o.metadata.get(key).is_some_and(|v| !v.is_null())
}

fn no_gen_ai_tool_attrs(run: &Run<'_>) -> Check {
    for span in &run.forest.spans {
        if let Some(kv) = span
            .attributes
            .iter()
            .find(|kv| kv.key.as_str().starts_with("gen_ai.tool."))
        {
            return Err(format!("span `{}` carries `{}`", span.name, kv.key).into());
        }
    }
    for span in tool_spans(run)? {
        if attr(span, "gen_ai.operation.name").is_some() {
            return Err("a tool span carries gen_ai.operation.name".into());
        }
    }
    Ok(())
}

/// The observability `invariants` this module checks (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    ("exactly_one_tool_call_event_observed", |run| {
        let n = records(run, SUCCESS).len();
        holds(n == 1, format!("{n} {SUCCESS}"))
    }),
    ("exactly_one_tool_call_failed_event_observed", |run| {
        let n = records(run, FAILURE).len();
        holds(n == 1, format!("{n} {FAILURE}"))
    }),
    ("zero_tool_call_failed_events_on_success", |run| {
        counts(run, 1, 0)
    }),
    ("success_one_tool_call_event_zero_failed", |run| {
        counts(run, 1, 0)
    }),
    ("zero_tool_call_events_on_failure", |run| counts(run, 0, 1)),
    ("failure_one_tool_call_failed_event_zero_success", |run| {
        counts(run, 0, 1)
    }),
    ("tool_call_event_carries_full_field_set", full_field_set),
    ("latency_ms_present", latency_present),
    (
        "no_error_category_field_on_tool_failure_event",
        no_error_category,
    ),
    ("exception_propagates_alongside_typed_event", propagates),
    (
        "tool_call_id_matches_requesting_llm_output_tool_calls_id",
        ids_link_to_llm_request,
    ),
    ("standalone_tool_call_id_is_null", standalone_null),
    ("tool_span_name_is_openarmature_tool_call", |run| {
        tool_spans(run)?;
        no_execute_tool_names(run)
    }),
    ("execute_tool_span_name_not_used", no_execute_tool_names),
    ("oa_namespace_tool_attributes_emitted", |run| {
        tool_span_attrs(run, IDENTITY, true)?;
        tool_span_attrs(run, PAYLOAD, true)
    }),
    ("payload_on_populates_tool_arguments_and_result", |run| {
        tool_span_attrs(run, IDENTITY, true)?;
        tool_span_attrs(run, PAYLOAD, true)
    }),
    ("payload_off_suppresses_tool_arguments_and_result", |run| {
        tool_span_attrs(run, PAYLOAD, false)
    }),
    ("identity_attributes_present_with_payload_off", |run| {
        tool_span_attrs(run, IDENTITY, true)?;
        tool_span_attrs(run, PAYLOAD, false)
    }),
    (
        "gen_ai_tool_attributes_not_emitted_in_v1",
        no_gen_ai_tool_attrs,
    ),
    (
        "renders_as_dedicated_tool_observation_not_generation",
        |run| each_langfuse_tool(run, "type tool", |o| o.kind == ObservationType::Tool),
    ),
    ("tool_name_and_call_id_in_metadata", |run| {
        each_langfuse_tool(run, "tool name and call id in metadata", |o| {
            has_meta(o, "openarmature_tool_name") && has_meta(o, "openarmature_tool_call_id")
        })
    }),
    ("input_output_populated_with_payload_on", |run| {
        each_langfuse_tool(run, "input and output", |o| {
            o.input.is_some() && o.output.is_some()
        })
    }),
    ("failed_tool_renders_error_level", |run| {
        each_langfuse_tool(run, "ERROR level with a status message", |o| {
            o.level == Level::Error && o.status_message.is_some()
        })
    }),
    ("error_type_and_message_in_metadata", |run| {
        each_langfuse_tool(run, "error_type and error_message in metadata", |o| {
            has_meta(o, "error_type") && has_meta(o, "error_message")
        })
    }),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The tool invariant `name` (its value must be `true`), or `None` when it is not
/// one of these. `exception_propagates_alongside_typed_event` is shared with the LLM
/// fixtures: it is a tool invariant only in a run that made tool events.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    if name == "exception_propagates_alongside_typed_event"
        && records(run, SUCCESS).is_empty()
        && records(run, FAILURE).is_empty()
    {
        return None;
    }
    let verdict = lookup(TABLE, name)?;
    Some(truthy(v).and_then(|()| verdict(run)))
}
