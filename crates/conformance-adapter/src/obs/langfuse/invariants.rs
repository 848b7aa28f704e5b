//! Spec: conformance-adapter §5.9 — the named invariants of the Langfuse fixtures
//! (observability §8), checked against the recorded Langfuse traces. Names the OTel
//! fixtures share (`correlation_id_consistency`, `distinct_trace_ids`, …) read the
//! Langfuse traces when the case records them.

use std::collections::BTreeSet;

use openarmature_observability::langfuse::{LangfuseTrace, Level, Observation, ObservationType};
use serde_json::{Map, Value};

use crate::failure::{mismatch, Check};
use crate::obs::spans::{attr, Forest};
use crate::obs::Run;
use crate::table::{lookup, names, Table};

type Verdict = Check;

fn own(traces: &[LangfuseTrace]) -> Vec<&LangfuseTrace> {
    traces.iter().filter(|t| !detached(t)).collect()
}

fn detached(t: &LangfuseTrace) -> bool {
    t.metadata.contains_key("detached_from_invocation_id")
}

fn all_obs(traces: &[LangfuseTrace]) -> Vec<&Observation> {
    traces
        .iter()
        .flat_map(LangfuseTrace::all_observations)
        .collect()
}

fn descendants(o: &Observation) -> Vec<&Observation> {
    let mut out = Vec::new();
    let mut stack: Vec<&Observation> = o.children.iter().collect();
    while let Some(x) = stack.pop() {
        out.push(x);
        stack.extend(x.children.iter());
    }
    out
}

/// The observation whose children include `child`'s id, if any.
fn parent_of<'t>(t: &'t LangfuseTrace, child: &str) -> Option<&'t Observation> {
    t.all_observations()
        .into_iter()
        .find(|o| o.children.iter().any(|c| c.id == child))
}

fn correlation(traces: &[LangfuseTrace]) -> Verdict {
    let mut ids = BTreeSet::new();
    for t in traces {
        ids.insert(t.metadata.get("correlation_id").map(Value::to_string));
        for o in t.all_observations() {
            ids.insert(o.metadata.get("correlation_id").map(Value::to_string));
        }
    }
    match ids.len() {
        1 if !ids.contains(&None) => Ok(()),
        _ => mismatch(format!("correlation ids {ids:?}")),
    }
}

fn hex_dashless(id: &str) -> String {
    id.replace('-', "").to_ascii_lowercase()
}

/// Every observation under a dispatch observation (matched by `is_dispatch`) carries
/// the dispatch's values of the keys it adds to the baseline; siblings differ.
fn isolation(
    traces: &[LangfuseTrace],
    baseline: &Map<String, Value>,
    is_dispatch: fn(&Observation) -> bool,
) -> Verdict {
    let dispatches: Vec<&Observation> = all_obs(traces)
        .into_iter()
        .filter(|o| is_dispatch(o))
        .collect();
    if dispatches.len() < 2 {
        return mismatch(format!("{} dispatch observations", dispatches.len()));
    }
    let oa = [
        "branch_name",
        "namespace",
        "step",
        "attempt_index",
        "fan_out_index",
        "subgraph_name",
        "fan_out_parent_node_name",
        "parallel_branches_parent_node_name",
        "correlation_id",
    ];
    let mut seen = BTreeSet::new();
    for d in dispatches {
        let own: Vec<(&String, &Value)> = d
            .metadata
            .iter()
            .filter(|(k, _)| !baseline.contains_key(*k) && !oa.contains(&k.as_str()))
            .collect();
        if own.is_empty() {
            continue;
        }
        if !seen.insert(format!("{own:?}")) {
            return mismatch(format!("two dispatches carry {own:?}"));
        }
        for x in descendants(d) {
            for (k, v) in &own {
                if x.metadata.get(*k) != Some(*v) {
                    return mismatch(format!("`{}` under `{}` lacks {k}={v}", x.name, d.name));
                }
            }
        }
    }
    if seen.is_empty() {
        return mismatch("no dispatch observation carries an augmentation");
    }
    Ok(())
}

