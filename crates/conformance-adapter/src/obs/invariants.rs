//! Spec: conformance-adapter §5.9 — the named invariants of the observability suite's
//! OTel fixtures, each checked concretely against the exported spans and log records.
//! An unknown name fails the case (FIXTURE-QUIRKS Q8).

use std::collections::BTreeSet;

use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::spans::{attr, attr_str, has_exception, is_error, value_matches, Binder, Forest};
use super::{LogView, Run};
use crate::failure::{mismatch, Check, Failure};
use crate::table::{lookup, names, Table};
use crate::yaml::Y;

fn is_uuid_v4(s: &str) -> bool {
    value_matches(
        &Value::from("<uuid>"),
        &Value::from(s),
        &mut Binder::default(),
        "$",
    )
    .is_ok()
}

/// Checks every entry of an `invariants:` mapping.
pub(crate) fn check_all(invariants: &Y<'_>, run: &Run<'_>) -> Check {
    for (name, value) in invariants.entries()? {
        let v = value.json()?;
        check(&name, &v, run).map_err(|m| m.context(format!("invariant {name}: ")))?;
    }
    Ok(())
}

/// `Ok` when an invariant's value is `true` (the only value a check accepts).
pub(super) fn truthy(v: &Value) -> Check {
    match v {
        Value::Bool(true) => Ok(()),
        other => mismatch(format!(
            "expected `true` as the invariant's value, got {other}"
        )),
    }
}

fn correlation_ids(spans: &[&SpanData]) -> Check<BTreeSet<String>> {
    let mut ids = BTreeSet::new();
    for s in spans {
        match attr_str(s, a::CORRELATION_ID) {
            Some(id) if !id.is_empty() => {
                ids.insert(id);
            }
            _ => return mismatch(format!("span `{}` has no correlation id", s.name)),
        }
    }
    Ok(ids)
}

fn one_correlation_id(spans: &[&SpanData]) -> Check<String> {
    let ids = correlation_ids(spans)?;
    match ids.len() {
        1 => Ok(ids.into_iter().next().unwrap_or_default()),
        0 => mismatch("no spans"),
        _ => mismatch(format!("several correlation ids: {ids:?}")),
    }
}

/// The one parent trace and the traces linked from it.
fn parent_and_detached(
    f: &Forest,
) -> Result<
    (
        opentelemetry::trace::TraceId,
        Vec<opentelemetry::trace::TraceId>,
    ),
    Failure,
> {
    let parents = f.parent_traces();
    let [parent] = parents.as_slice() else {
        return mismatch(format!(
            "expected one parent trace, found {}",
            parents.len()
        ));
    };
    let detached: Vec<_> = f.trace_ids().into_iter().filter(|t| t != parent).collect();
    Ok((*parent, detached))
}

/// The span of the parent trace carrying links (the detached unit's dispatch span).
fn linking_span(f: &Forest) -> Check<&SpanData> {
    let (parent, _) = parent_and_detached(f)?;
    let linking: Vec<&SpanData> = f
        .in_trace(parent)
        .into_iter()
        .filter(|s| !s.links.links.is_empty())
        .collect();
    match linking.as_slice() {
        [one] => Ok(one),
        other => mismatch(format!(
            "expected one span carrying links, found {}",
            other.len()
        )),
    }
}

fn detached_roots(f: &Forest) -> Check<Vec<&SpanData>> {
    let (_, detached) = parent_and_detached(f)?;
    let mut roots = Vec::new();
    for t in detached {
        match f.roots_of(t).as_slice() {
            [root] => roots.push(*root),
            other => return mismatch(format!("a detached trace has {} roots", other.len())),
        }
    }
    if roots.is_empty() {
        return mismatch("no detached trace");
    }
    Ok(roots)
}

fn invocation_roots(f: &Forest) -> Vec<&SpanData> {
    f.roots()
        .into_iter()
        .filter(|s| s.name == a::INVOCATION_SPAN)
        .collect()
}

/// The invocation root's node children (attempt spans).
fn root_attempts(f: &Forest) -> Check<Vec<&SpanData>> {
    let roots = invocation_roots(f);
    let [root] = roots.as_slice() else {
        return mismatch(format!(
            "expected one invocation span, found {}",
            roots.len()
        ));
    };
    Ok(f.children(root)
        .into_iter()
        .filter(|s| attr(s, a::NODE_ATTEMPT_INDEX).is_some())
        .collect())
}

fn int_list(v: &Value) -> Check<Vec<i64>> {
    Ok(v.as_array()
        .and_then(|l| l.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("expected a list of integers, got {v}"))?)
}

