//! Spec: conformance-adapter §4.3 for the suspension suite — each invocation's
//! `expected` block, and the case invariants as a table: every invariant name maps to
//! one concrete check over the recorded invocations.

use opentelemetry::trace::Status;
use serde_json::Value;

use super::{CaseRig, RunRecord};
use crate::failure::{holds, Check, Failure};
use crate::ge::assert::check_events;
use crate::ge::harness::lock;
use crate::obs::spans::{attr, match_span, Binder, Forest, MatchOpts};
use crate::table::{invariant, names, Table};
use crate::yaml::Y;

fn j(y: &Y<'_>) -> Check<Value> {
    Ok(y.json()?)
}

/// `want`'s keys all have `got`'s values (shared with the harness runner).
pub(crate) fn subset(want: &Value, got: &Value, what: &str) -> Check {
    let (Value::Object(w), Value::Object(g)) = (want, got) else {
        return if want == got {
            Ok(())
        } else {
            Err(format!("{what}: expected {want}, got {got}").into())
        };
    };
    for (k, v) in w {
        if g.get(k) != Some(v) {
            return Err(format!(
                "{what}.{k}: expected {v}, got {}",
                g.get(k).unwrap_or(&Value::Null)
            )
            .into());
        }
    }
    Ok(())
}

/// One invocation's `expected` block.
pub(crate) fn expected(y: &Y<'_>, run: &RunRecord, rig: &CaseRig) -> Check {
    for (key, v) in y.entries()? {
        match key.as_str() {
            "outcome" => {
                let want = v.str()?;
                if run.outcome != want {
                    return Err(format!(
                        "outcome: expected {want}, got {} (category {:?}, state {})",
                        run.outcome, run.category, run.state
                    )
                    .into());
                }
            }
            "suspended_state" | "final_state" | "final_state_at_error" => {
                subset(&j(&v)?, &run.state, &key)?;
            }
            "descriptor" => descriptor(&v, run)?,
            // Adapter register U1: the outermost node on the suspension path.
            "suspending_node" => {
                let want = v.str()?;
                if run.namespace.first().map(String::as_str) != Some(want) {
                    return Err(format!(
                        "suspending_node: expected {want}, got namespace {:?}",
                        run.namespace
                    )
                    .into());
                }
            }
            "execution_order" => {
                let want: Vec<String> = v.strings()?;
                if run.order != want {
                    return Err(
                        format!("execution_order: expected {want:?}, got {:?}", run.order).into(),
                    );
                }
            }
            "error" => {
                v.check_keys(&["category"])?;
                let want = v.req("category").and_then(|c| c.str().map(str::to_owned))?;
                if run.category.as_deref() != Some(want.as_str()) {
                    return Err(
                        format!("error.category: expected {want}, got {:?}", run.category).into(),
                    );
                }
            }
            "observer_events" => {
                for (name, list) in v.entries()? {
                    let events = run
                        .events
                        .get(&name)
                        .ok_or_else(|| format!("no observer `{name}`"))?;
                    check_events(&list, events, &format!("observer_events.{name}"))?;
                }
            }
            "observer_event_invariants" => {
                for (name, want) in v.entries()? {
                    if want.bool()? {
                        check_one(&name, std::slice::from_ref(run), rig)?;
                    }
                }
            }
            "otel_spans" => {
                for (name, tree) in v.entries()? {
                    let exporter = rig
                        .otel
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, e)| e)
                        .ok_or_else(|| format!("no otel observer `{name}`"))?;
                    let forest =
                        Forest::new(exporter.get_finished_spans().map_err(Failure::mismatch)?);
                    let root = forest
                        .roots()
                        .into_iter()
                        .last()
                        .ok_or_else(|| format!("otel_spans.{name}: no span was exported"))?;
                    match_span(
                        &tree,
                        root,
                        &forest,
                        &Binder::default(),
                        &MatchOpts::default(),
                        &name,
                    )?;
                }
            }
            "saved_session_assertions" => {
                v.check_keys(&["state"])?;
                let saved = run
                    .session
                    .as_ref()
                    .ok_or("saved_session_assertions: no session record was saved")?;
                subset(&j(&v.req("state")?)?, saved, "saved_session.state")?;
            }
            "checkpointer_assertions" => {
                v.check_keys(&["paused_invocation_record_exists", "record_type"])?;
                if let Some(exists) = v.get("paused_invocation_record_exists") {
                    let want = exists.bool()?;
                    if run.paused.is_some() != want {
                        return Err(
                            format!("paused_invocation_record_exists: expected {want}").into()
                        );
                    }
                }
                if let Some(t) = v.get("record_type") {
                    let want = t.str()?;
                    let got = run.paused.as_ref().map(|p| p.status.as_str());
                    if got != Some(want) {
                        return Err(format!("record_type: expected {want}, got {got:?}").into());
                    }
                }
            }
            "middleware_log_captured" => {
                let want: Vec<String> = v.strings()?;
                let got = lock(&rig.log).clone();
                if got != want {
                    return Err(
                        format!("middleware_log_captured: expected {want:?}, got {got:?}").into(),
                    );
                }
            }
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: expected.{other}"
                )))
            }
        }
    }
    Ok(())
}