fn is_instance(o: &Observation) -> bool {
    o.metadata.contains_key("fan_out_parent_node_name")
}

/// The single Generation, checked by `f`.
fn one_generation(traces: &[LangfuseTrace], f: impl Fn(&Observation) -> bool) -> Verdict {
    let g = generations(traces);
    match g.as_slice() {
        [one] if f(one) => Ok(()),
        [one] => mismatch(format!(
            "generation level {:?} status {:?} usage {:?} metadata {:?}",
            one.level, one.status_message, one.usage, one.metadata
        )),
        _ => mismatch(format!("{} generations", g.len())),
    }
}

fn is_branch(o: &Observation) -> bool {
    o.metadata
        .contains_key("parallel_branches_parent_node_name")
}

fn generations(traces: &[LangfuseTrace]) -> Vec<&Observation> {
    all_obs(traces)
        .into_iter()
        .filter(|o| o.kind == ObservationType::Generation)
        .collect()
}

/// The (name, fan_out_index) path from the trace root to the parent of each
/// generation, sorted.
fn langfuse_paths(traces: &[LangfuseTrace]) -> Vec<Vec<(String, Option<i64>)>> {
    fn walk(
        list: &[Observation],
        path: &mut Vec<(String, Option<i64>)>,
        out: &mut Vec<Vec<(String, Option<i64>)>>,
    ) {
        for o in list {
            if o.kind == ObservationType::Generation {
                out.push(path.clone());
                continue;
            }
            path.push((
                o.name.clone(),
                o.metadata.get("fan_out_index").and_then(Value::as_i64),
            ));
            walk(&o.children, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    for t in traces {
        walk(&t.observations, &mut Vec::new(), &mut out);
    }
    out.sort();
    out
}

fn otel_paths(f: &Forest) -> Vec<Vec<(String, Option<i64>)>> {
    use openarmature_observability::attributes as a;
    let mut out = Vec::new();
    for s in f.spans.iter().filter(|s| s.name == a::LLM_SPAN) {
        let mut path = Vec::new();
        let mut cur = f.parent(s);
        while let Some(p) = cur {
            if p.name != a::INVOCATION_SPAN {
                path.push((
                    p.name.to_string(),
                    attr(p, a::NODE_FAN_OUT_INDEX).and_then(|v| v.as_i64()),
                ));
            }
            cur = f.parent(p);
        }
        path.reverse();
        out.push(path);
    }
    out.sort();
    out
}

/// `Ok` when an invariant's value is `true`.
fn yes(v: &Value) -> Verdict {
    match v {
        Value::Bool(true) => Ok(()),
        other => mismatch(format!("expected `true`, got {other}")),
    }
}

/// The first invocation's id (empty when the case ran none).
fn first_id(run: &Run<'_>) -> String {
    run.invocation_ids.first().cloned().unwrap_or_default()
}

fn trace_ids_are_invocation_ids(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let ids: Vec<&str> = own(traces).iter().map(|t| t.id.as_str()).collect();
    if ids.is_empty()
        || run
            .invocation_ids
            .iter()
            .map(|i| hex_dashless(i))
            .collect::<Vec<_>>()
            != ids
    {
        return mismatch(format!(
            "trace ids {ids:?} for invocations {:?}",
            run.invocation_ids
        ));
    }
    Ok(())
}

fn trace_id_is_sha256_first16_hex(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let t = own(traces)
        .first()
        .map(|t| t.id.clone())
        .unwrap_or_default();
    let hexlike = t.len() == 32
        && t.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
    if hexlike && t != hex_dashless(&first_id(run)) {
        Ok(())
    } else {
        mismatch(format!("trace id {t}"))
    }
}

fn raw_invocation_id_in_metadata(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let got = own(traces)
        .first()
        .and_then(|t| t.metadata.get("invocation_id").cloned());
    if got == Some(Value::String(first_id(run))) {
        Ok(())
    } else {
        mismatch(format!("{got:?}"))
    }
}

fn caller_metadata_on_trace(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let baseline = run.caller_metadata();
    for t in own(traces) {
        for (k, val) in &baseline {
            if t.metadata.get(k) != Some(val) {
                return mismatch(format!("trace lacks {k}={val}"));
            }
        }
    }
    Ok(())
}

fn caller_metadata_on_every_observation(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let baseline = run.caller_metadata();
    for o in all_obs(traces) {
        for (k, val) in &baseline {
            if o.metadata.get(k) != Some(val) {
                return mismatch(format!("`{}` lacks {k}={val}", o.name));
            }
        }
    }
    Ok(())
}

fn branch_name_isolation(traces: &[LangfuseTrace]) -> Verdict {
    for d in all_obs(traces).into_iter().filter(|o| is_branch(o)) {
        let b = d.metadata.get("branch_name");
        if b.is_none()
            || descendants(d)
                .iter()
                .any(|x| x.metadata.get("branch_name") != b)
        {
            return mismatch(format!("branch `{}` subtree mixes branch_name", d.name));
        }
    }
    Ok(())
}

fn open_span_update_reaches_spans(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let baseline = run.caller_metadata();
    let t = own(traces).first().copied().ok_or("no trace")?;
    let added: Vec<&String> = t
        .metadata
        .keys()
        .filter(|k| {
            !baseline.contains_key(*k)
                && ![
                    "correlation_id",
                    "entry_node",
                    "spec_version",
                    "implementation_name",
                    "implementation_version",
                    "invocation_id",
                ]
                .contains(&k.as_str())
        })
        .collect();
    if added.is_empty() {
        return mismatch("the trace carries no augmented key");
    }
    for o in &t.observations {
        for k in &added {
            if o.metadata.get(*k) != t.metadata.get(*k) {
                return mismatch(format!("`{}` lacks {k}", o.name));
            }
        }
    }
    Ok(())
}

fn unique_fan_out_indices_under(v: &Value, traces: &[LangfuseTrace]) -> Verdict {
    let node = v.as_str().unwrap_or_default();
    let idx: Vec<i64> = all_obs(traces)
        .into_iter()
        .filter(|o| o.name == node && is_instance(o))
        .filter_map(|o| o.metadata.get("fan_out_index").and_then(Value::as_i64))
        .collect();
    let set: BTreeSet<i64> = idx.iter().copied().collect();
    if !idx.is_empty() && set.len() == idx.len() {
        Ok(())
    } else {
        mismatch(format!("indices {idx:?}"))
    }
}

fn fan_out_index_range(v: &Value, traces: &[LangfuseTrace]) -> Verdict {
    let want: Vec<i64> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let set: BTreeSet<i64> = all_obs(traces)
        .into_iter()
        .filter(|o| is_instance(o))
        .filter_map(|o| o.metadata.get("fan_out_index").and_then(Value::as_i64))
        .collect();
    match want.as_slice() {
        [lo, hi] if set == (*lo..=*hi).collect() => Ok(()),
        _ => mismatch(format!("indices {set:?}, expected {v}")),
    }
}

fn distinct_trace_ids(traces: &[LangfuseTrace]) -> Verdict {
    let ids: BTreeSet<&str> = traces.iter().map(|t| t.id.as_str()).collect();
    if traces.len() >= 2 && ids.len() == traces.len() {
        Ok(())
    } else {
        mismatch(format!("{} traces, {} ids", traces.len(), ids.len()))
    }
}

fn detached_child_trace_id_count(v: &Value, traces: &[LangfuseTrace]) -> Verdict {
    let want = v.as_u64().unwrap_or(0);
    let lists: Vec<&Vec<Value>> = all_obs(traces)
        .into_iter()
        .filter_map(|o| {
            o.metadata
                .get("detached_child_trace_ids")
                .and_then(Value::as_array)
        })
        .collect();
    let known: BTreeSet<&str> = traces
        .iter()
        .filter(|t| detached(t))
        .map(|t| t.id.as_str())
        .collect();
    match lists.as_slice() {
        [one]
            if one.len() as u64 == want
                && one
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| known.contains(s))) =>
        {
            Ok(())
        }
        _ => mismatch(format!(
            "child id lists {lists:?}, detached traces {known:?}"
        )),
    }
}

fn no_instance_spans_in_parent_trace(traces: &[LangfuseTrace]) -> Verdict {
    match own(traces)
        .iter()
        .flat_map(|t| t.all_observations())
        .find(|o| is_instance(o))
    {
        Some(o) => mismatch(format!("instance `{}` in the parent trace", o.name)),
        None => Ok(()),
    }
}

fn instance_traces_point_back(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let first_id = first_id(run);
    let bad = traces.iter().filter(|t| detached(t)).find(|t| {
        t.metadata.get("detached_from_invocation_id") != Some(&Value::String(first_id.clone()))
    });
    match bad {
        None if traces.iter().any(detached) => Ok(()),
        _ => mismatch("a detached trace does not point back to the invocation"),
    }
}

fn implementation_attribution(traces: &[LangfuseTrace]) -> Verdict {
    for t in traces {
        let name = t
            .metadata
            .get("implementation_name")
            .and_then(Value::as_str);
        let version = t
            .metadata
            .get("implementation_version")
            .and_then(Value::as_str);
        if name != Some(openarmature_observability::attributes::IMPLEMENTATION)
            || version.is_none_or(str::is_empty)
        {
            return mismatch(format!("trace `{}` attribution {name:?} {version:?}", t.id));
        }
    }
    Ok(())
}

/// The one failed Generation: ERROR level with the category, usage and
/// `finish_reason`; with an output when `want_output`, without one when `redacted`.
fn failed_generation(traces: &[LangfuseTrace], want_output: bool, redacted: bool) -> Verdict {
    let g = generations(traces);
    let [g] = g.as_slice() else {
        return mismatch(format!("{} generations", g.len()));
    };
    if g.level != Level::Error || g.status_message.as_deref() != Some("structured_output_invalid") {
        return mismatch(format!("level {:?} status {:?}", g.level, g.status_message));
    }
    if g.usage.is_none() || !g.metadata.contains_key("finish_reason") {
        return mismatch("usage / finish_reason missing");
    }
    if (want_output && g.output.is_none()) || (redacted && g.output.is_some()) {
        return mismatch(format!("output {:?}", g.output));
    }
    Ok(())
}

fn generation_count(v: &Value, traces: &[LangfuseTrace]) -> Verdict {
    let n = generations(traces).len() as u64;
    if Some(n) == v.as_u64() {
        Ok(())
    } else {
        mismatch(format!("{n} generations, expected {v}"))
    }
}

/// Every Generation's Langfuse parent path is its LLM span's OTel parent path
/// (distinct, at least one).
fn parents_match_otel(traces: &[LangfuseTrace], run: &Run<'_>) -> Verdict {
    let lf = langfuse_paths(traces);
    let otel = otel_paths(run.forest);
    let distinct: BTreeSet<_> = lf.iter().collect();
    if lf != otel || distinct.len() != lf.len() || lf.is_empty() {
        return mismatch(format!("Langfuse parents {lf:?}, OTel parents {otel:?}"));
    }
    Ok(())
}

/// Every Generation parents under a fan-out instance observation that has a span child.
fn orphan_parents_under_instance(traces: &[LangfuseTrace]) -> Verdict {
    for t in traces {
        for g in t
            .all_observations()
            .into_iter()
            .filter(|o| o.kind == ObservationType::Generation)
        {
            let p = parent_of(t, &g.id).ok_or("a generation parents under the trace")?;
            if !is_instance(p) || !p.children.iter().any(|c| c.kind == ObservationType::Span) {
                return mismatch(format!("generation parent `{}` {:?}", p.name, p.metadata));
            }
        }
    }
    Ok(())
}

fn caller_invocation_id_verbatim(run: &Run<'_>) -> Verdict {
    use openarmature_observability::attributes as a;
    let want = run
        .case
        .get("caller_invocation_id")
        .and_then(|c| c.str().ok())
        .unwrap_or_default();
    let roots = run.forest.roots();
    let got: Vec<Option<Value>> = roots.iter().map(|r| attr(r, a::INVOCATION_ID)).collect();
    if !want.is_empty()
        && first_id(run) == want
        && got
            .iter()
            .all(|g| g.as_ref().and_then(Value::as_str) == Some(want))
    {
        Ok(())
    } else {
        mismatch(format!("invocation ids {got:?}, expected {want}"))
    }
}

/// The Langfuse invariants whose value must be `true`.
const FLAGS: &Table<fn(&[LangfuseTrace], &Run<'_>) -> Verdict> = &[
    ("correlation_id_consistency", |traces, _| {
        correlation(traces)
    }),
    ("correlation_id_consistent_across_traces", |traces, _| {
        correlation(traces)
    }),
    (
        "trace_id_equals_invocation_id_dashes_stripped",
        trace_ids_are_invocation_ids,
    ),
    (
        "langfuse_trace_id_is_uuid_hex_dashes_stripped",
        trace_ids_are_invocation_ids,
    ),
    (
        "langfuse_trace_id_is_sha256_first16_hex",
        trace_id_is_sha256_first16_hex,
    ),
    (
        "raw_invocation_id_in_trace_metadata",
        raw_invocation_id_in_metadata,
    ),
    (
        "caller_metadata_top_level_on_trace",
        caller_metadata_on_trace,
    ),
    (
        "caller_metadata_top_level_on_every_observation",
        caller_metadata_on_every_observation,
    ),
    (
        "baseline_caller_metadata_universal",
        caller_metadata_on_every_observation,
    ),
    ("fan_out_per_instance_metadata_isolation", |traces, run| {
        isolation(traces, &run.caller_metadata(), is_instance)
    }),
    (
        "parallel_branches_per_branch_metadata_isolation",
        |traces, run| isolation(traces, &run.caller_metadata(), is_branch),
    ),
    (
        "per_branch_oa_emitted_branch_name_isolation",
        |traces, _| branch_name_isolation(traces),
    ),
    (
        "open_span_update_reaches_invocation_and_node_spans",
        open_span_update_reaches_spans,
    ),
    ("distinct_trace_ids", |traces, _| distinct_trace_ids(traces)),
    ("all_instance_trace_ids_distinct", |traces, _| {
        distinct_trace_ids(traces)
    }),
    ("each_invocation_distinct_trace_id", |traces, _| {
        distinct_trace_ids(traces)
    }),
    ("no_instance_spans_in_parent_trace", |traces, _| {
        no_instance_spans_in_parent_trace(traces)
    }),
    ("implementation_name_present_on_trace", |traces, _| {
        implementation_attribution(traces)
    }),
    ("implementation_version_present_on_trace", |traces, _| {
        implementation_attribution(traces)
    }),
    ("rows_emit_with_default_privacy_config", |traces, _| {
        implementation_attribution(traces)
    }),
    ("rows_emit_with_state_payload_enabled", |traces, _| {
        implementation_attribution(traces)
    }),
    (
        "always_emit_invariant_inherited_from_spec_5_1",
        |traces, _| implementation_attribution(traces),
    ),
    (
        "failed_generation_renders_error_level_and_category",
        |traces, _| failed_generation(traces, false, false),
    ),
    (
        "usage_finish_reason_and_error_level_unchanged_under_payload_disabled",
        |traces, _| failed_generation(traces, false, false),
    ),
    (
        "failed_generation_carries_output_usage_finish_reason",
        |traces, _| failed_generation(traces, true, false),
    ),
    ("output_redacted_under_payload_disabled", |traces, _| {
        failed_generation(traces, false, true)
    }),
    (
        "no_inner_observations_dropped_under_concurrent_nesting",
        parents_match_otel,
    ),
    ("langfuse_parent_matches_otel_parent", parents_match_otel),
    (
        "generation_parents_under_own_lineage_calling_node_observation",
        parents_match_otel,
    ),
    (
        "orphan_generation_not_under_coincidentally_indexed_sibling",
        parents_match_otel,
    ),
    (
        "orphan_generation_parents_under_inner_fan_out_instance_observation",
        |traces, _| orphan_parents_under_instance(traces),
    ),
    (
        "orphan_generation_not_under_fan_out_node_or_trace",
        |traces, _| orphan_parents_under_instance(traces),
    ),
    (
        "orphan_generation_sibling_of_calling_node_observation",
        |traces, _| orphan_parents_under_instance(traces),
    ),
    (
        "generation_usage_input_omitted_when_prompt_tokens_null",
        |traces, _| one_generation(traces, |g| g.usage.is_some_and(|u| u.input.is_none())),
    ),
    (
        "generation_usage_output_and_total_present_when_sound",
        |traces, _| {
            one_generation(traces, |g| {
                g.usage
                    .is_some_and(|u| u.output.is_some() && u.total.is_some())
            })
        },
    ),
    (
        "exceeded_flag_survives_error_precedence_on_failed_generation",
        |traces, _| {
            one_generation(traces, |g| {
                g.level == Level::Error
                    && g.metadata.get("token_budget_exceeded") == Some(&Value::Bool(true))
            })
        },
    ),
    (
        "declared_bounds_present_on_failed_generation",
        |traces, _| {
            one_generation(traces, |g| {
                g.metadata
                    .get("token_budget")
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
            })
        },
    ),
    ("error_level_and_category_unchanged", |traces, _| {
        one_generation(traces, |g| {
            g.level == Level::Error
                && g.status_message.as_deref() == Some("structured_output_invalid")
        })
    }),
    (
        "exceeded_flag_present_and_false_under_budget",
        |traces, _| {
            one_generation(traces, |g| {
                g.metadata.get("token_budget_exceeded") == Some(&Value::Bool(false))
            })
        },
    ),
    ("no_warning_level_under_budget", |traces, _| {
        one_generation(traces, |g| {
            g.level == Level::Default && g.status_message.is_none()
        })
    }),
    ("caller_invocation_id_verbatim_on_attribute", |_, run| {
        caller_invocation_id_verbatim(run)
    }),
];

/// A check reading the invariant's value, the traces and the run.
type Valued = fn(&Value, &[LangfuseTrace], &Run<'_>) -> Verdict;

/// The Langfuse invariants whose value is an operand (or is not checked).
const VALUED: &Table<Valued> = &[
    ("unique_fan_out_indices_under", |v, traces, _| {
        unique_fan_out_indices_under(v, traces)
    }),
    ("fan_out_index_range", |v, traces, _| {
        fan_out_index_range(v, traces)
    }),
    ("dispatch_detached_child_trace_id_count", |v, traces, _| {
        detached_child_trace_id_count(v, traces)
    }),
    (
        "all_instance_traces_carry_detached_from_invocation_id",
        |_, traces, run| instance_traces_point_back(traces, run),
    ),
    ("generation_count", |v, traces, _| {
        generation_count(v, traces)
    }),
];

/// The names [`FLAGS`] and [`VALUED`] know (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || {
    let mut all = names(FLAGS);
    all.extend(names(VALUED));
    all
};

/// Checks invariant `name` against the Langfuse traces, when it is one of theirs
/// (this module's tables, then 117's, 084's and 039's, then the resume hook's).
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Verdict> {
    let traces = run.langfuse.as_deref()?;
    if let Some(verdict) = lookup(FLAGS, name) {
        return Some(yes(v).and_then(|()| verdict(traces, run)));
    }
    if let Some(verdict) = lookup(VALUED, name) {
        return Some(verdict(v, traces, run));
    }
    super::stream_invariants::check(name, v, traces, run)
        .or_else(|| super::session_invariants::check(name, v, traces, run))
        .or_else(|| super::nested_invariants::check(name, v, traces, run))
        .or_else(|| crate::obs::resume::invariant(name, v, run))
}