/// Fan-out instance spans: carry `fan_out_index` and `parent_node_name`.
fn instance_spans<'f>(f: &'f Forest, node: &str) -> Vec<&'f SpanData> {
    f.spans
        .iter()
        .filter(|s| s.name == node && attr(s, a::FAN_OUT_PARENT_NODE_NAME).is_some())
        .collect()
}

fn log_trace_ids(logs: &[LogView]) -> BTreeSet<String> {
    logs.iter().map(|l| l.trace_id.clone()).collect()
}

fn all_spans<'f>(run: &Run<'f>) -> Vec<&'f SpanData> {
    run.forest.spans.iter().collect()
}

fn one_id_across_traces(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    one_correlation_id(&all_spans(run)).map(|_| ())
}

fn ids_are_uuid_v4(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    let ids = correlation_ids(&all_spans(run))?;
    match ids.iter().find(|id| !is_uuid_v4(id)) {
        Some(bad) => mismatch(format!("`{bad}` is not a UUIDv4")),
        None => Ok(()),
    }
}

fn ids_differ_across_invocations(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    let groups = run.per_invocation();
    let ids: Check<BTreeSet<String>> = groups.iter().map(|g| one_correlation_id(g)).collect();
    let ids = ids?;
    if groups.len() < 2 || ids.len() != groups.len() {
        return mismatch(format!(
            "{} invocations, {} distinct ids",
            groups.len(),
            ids.len()
        ));
    }
    Ok(())
}

fn unique_fan_out_indices_under(v: &Value, run: &Run<'_>) -> Check {
    let f = run.forest;
    let node = v.as_str().ok_or("expected a node name")?;
    let spans = instance_spans(f, node);
    let indices: Vec<Value> = spans
        .iter()
        .filter_map(|s| attr(s, a::NODE_FAN_OUT_INDEX))
        .collect();
    let unique: BTreeSet<String> = indices.iter().map(Value::to_string).collect();
    if spans.is_empty() || unique.len() != spans.len() {
        return mismatch(format!("instance indices {indices:?}"));
    }
    if let Some(parent) = spans.iter().find_map(|s| f.parent(s)) {
        if parent.name != node
            || spans.iter().any(|s| {
                f.parent(s).map(|p| p.span_context.span_id()) != Some(parent.span_context.span_id())
            })
        {
            return mismatch("instance spans are not all under the fan-out node span");
        }
    }
    Ok(())
}

fn fan_out_index_range(v: &Value, run: &Run<'_>) -> Check {
    let f = run.forest;
    let bounds = int_list(v)?;
    let [lo, hi] = bounds.as_slice() else {
        return mismatch("expected [low, high]");
    };
    // Per fan-out: the instances sharing a parent span (nested fan-outs, 132,
    // have one fan-out node span per enclosing instance).
    let mut by_parent: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for s in f
        .spans
        .iter()
        .filter(|s| attr(s, a::FAN_OUT_PARENT_NODE_NAME).is_some())
    {
        if let Some(i) = attr(s, a::NODE_FAN_OUT_INDEX).and_then(|x| x.as_i64()) {
            by_parent
                .entry(s.parent_span_id.to_string())
                .or_default()
                .push(i);
        }
    }
    let want: Vec<i64> = (*lo..=*hi).collect();
    if by_parent.is_empty() {
        return mismatch("no fan-out instance spans");
    }
    for mut got in by_parent.into_values() {
        got.sort_unstable();
        if got != want {
            return mismatch(format!("instance indices {got:?}, expected {want:?}"));
        }
    }
    Ok(())
}

fn sibling_attempt_count(v: &Value, run: &Run<'_>) -> Check {
    let want = v.as_u64().ok_or("expected a count")?;
    let got = root_attempts(run.forest)?.len();
    if u64::try_from(got).ok() == Some(want) {
        Ok(())
    } else {
        mismatch(format!("{got} attempt spans"))
    }
}

fn attempt_indices(v: &Value, run: &Run<'_>) -> Check {
    let want = int_list(v)?;
    let mut got: Vec<i64> = root_attempts(run.forest)?
        .iter()
        .filter_map(|s| attr(s, a::NODE_ATTEMPT_INDEX).and_then(|x| x.as_i64()))
        .collect();
    got.sort_unstable();
    if got == want {
        Ok(())
    } else {
        mismatch(format!("attempt indices {got:?}"))
    }
}

fn instance_traces_distinct(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    let f = run.forest;
    let linking = linking_span(f)?;
    let targets: BTreeSet<String> = linking
        .links
        .links
        .iter()
        .map(|l| l.span_context.trace_id().to_string())
        .collect();
    let (parent, detached) = parent_and_detached(f)?;
    if targets.len() != linking.links.links.len()
        || targets.len() != detached.len()
        || targets.contains(&parent.to_string())
    {
        return mismatch("instance traces are not distinct");
    }
    Ok(())
}