fn descriptor(y: &Y<'_>, run: &RunRecord) -> Check {
    y.check_keys(&["signal_id", "metadata", "metadata_includes"])?;
    let got = run
        .descriptor
        .as_ref()
        .ok_or("descriptor: the invocation did not suspend")?;
    if let Some(id) = y.get("signal_id") {
        let want = j(&id)?;
        if got.get("signal_id") != Some(&want) {
            return Err(format!("descriptor.signal_id: expected {want}, got {got}").into());
        }
    }
    let metadata = got.get("metadata").cloned().unwrap_or(Value::Null);
    if let Some(m) = y.get("metadata") {
        let want = j(&m)?;
        if metadata != want {
            return Err(format!("descriptor.metadata: expected {want}, got {metadata}").into());
        }
    }
    if let Some(m) = y.get("metadata_includes") {
        subset(&j(&m)?, &metadata, "descriptor.metadata")?;
    }
    Ok(())
}

/// The case `invariants` (and a file's shared ones): each `true` entry is checked.
pub(crate) fn check(y: &Y<'_>, runs: &[RunRecord], rig: &CaseRig) -> Check {
    for (name, want) in y.entries()? {
        if want.bool()? {
            check_one(&name, runs, rig).map_err(|m| m.context(format!("invariant {name}: ")))?;
        }
    }
    Ok(())
}

