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

/// Checks invariant `name` against the Langfuse traces, when it is one of theirs.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Verdict> {
    let traces = run.langfuse.as_deref()?;
    let yes = || match v {
        Value::Bool(true) => Ok(()),
        other => mismatch(format!("expected `true`, got {other}")),
    };
    let baseline = run.caller_metadata();
    let first_id = run.invocation_ids.first().cloned().unwrap_or_default();
    let verdict = match name {
        "correlation_id_consistency" | "correlation_id_consistent_across_traces" => {
            yes().and_then(|()| correlation(traces))
        }
        "trace_id_equals_invocation_id_dashes_stripped"
        | "langfuse_trace_id_is_uuid_hex_dashes_stripped" => yes().and_then(|()| {
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
        }),
        "langfuse_trace_id_is_sha256_first16_hex" => yes().and_then(|()| {
            let t = own(traces)
                .first()
                .map(|t| t.id.clone())
                .unwrap_or_default();
            let hexlike = t.len() == 32
                && t.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
            if hexlike && t != hex_dashless(&first_id) {
                Ok(())
            } else {
                mismatch(format!("trace id {t}"))
            }
        }),
        "raw_invocation_id_in_trace_metadata" => yes().and_then(|()| {
            let got = own(traces)
                .first()
                .and_then(|t| t.metadata.get("invocation_id").cloned());
            if got == Some(Value::String(first_id.clone())) {
                Ok(())
            } else {
                mismatch(format!("{got:?}"))
            }
        }),
        "caller_metadata_top_level_on_trace" => yes().and_then(|()| {
            for t in own(traces) {
                for (k, val) in &baseline {
                    if t.metadata.get(k) != Some(val) {
                        return mismatch(format!("trace lacks {k}={val}"));
                    }
                }
            }
            Ok(())
        }),
        "caller_metadata_top_level_on_every_observation" | "baseline_caller_metadata_universal" => {
            yes().and_then(|()| {
                for o in all_obs(traces) {
                    for (k, val) in &baseline {
                        if o.metadata.get(k) != Some(val) {
                            return mismatch(format!("`{}` lacks {k}={val}", o.name));
                        }
                    }
                }
                Ok(())
            })
        }
        "fan_out_per_instance_metadata_isolation" => {
            yes().and_then(|()| isolation(traces, &baseline, is_instance))
        }
        "parallel_branches_per_branch_metadata_isolation" => {
            yes().and_then(|()| isolation(traces, &baseline, is_branch))
        }
        "per_branch_oa_emitted_branch_name_isolation" => yes().and_then(|()| {
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
        }),
        "open_span_update_reaches_invocation_and_node_spans" => yes().and_then(|()| {
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
        }),
        "unique_fan_out_indices_under" => {
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
        "fan_out_index_range" => {
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
        "distinct_trace_ids"
        | "all_instance_trace_ids_distinct"
        | "each_invocation_distinct_trace_id" => yes().and_then(|()| {
            let ids: BTreeSet<&str> = traces.iter().map(|t| t.id.as_str()).collect();
            if traces.len() >= 2 && ids.len() == traces.len() {
                Ok(())
            } else {
                mismatch(format!("{} traces, {} ids", traces.len(), ids.len()))
            }
        }),
        "dispatch_detached_child_trace_id_count" => {
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
        "no_instance_spans_in_parent_trace" => yes().and_then(|()| {
            match own(traces)
                .iter()
                .flat_map(|t| t.all_observations())
                .find(|o| is_instance(o))
            {
                Some(o) => mismatch(format!("instance `{}` in the parent trace", o.name)),
                None => Ok(()),
            }
        }),
        "all_instance_traces_carry_detached_from_invocation_id" => {
            let bad = traces.iter().filter(|t| detached(t)).find(|t| {
                t.metadata.get("detached_from_invocation_id")
                    != Some(&Value::String(first_id.clone()))
            });
            match bad {
                None if traces.iter().any(detached) => Ok(()),
                _ => mismatch("a detached trace does not point back to the invocation"),
            }
        }
        "implementation_name_present_on_trace"
        | "implementation_version_present_on_trace"
        | "rows_emit_with_default_privacy_config"
        | "rows_emit_with_state_payload_enabled"
        | "always_emit_invariant_inherited_from_spec_5_1" => yes().and_then(|()| {
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
        }),
        "failed_generation_renders_error_level_and_category"
        | "usage_finish_reason_and_error_level_unchanged_under_payload_disabled"
        | "failed_generation_carries_output_usage_finish_reason"
        | "output_redacted_under_payload_disabled" => yes().and_then(|()| {
            let g = generations(traces);
            let [g] = g.as_slice() else {
                return mismatch(format!("{} generations", g.len()));
            };
            if g.level != Level::Error
                || g.status_message.as_deref() != Some("structured_output_invalid")
            {
                return mismatch(format!("level {:?} status {:?}", g.level, g.status_message));
            }
            if g.usage.is_none() || !g.metadata.contains_key("finish_reason") {
                return mismatch("usage / finish_reason missing");
            }
            let want_output = name == "failed_generation_carries_output_usage_finish_reason";
            let redacted = name == "output_redacted_under_payload_disabled";
            if (want_output && g.output.is_none()) || (redacted && g.output.is_some()) {
                return mismatch(format!("output {:?}", g.output));
            }
            Ok(())
        }),
        "generation_count" => {
            let n = generations(traces).len() as u64;
            if Some(n) == v.as_u64() {
                Ok(())
            } else {
                mismatch(format!("{n} generations, expected {v}"))
            }
        }
        "no_inner_observations_dropped_under_concurrent_nesting"
        | "langfuse_parent_matches_otel_parent"
        | "generation_parents_under_own_lineage_calling_node_observation"
        | "orphan_generation_not_under_coincidentally_indexed_sibling" => yes().and_then(|()| {
            let lf = langfuse_paths(traces);
            let otel = otel_paths(run.forest);
            let distinct: BTreeSet<_> = lf.iter().collect();
            if lf != otel || distinct.len() != lf.len() || lf.is_empty() {
                return mismatch(format!("Langfuse parents {lf:?}, OTel parents {otel:?}"));
            }
            Ok(())
        }),
        "orphan_generation_parents_under_inner_fan_out_instance_observation"
        | "orphan_generation_not_under_fan_out_node_or_trace"
        | "orphan_generation_sibling_of_calling_node_observation" => yes().and_then(|()| {
            for t in traces {
                for g in t
                    .all_observations()
                    .into_iter()
                    .filter(|o| o.kind == ObservationType::Generation)
                {
                    let p = parent_of(t, &g.id).ok_or("a generation parents under the trace")?;
                    if !is_instance(p)
                        || !p.children.iter().any(|c| c.kind == ObservationType::Span)
                    {
                        return mismatch(format!(
                            "generation parent `{}` {:?}",
                            p.name, p.metadata
                        ));
                    }
                }
            }
            Ok(())
        }),
        "generation_usage_input_omitted_when_prompt_tokens_null" => yes()
            .and_then(|()| one_generation(traces, |g| g.usage.is_some_and(|u| u.input.is_none()))),
        "generation_usage_output_and_total_present_when_sound" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.usage
                    .is_some_and(|u| u.output.is_some() && u.total.is_some())
            })
        }),
        "exceeded_flag_survives_error_precedence_on_failed_generation" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.level == Level::Error
                    && g.metadata.get("token_budget_exceeded") == Some(&Value::Bool(true))
            })
        }),
        "declared_bounds_present_on_failed_generation" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.metadata
                    .get("token_budget")
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
            })
        }),
        "error_level_and_category_unchanged" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.level == Level::Error
                    && g.status_message.as_deref() == Some("structured_output_invalid")
            })
        }),
        "exceeded_flag_present_and_false_under_budget" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.metadata.get("token_budget_exceeded") == Some(&Value::Bool(false))
            })
        }),
        "no_warning_level_under_budget" => yes().and_then(|()| {
            one_generation(traces, |g| {
                g.level == Level::Default && g.status_message.is_none()
            })
        }),
        "caller_invocation_id_verbatim_on_attribute" => yes().and_then(|()| {
            use openarmature_observability::attributes as a;
            let want = run
                .case
                .get("caller_invocation_id")
                .and_then(|c| c.str().ok())
                .unwrap_or_default();
            let roots = run.forest.roots();
            let got: Vec<Option<Value>> = roots.iter().map(|r| attr(r, a::INVOCATION_ID)).collect();
            if !want.is_empty()
                && first_id == want
                && got
                    .iter()
                    .all(|g| g.as_ref().and_then(Value::as_str) == Some(want))
            {
                Ok(())
            } else {
                mismatch(format!("invocation ids {got:?}, expected {want}"))
            }
        }),
        other => {
            return super::stream_invariants::check(other, v, traces, run)
                .or_else(|| super::session_invariants::check(other, v, traces, run))
                .or_else(|| super::nested_invariants::check(other, v, traces, run))
                .or_else(|| crate::obs::resume::invariant(other, v, run))
        }
    };
    Some(verdict)
}
