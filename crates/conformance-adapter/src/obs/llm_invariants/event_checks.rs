//! Spec: conformance-adapter §5.9 — the typed-event invariants of the observability
//! suite's LLM fixtures: `LlmCompletionEvent` counts and type filtering (050 / 051),
//! caller-metadata snapshots (052), failure without a completion (053), fan-out /
//! branch scoping (054 / 055) and delivery order within the node (056).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{completions, ensure, exactly, failed_calls, field, of_type, raised, records};
use crate::failure::{mismatch, Check};
use crate::matchers::json_eq;
use crate::obs::typed::usage_json;
use crate::obs::Run;
use crate::table::{lookup, names, Table};

/// The typed-event invariants (each value must be `true`).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    // 050 / 051
    ("exactly_one_llm_completion_event_observed", |run| {
        exactly(&completions(run), 1, "LlmCompletionEvent")
    }),
    (
        "event_typed_fields_match_provider_response",
        fields_match_response,
    ),
    ("identity_scoping_fields_populated", identity_populated),
    ("type_discrimination_filter_works", type_filtered),
    (
        "type_filtered_count_independent_of_sentinel_emission",
        type_filtered,
    ),
    // 052
    ("opt_in_disabled_yields_null_caller_metadata", |run| {
        run.collectors
            .iter()
            .filter(|c| !c.includes_caller_metadata())
            .flat_map(|c| c.records())
            .filter(|r| field(r, "event_type") == "LlmCompletionEvent")
            .try_for_each(|r| {
                ensure(field(&r, "caller_invocation_metadata").is_null(), || {
                    "caller metadata populated without the opt-in".into()
                })
            })
    }),
    (
        "opt_in_enabled_yields_snapshot_caller_metadata",
        caller_metadata_snapshot,
    ),
    ("snapshot_is_immutable_mapping", caller_metadata_snapshot),
    // 053
    ("no_typed_event_on_failure", |run| {
        exactly(&completions(run), 0, "LlmCompletionEvent")
            .and_then(|()| ensure(failed_calls(run) > 0, || "no call failed".into()))
    }),
    ("failure_surfaces_via_exception_path", |run| {
        raised(run).map(|_| ())
    }),
    // 054 / 055
    ("per_instance_fan_out_index_populated", |run| {
        completions(run).iter().try_for_each(|e| {
            ensure(field(e, "fan_out_index").is_u64(), || {
                format!("fan_out_index in {e}")
            })
        })
    }),
    ("sibling_instances_have_distinct_fan_out_index", |run| {
        distinct(run, "fan_out_index")
    }),
    ("branch_name_null_outside_parallel_branches", |run| {
        all_null(run, "branch_name")
    }),
    ("per_branch_branch_name_populated", |run| {
        completions(run).iter().try_for_each(|e| {
            ensure(field(e, "branch_name").is_string(), || {
                format!("branch_name in {e}")
            })
        })
    }),
    ("sibling_branches_have_distinct_branch_name", |run| {
        distinct(run, "branch_name")
    }),
    ("fan_out_index_null_outside_fan_out", |run| {
        all_null(run, "fan_out_index")
    }),
    // 056
    ("typed_event_arrives_within_calling_node_span", |run| {
        arrives_within_node(run, "within")
    }),
    ("typed_event_arrives_after_node_started", |run| {
        arrives_within_node(run, "after")
    }),
    ("typed_event_arrives_before_node_completed", |run| {
        arrives_within_node(run, "before")
    }),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks `name`, or `None` when it is not a typed-event invariant.
pub(super) fn check_named(name: &str, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(run))
}

/// 050 / 051: every type-filtered observer holds only its type (all the completions, for
/// `LlmCompletionEvent`).
fn type_filtered(run: &Run<'_>) -> Check {
    let total = completions(run).len();
    let filtered: Vec<_> = run
        .collectors
        .iter()
        .filter(|c| c.filter().is_some())
        .collect();
    if filtered.is_empty() {
        mismatch("no type-filtered observer")
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

/// 052: the opted-in completion events carry the invocation's caller metadata.
fn caller_metadata_snapshot(run: &Run<'_>) -> Check {
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

/// The completion events' response fields equal what the calls returned.
fn fields_match_response(run: &Run<'_>) -> Check {
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
fn identity_populated(run: &Run<'_>) -> Check {
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
fn arrives_within_node(run: &Run<'_>, which: &str) -> Check {
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

fn distinct(run: &Run<'_>, key: &str) -> Check {
    let events = completions(run);
    let values: Vec<String> = events.iter().map(|e| field(e, key).to_string()).collect();
    let set: BTreeSet<&String> = values.iter().collect();
    ensure(events.len() >= 2 && set.len() == values.len(), || {
        format!("{key} values {values:?}")
    })
}

fn all_null(run: &Run<'_>, key: &str) -> Check {
    let events = completions(run);
    ensure(!events.is_empty(), || "no LlmCompletionEvent".into())?;
    events
        .iter()
        .try_for_each(|e| ensure(field(e, key).is_null(), || format!("{key} in {e}")))
}