/// What one invariant checks.
#[derive(Clone, Copy)]
enum Rule {
    FirstSuspended,
    NestedSuspension,
    ResumeCompleted,
    PayloadApplied,
    NoCompletedNodeRerun,
    ErroredWith(&'static str),
    DescriptorKey(&'static str),
    EventsStartedThenSuspended,
    NoCompletedForSuspendingNode,
    SuspendedEventHasDescriptor,
    RootSpanSuspended,
    NodeSpanSuspensionAttributes,
    SpansOk,
    SessionSavedAtSuspend,
    SessionConsistentAfterResume,
    PausedRecordSaved,
    MiddlewarePreLogged,
    MiddlewarePostSkipped,
    NoNodeBodyRan,
}

const TABLE: &Table<Rule> = &[
    ("suspend_returns_suspended_outcome", Rule::FirstSuspended),
    ("resume_merges_signal_payload", Rule::PayloadApplied),
    (
        "resume_continues_after_suspending_node",
        Rule::NoCompletedNodeRerun,
    ),
    (
        "signal_payload_overwrites_field_directly",
        Rule::PayloadApplied,
    ),
    (
        "reducer_not_consulted_on_signal_merge",
        Rule::PayloadApplied,
    ),
    (
        "invalid_payload_blocks_resume",
        Rule::ErroredWith("suspension_resume_payload_invalid"),
    ),
    (
        "error_category_is_resume_payload_invalid",
        Rule::ErroredWith("suspension_resume_payload_invalid"),
    ),
    (
        "resume_against_non_suspended_raises_record_invalid",
        Rule::ErroredWith("suspension_record_invalid"),
    ),
    (
        "resume_covers_completed_and_never_existed_cases",
        Rule::ErroredWith("suspension_record_invalid"),
    ),
    (
        "subgraph_suspend_propagates_to_outer",
        Rule::NestedSuspension,
    ),
    ("resume_re_enters_at_inner_post", Rule::NoCompletedNodeRerun),
    ("after_subgraph_runs_post_resume", Rule::ResumeCompleted),
    (
        "single_instance_suspend_suspends_whole_fan_out",
        Rule::NestedSuspension,
    ),
    ("siblings_cancelled_under_fail_fast", Rule::FirstSuspended),
    (
        "descriptor_carries_fan_out_index",
        Rule::DescriptorKey("fan_out_index"),
    ),
    (
        "collect_mode_suspend_rejected_at_runtime",
        Rule::ErroredWith("suspension_in_unsupported_context"),
    ),
    (
        "single_branch_suspend_suspends_whole_parallel_branches",
        Rule::NestedSuspension,
    ),
    (
        "collect_mode_parallel_branches_suspend_rejected_at_runtime",
        Rule::ErroredWith("suspension_in_unsupported_context"),
    ),
    (
        "descriptor_carries_branch_name",
        Rule::DescriptorKey("branch_name"),
    ),
    (
        "no_completed_event_for_suspending_node",
        Rule::NoCompletedForSuspendingNode,
    ),
    (
        "suspended_event_carries_descriptor",
        Rule::SuspendedEventHasDescriptor,
    ),
    (
        "started_followed_by_suspended_in_order",
        Rule::EventsStartedThenSuspended,
    ),
    (
        "invocation_span_carries_outcome_suspended",
        Rule::RootSpanSuspended,
    ),
    (
        "node_span_carries_suspension_attributes",
        Rule::NodeSpanSuspensionAttributes,
    ),
    ("otel_status_code_is_OK_per_4_2_mapping", Rule::SpansOk),
    ("session_saves_at_suspend_time", Rule::SessionSavedAtSuspend),
    (
        "resume_sees_session_state_consistent_with_paused_record",
        Rule::SessionConsistentAfterResume,
    ),
    (
        "paused_record_persists_via_checkpointer_backend",
        Rule::PausedRecordSaved,
    ),
    (
        "record_type_distinguishes_suspended_from_checkpointed",
        Rule::PausedRecordSaved,
    ),
    (
        "middleware_pre_next_block_runs_on_suspending_node",
        Rule::MiddlewarePreLogged,
    ),
    (
        "middleware_post_next_block_skipped_on_suspending_node",
        Rule::MiddlewarePostSkipped,
    ),
    (
        "middleware_suspend_raises_unsupported_context",
        Rule::ErroredWith("suspension_in_unsupported_context"),
    ),
    (
        "wrapped_node_does_not_execute_after_middleware_suspend_attempt",
        Rule::NoNodeBodyRan,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

fn check_one(name: &str, runs: &[RunRecord], rig: &CaseRig) -> Check {
    let check = invariant(TABLE, name)?;
    let first = runs.first().ok_or("no invocation ran")?;
    let last = runs.last().ok_or("no invocation ran")?;
    match check {
        Rule::FirstSuspended => holds(
            first.outcome == "suspended",
            "the first invocation did not suspend",
        ),
        Rule::NestedSuspension => holds(
            first.outcome == "suspended" && first.namespace.len() > 1,
            "the first invocation did not suspend from a nested node",
        ),
        Rule::ResumeCompleted => holds(
            runs.len() > 1 && last.outcome == "completed",
            "the resume did not complete",
        ),
        Rule::PayloadApplied => {
            let payload = last
                .payload
                .as_ref()
                .ok_or("the last invocation carried no signal payload")?;
            holds(last.outcome == "completed", "the resume did not complete")?;
            subset(payload, &last.state, "final_state (payload overlay)")
        }
        Rule::NoCompletedNodeRerun => {
            let resumed = runs.get(1).ok_or("no resume ran")?;
            // A nested suspension re-enters its outer node; a top-level one never
            // reruns the suspending node.
            let allowed = (first.namespace.len() > 1).then(|| first.namespace[0].clone());
            match first
                .order
                .iter()
                .find(|n| resumed.order.contains(n) && Some(*n) != allowed.as_ref())
            {
                Some(n) => {
                    Err(format!("`{n}` ran before the suspension and again on resume").into())
                }
                None => Ok(()),
            }
        }
        Rule::ErroredWith(category) => holds(
            runs.iter()
                .any(|r| r.outcome == "errored" && r.category.as_deref() == Some(category)),
            format!("no invocation errored with {category}"),
        ),
        Rule::DescriptorKey(key) => holds(
            first
                .descriptor
                .as_ref()
                .and_then(|d| d.get("metadata"))
                .and_then(|m| m.get(key))
                .is_some(),
            format!("the descriptor metadata has no `{key}`"),
        ),
        Rule::EventsStartedThenSuspended
        | Rule::NoCompletedForSuspendingNode
        | Rule::SuspendedEventHasDescriptor => {
            for events in first.events.values() {
                let nodes: Vec<_> = events.iter().filter_map(|e| e.as_node()).collect();
                let node = first
                    .namespace
                    .last()
                    .ok_or("the invocation did not suspend")?;
                let mine: Vec<_> = nodes.iter().filter(|e| &*e.node_name == node).collect();
                let phases: Vec<&str> = mine.iter().map(|e| e.phase.as_str()).collect();
                match check {
                    Rule::EventsStartedThenSuspended => holds(
                        phases == ["started", "suspended"],
                        format!("phases {phases:?}"),
                    )?,
                    Rule::NoCompletedForSuspendingNode => {
                        holds(!phases.contains(&"completed"), "a completed event was sent")?
                    }
                    _ => holds(
                        mine.iter()
                            .any(|e| e.descriptor.is_some() && e.phase.as_str() == "suspended"),
                        "the suspended event carries no descriptor",
                    )?,
                }
            }
            Ok(())
        }
        Rule::RootSpanSuspended | Rule::NodeSpanSuspensionAttributes | Rule::SpansOk => {
            let (_, exporter) = rig.otel.first().ok_or("no otel observer")?;
            let spans = exporter.get_finished_spans().map_err(Failure::mismatch)?;
            let forest = Forest::new(spans.clone());
            let root = forest
                .roots()
                .into_iter()
                .last()
                .ok_or("no span exported")?;
            match check {
                Rule::RootSpanSuspended => holds(
                    attr(root, "openarmature.outcome") == Some(Value::from("suspended")),
                    "the invocation span has no openarmature.outcome = suspended",
                ),
                Rule::NodeSpanSuspensionAttributes => holds(
                    forest
                        .children(root)
                        .iter()
                        .any(|s| attr(s, "openarmature.suspension.signal_id").is_some()),
                    "no node span carries openarmature.suspension.signal_id",
                ),
                _ => holds(
                    spans.iter().all(|s| s.status == Status::Ok),
                    "a span is not OK",
                ),
            }
        }
        Rule::SessionSavedAtSuspend => holds(
            first.outcome == "suspended" && first.session.is_some(),
            "no session record was saved at suspend",
        ),
        Rule::SessionConsistentAfterResume => {
            let saved = last
                .session
                .as_ref()
                .ok_or("no session record after the resume")?;
            subset(&last.state, saved, "session after resume")
        }
        Rule::PausedRecordSaved => holds(
            first
                .paused
                .as_ref()
                .is_some_and(|p| p.status.as_str() == "suspended")
                && !first.checkpoint_record,
            "no paused record of type suspended (or it was stored as a checkpoint)",
        ),
        Rule::MiddlewarePreLogged | Rule::MiddlewarePostSkipped => {
            let log = lock(&rig.log).clone();
            match check {
                Rule::MiddlewarePreLogged => {
                    holds(!log.is_empty(), "the pre-next block did not run")
                }
                _ => holds(log.len() == 1, format!("the post-next block ran: {log:?}")),
            }
        }
        Rule::NoNodeBodyRan => holds(
            first.order.is_empty(),
            format!("node bodies ran: {:?}", first.order),
        ),
    }
}