fn link_count(v: &Value, run: &Run<'_>) -> Check {
    let want = v.as_u64().ok_or("expected a count")?;
    let got = linking_span(run.forest)?.links.links.len();
    if u64::try_from(got).ok() == Some(want) {
        Ok(())
    } else {
        mismatch(format!("{got} links"))
    }
}

fn detached_shares_invocation_id(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    let f = run.forest;
    let (parent, _) = parent_and_detached(f)?;
    let parent_root = f
        .roots_of(parent)
        .into_iter()
        .find(|s| s.name == a::INVOCATION_SPAN)
        .ok_or("the parent trace has no invocation span")?;
    let id = attr_str(parent_root, a::INVOCATION_ID).ok_or("no invocation id")?;
    for root in detached_roots(f)? {
        if root.name != a::INVOCATION_SPAN {
            return mismatch(format!("a detached trace roots in `{}`", root.name));
        }
        if attr_str(root, a::INVOCATION_ID).as_deref() != Some(id.as_str()) {
            return mismatch("a detached invocation span has another invocation id");
        }
    }
    Ok(())
}

fn dispatch_span_is_error(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    if is_error(linking_span(run.forest)?) {
        Ok(())
    } else {
        mismatch("the parent-trace dispatch span is not ERROR")
    }
}

fn detached_invocation_is_error(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    if detached_roots(run.forest)?.iter().all(|r| is_error(r)) {
        Ok(())
    } else {
        mismatch("a detached invocation span is not ERROR")
    }
}

fn same_execution_path(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    let groups = run.per_invocation();
    let shapes: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let mut names: Vec<String> = g.iter().map(|s| s.name.to_string()).collect();
            names.sort();
            names
        })
        .collect();
    if groups.len() < 2 || shapes.windows(2).any(|w| w[0] != w[1]) {
        return mismatch(format!("runs differ: {shapes:?}"));
    }
    Ok(())
}

fn logs_carry_correlation_id(v: &Value, run: &Run<'_>) -> Check {
    if run.logs.is_empty() {
        return mismatch("no log records");
    }
    for log in &run.logs {
        let got = log
            .attributes
            .get(a::CORRELATION_ID)
            .cloned()
            .unwrap_or(Value::Null);
        value_matches(v, &got, &mut Binder::default(), &log.body)?;
    }
    Ok(())
}

fn log_span_ids_match(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    for log in &run.logs {
        let node = run
            .emitted
            .iter()
            .find(|e| e.body == log.body)
            .ok_or_else(|| format!("no node made `{}`", log.body))?;
        let span = run
            .forest
            .spans
            .iter()
            .find(|s| s.name == node.node && attr(s, a::NODE_NAME).is_some())
            .ok_or_else(|| format!("no span for node `{}`", node.node))?;
        if span.span_context.span_id().to_string() != log.span_id {
            return mismatch(format!("`{}` is not on `{}`'s span", log.body, node.node));
        }
    }
    Ok(())
}

/// What a parallel-branches invariant requires beyond the shared dispatch-span rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BranchRule {
    /// Only the shared rules (one span per dispatched branch, keyed by its name).
    Keyed,
    /// No dispatch span has inner spans.
    NoInnerSpans,
    /// A skipped branch left no span (and some branch was skipped).
    SkippedEmitsNone,
    /// `branch_count` is not the declared count.
    DispatchedNotDeclared,
}

fn branch_spans(run: &Run<'_>, rule: BranchRule) -> Check {
    let f = run.forest;
    let declared = run.declared_branches();
    let pb = f
        .spans
        .iter()
        .find(|s| attr(s, a::PARALLEL_BRANCHES_BRANCH_COUNT).is_some())
        .ok_or("no parallel-branches node span")?;
    let count = attr(pb, a::PARALLEL_BRANCHES_BRANCH_COUNT)
        .and_then(|c| c.as_u64())
        .unwrap_or_default();
    let dispatch = f.children(pb);
    for d in &dispatch {
        if attr_str(d, a::NODE_BRANCH_NAME).as_deref() != Some(d.name.as_ref()) {
            return mismatch(format!(
                "dispatch span `{}` is not keyed by its branch",
                d.name
            ));
        }
        if rule == BranchRule::NoInnerSpans && !f.children(d).is_empty() {
            return mismatch(format!("`{}` has inner spans", d.name));
        }
    }
    let names: BTreeSet<&str> = dispatch.iter().map(|d| d.name.as_ref()).collect();
    if names.len() != dispatch.len() || u64::try_from(dispatch.len()).ok() != Some(count) {
        return mismatch(format!(
            "{} dispatch spans for branch_count {count}",
            dispatch.len()
        ));
    }
    if rule == BranchRule::DispatchedNotDeclared
        && u64::try_from(declared.len()).ok() == Some(count)
    {
        return mismatch("branch_count equals the declared count");
    }
    let skipped: Vec<&String> = declared
        .iter()
        .filter(|b| !names.contains(b.as_str()))
        .collect();
    if rule == BranchRule::SkippedEmitsNone
        && (skipped.is_empty()
            || f.spans
                .iter()
                .any(|s| skipped.iter().any(|b| s.name == b.as_str())))
    {
        return mismatch(format!(
            "skipped branches {skipped:?} left spans (or none skipped)"
        ));
    }
    Ok(())
}

/// A hub check: the invariant's value and the run.
type Named = fn(&Value, &Run<'_>) -> Check;

/// The invariants this module checks itself, each with its value.
const TABLE: &Table<Named> = &[
    ("correlation_id_consistency", one_id_across_traces),
    (
        "correlation_id_consistent_across_traces",
        one_id_across_traces,
    ),
    ("correlation_id_uniform_across_tree", |v, run| {
        let id = one_correlation_id(&all_spans(run))?;
        value_matches(
            v,
            &Value::from(id),
            &mut Binder::default(),
            "correlation_id",
        )
    }),
    ("correlation_id_is_uuidv4", ids_are_uuid_v4),
    ("all_correlation_ids_uuidv4", ids_are_uuid_v4),
    ("each_invocation_correlation_id_uniform", |v, run| {
        truthy(v)?;
        for group in run.per_invocation() {
            one_correlation_id(&group)?;
        }
        Ok(())
    }),
    (
        "correlation_ids_differ_across_invocations",
        ids_differ_across_invocations,
    ),
    ("unique_fan_out_indices_under", unique_fan_out_indices_under),
    ("fan_out_index_range", fan_out_index_range),
    (
        "sibling_attempt_count_under_invocation",
        sibling_attempt_count,
    ),
    ("attempt_indices", attempt_indices),
    ("all_attempt_spans_error", |v, run| {
        truthy(v)?;
        let attempts = root_attempts(run.forest)?;
        if attempts.is_empty() || attempts.iter().any(|s| !is_error(s)) {
            return mismatch("not every attempt span is ERROR");
        }
        Ok(())
    }),
    ("distinct_trace_ids", |v, run| {
        truthy(v)?;
        let (_, detached) = parent_and_detached(run.forest)?;
        if detached.is_empty() {
            return mismatch("a single trace");
        }
        Ok(())
    }),
    ("all_instance_trace_ids_distinct", instance_traces_distinct),
    ("dispatch_span_link_count", link_count),
    ("fan_out_node_span_link_count", link_count),
    (
        "detached_invocation_id_equals_parent",
        detached_shares_invocation_id,
    ),
    (
        "each_instance_trace_roots_in_invocation_span_sharing_parent_invocation_id",
        detached_shares_invocation_id,
    ),
    ("no_instance_spans_in_parent_trace", |v, run| {
        truthy(v)?;
        let f = run.forest;
        let (parent, _) = parent_and_detached(f)?;
        match f
            .in_trace(parent)
            .into_iter()
            .find(|s| attr(s, a::NODE_FAN_OUT_INDEX).is_some())
        {
            Some(s) => mismatch(format!(
                "`{}` (an instance span) is in the parent trace",
                s.name
            )),
            None => Ok(()),
        }
    }),
    (
        "error_status_on_parent_dispatch_span",
        dispatch_span_is_error,
    ),
    (
        "error_status_on_parent_fan_out_node_span",
        dispatch_span_is_error,
    ),
    (
        "error_status_on_detached_invocation_span",
        detached_invocation_is_error,
    ),
    (
        "error_status_on_detached_instance_invocation_span",
        detached_invocation_is_error,
    ),
    ("exception_event_on_both_error_spans", |v, run| {
        truthy(v)?;
        let mut spans = detached_roots(run.forest)?;
        spans.push(linking_span(run.forest)?);
        if spans.iter().all(|s| has_exception(s)) {
            Ok(())
        } else {
            mismatch("an ERROR span has no exception event")
        }
    }),
    ("same_execution_path", same_execution_path),
    ("span_count_equal_across_runs", same_execution_path),
    ("all_logs_same_trace_id", |v, run| {
        truthy(v)?;
        let ids = log_trace_ids(&run.logs);
        if run.logs.is_empty() || ids.len() != 1 {
            return mismatch(format!("log trace ids {ids:?}"));
        }
        Ok(())
    }),
    ("log_trace_ids_differ_when_detached", |v, run| {
        truthy(v)?;
        let ids = log_trace_ids(&run.logs);
        if ids.len() < 2 {
            return mismatch(format!("log trace ids {ids:?}"));
        }
        Ok(())
    }),
    ("all_logs_carry_correlation_id", logs_carry_correlation_id),
    (
        "log_span_ids_match_active_span_at_emission",
        log_span_ids_match,
    ),
    (
        "callable_branch_renders_one_span_keyed_by_branch_name",
        |v, run| truthy(v).and_then(|()| branch_spans(run, BranchRule::Keyed)),
    ),
    ("callable_branch_span_has_no_inner_node_spans", |v, run| {
        truthy(v).and_then(|()| branch_spans(run, BranchRule::NoInnerSpans))
    }),
    ("when_skipped_branch_emits_no_span", |v, run| {
        truthy(v).and_then(|()| branch_spans(run, BranchRule::SkippedEmitsNone))
    }),
    ("branch_count_is_dispatched_count_not_declared", |v, run| {
        truthy(v).and_then(|()| branch_spans(run, BranchRule::DispatchedNotDeclared))
    }),
    ("implementation_name_non_empty", attribution),
    ("implementation_version_non_empty", attribution),
    ("implementation_name_matches_canonical_value", attribution),
    ("attributes_on_invocation_span_only", attribution),
    ("attributes_absent_on_inner_spans", attribution),
    ("attribution_attrs_on_parent_invocation_span", attribution),
    (
        "attribution_attrs_on_detached_child_invocation_span",
        |v, run| {
            truthy(v)?;
            implementation_attribution(true, &all_spans(run))
        },
    ),
    (
        "attribution_attrs_absent_on_inner_spans_both_traces",
        attribution,
    ),
    (
        "always_emit_invariant_applies_to_every_invocation_span",
        attribution,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The invariant `name`: the retrieval and Langfuse invariants first, then this
/// module's own, then the other observability tables; an unknown name fails.
fn check(name: &str, v: &Value, run: &Run<'_>) -> Check {
    if let Some(verdict) = super::retrieval_invariants::check(name, v, run) {
        return verdict;
    }
    if let Some(verdict) = super::langfuse::invariants::check(name, v, run) {
        return verdict;
    }
    if let Some(verdict) = lookup(TABLE, name) {
        return verdict(v, run);
    }
    match super::tool_invariants::check(name, v, run)
        .or_else(|| super::llm_invariants::check(name, v, run))
        .or_else(|| super::prompts::check(name, v, run))
        .or_else(|| super::meta::checks::check(name, v, run))
        .or_else(|| super::metric_invariants::check(name, v, run))
        .or_else(|| super::usage_invariants::check(name, v, run))
        .or_else(|| super::lineage_invariants::check(name, v, run))
        .or_else(|| super::attempts::check(name, v, run))
    {
        Some(verdict) => verdict,
        None => Err(Failure::unsupported(format!(
            "fixture_directive_unknown: invariant `{name}` has no check"
        ))),
    }
}

/// §5.1 on every invocation span of the case (parent and detached).
fn attribution(v: &Value, run: &Run<'_>) -> Check {
    truthy(v)?;
    implementation_attribution(false, &all_spans(run))
}

/// §5.1: every invocation span (parent and detached) carries the implementation name
/// (this port's canonical value) and a non-empty version; no other span does.
/// With `wants_detached`, a detached invocation span is required too.
fn implementation_attribution(wants_detached: bool, all: &[&SpanData]) -> Check {
    let invocations = all.iter().filter(|s| s.name == a::INVOCATION_SPAN).count();
    if invocations == 0 || (wants_detached && invocations < 2) {
        return mismatch(format!("{invocations} invocation spans"));
    }
    for s in all {
        let impl_name = attr_str(s, a::IMPLEMENTATION_NAME);
        let version = attr_str(s, a::IMPLEMENTATION_VERSION);
        let ok = if s.name == a::INVOCATION_SPAN {
            impl_name.as_deref() == Some(a::IMPLEMENTATION)
                && version.as_deref().is_some_and(|v| !v.is_empty())
        } else {
            impl_name.is_none() && version.is_none()
        };
        if !ok {
            return mismatch(format!(
                "span `{}`: implementation name {impl_name:?}, version {version:?}",
                s.name
            ));
        }
    }
    Ok(())
}
