//! Spec: conformance-adapter §5.8 / §6.3 — a case's `expected` and `expected_error`
//! blocks: the span-tree, LLM-span, observer, log, invocation and final-state
//! expectations (registers O2, O3, O5, O6).

use openarmature_observability::attributes as a;

use super::desugar::declared_only;
use super::logs::check_logs;
use super::spans::{attr, match_list, value_matches, Binder, Forest, MatchOpts};
use super::traces::{determinism, match_traces, no_edge_spans};
use super::{invariants, metrics, typed, Outcome, Run};
use crate::failure::Check;
use crate::ge::harness::Harness;
use crate::shared::lock;
use crate::yaml::Y;

const EXPECTED_KEYS: &[&str] = &[
    "span_tree",
    "span_tree_private",
    "span_tree_global",
    "no_openarmature_spans_on_global",
    "traces",
    "parent_trace",
    "detached_trace_count",
    "invariants",
    "no_edge_spans",
    "no_llm_provider_span",
    "llm_span_attributes",
    "llm_span_attributes_absent",
    "response_usage",
    "observers",
    "node_completed_event_carries_error",
    "log_records",
    "invocation_count",
    "determinism_check",
    "invoke_rejects_at_api_boundary",
    "no_spans_emitted",
    "no_langfuse_observations_emitted",
    "final_state",
    "metrics",
    "augment_rejects_at_call_site",
    "final_state_bounds",
    "per_invocation",
    "invocation_id",
    "observer_event_invariants",
    "langfuse_trace",
    "langfuse_traces",
    "no_langfuse_observations_on_global",
    "no_langfuse_observations_on_private",
    "langfuse_observations_on_global",
];

pub(crate) fn expected_error(e: &Y<'_>, outcomes: &[Outcome]) -> Check {
    e.check_keys(&["category", "raised_from"])?;
    let Some(Outcome::Failed {
        category,
        node,
        llm,
        ..
    }) = outcomes.first()
    else {
        return Err("the invocation did not fail".into());
    };
    if let Some(want) = e.get("category") {
        let want = want.str()?;
        // Register O6: an LLM error raised through the node is named by its §7 category.
        let got = llm.as_deref().unwrap_or(category);
        if want != got {
            return Err(format!("category {got}, expected {want}").into());
        }
    }
    if let Some(want) = e.get("raised_from") {
        let want = want.str()?;
        if want != node {
            return Err(format!("raised from {node}, expected {want}").into());
        }
    }
    Ok(())
}

fn truthy(y: &Y<'_>) -> Check {
    if y.bool()? {
        Ok(())
    } else {
        Err(format!("{}: only `true` is supported", y.location()).into())
    }
}

pub(super) fn assert_expected(
    expected: &Y<'_>,
    run: &Run<'_>,
    outcomes: &[Outcome],
    harness: &Harness,
    base: &MatchOpts,
    global: Option<&Forest>,
) -> Check {
    expected.check_keys(EXPECTED_KEYS)?;
    let forest = run.forest;
    let mut binder = Binder::default();
    for key in ["span_tree", "span_tree_private"] {
        let Some(tree) = expected.get(key) else {
            continue;
        };
        let want = tree.seq()?;
        let mut opts = base.clone();
        if run.case.get("name").and_then(|n| n.str().ok()) == Some(O2_CASE) {
            opts.presence_only = &[a::ERROR_CATEGORY];
        }
        binder = match_list(&want, &forest.roots(), forest, &binder, &opts, key)?;
    }
    if let Some(tree) = expected.get("span_tree_global") {
        let global = global.ok_or("span_tree_global: no global provider was installed")?;
        let want = tree.seq()?;
        binder = match_list(
            &want,
            &global.roots(),
            global,
            &binder,
            base,
            "span_tree_global",
        )?;
    }
    if let Some(flag) = expected.get("no_openarmature_spans_on_global") {
        truthy(&flag)?;
        let global = global.ok_or("no_openarmature_spans_on_global: no global provider")?;
        if let Some(s) = global.spans.iter().find(|s| {
            s.name.starts_with("openarmature")
                || s.instrumentation_scope.name()
                    == openarmature_observability::INSTRUMENTATION_SCOPE
                || s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str().starts_with("openarmature."))
        }) {
            return Err(format!(
                "no_openarmature_spans_on_global: `{}` reached the global provider",
                s.name
            )
            .into());
        }
    }
    if let Some(flag) = expected.get("no_llm_provider_span") {
        truthy(&flag)?;
        let n = run.llm_spans().len();
        if n != 0 {
            return Err(format!("no_llm_provider_span: {n} LLM spans").into());
        }
    }
    for key in ["llm_span_attributes", "llm_span_attributes_absent"] {
        let Some(block) = expected.get(key) else {
            continue;
        };
        let spans = run.llm_spans();
        if spans.is_empty() {
            return Err(format!("{key}: no LLM span").into());
        }
        for span in spans {
            if key == "llm_span_attributes" {
                for (k, want) in block.entries()? {
                    let want = want.json()?;
                    let got = attr(span, &k).ok_or_else(|| format!("{key}: `{k}` is missing"))?;
                    value_matches(&want, &got, &mut binder, &format!("{key}.{k}"))?;
                }
            } else {
                for k in block.strings()? {
                    if let Some(v) = attr(span, &k) {
                        return Err(format!("{key}: `{k}` is present ({v})").into());
                    }
                }
            }
        }
    }
    if let Some(usage) = expected.get("response_usage") {
        let want = usage.json()?;
        let [call] = run.calls.as_slice() else {
            return Err(format!(
                "response_usage: {} LLM calls, expected one",
                run.calls.len()
            )
            .into());
        };
        let response = call
            .result
            .as_ref()
            .map_err(|e| format!("response_usage: the call raised {e}"))?;
        crate::matchers::check(
            &want,
            &typed::usage_json(&response.usage),
            &mut crate::matchers::Bindings::default(),
            "response_usage",
        )?;
    }
    if let Some(observers) = expected.get("observers") {
        for (name, block) in observers.entries()? {
            let collector = run
                .collectors
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| format!("observers: no typed observer named `{name}`"))?;
            typed::expectations(&block, &collector.records())
                .map_err(|m| m.context(format!("observers.{name}: ")))?;
        }
    }
    if let Some(e) = expected.get("node_completed_event_carries_error") {
        node_completed_error(&e, run)?;
    }
    if let Some(traces) = expected.get("traces") {
        let opts = MatchOpts {
            subset_children: run.case.get("name").and_then(|n| n.str().ok()) == Some(O5_CASE),
            ..base.clone()
        };
        binder = match_traces(&traces.seq()?, forest, &binder, &opts)?;
    }
    if let Some(parent) = expected.get("parent_trace") {
        parent.check_keys(&["span_tree"])?;
        let parents = forest.parent_traces();
        let [trace] = parents.as_slice() else {
            return Err(format!("parent_trace: {} parent traces", parents.len()).into());
        };
        let want = parent.req("span_tree").and_then(|t| t.seq())?;
        binder = match_list(
            &want,
            &forest.roots_of(*trace),
            forest,
            &binder,
            base,
            "parent_trace",
        )?;
    }
    if let Some(n) = expected.get("detached_trace_count") {
        let want = n.i64()?;
        let got = forest
            .trace_ids()
            .len()
            .saturating_sub(forest.parent_traces().len());
        if i64::try_from(got).ok() != Some(want) {
            return Err(format!("detached_trace_count: {got}, expected {want}").into());
        }
    }
    if let Some(records) = expected.get("log_records") {
        check_logs(&records.seq()?, &run.logs, &mut binder)?;
    }
    if let Some(n) = expected.get("invocation_count") {
        let want = n.i64()?;
        let roots = forest
            .parent_traces()
            .into_iter()
            .flat_map(|t| forest.roots_of(t))
            .filter(|r| r.name == a::INVOCATION_SPAN)
            .count();
        if i64::try_from(outcomes.len()).ok() != Some(want)
            || i64::try_from(roots).ok() != Some(want)
        {
            return Err(format!(
                "invocation_count: {} invocations, {roots} invocation spans, expected {want}",
                outcomes.len()
            )
            .into());
        }
    }
    if let Some(d) = expected.get("determinism_check") {
        determinism(&d, run)?;
    }
    if let Some(flag) = expected.get("invoke_rejects_at_api_boundary") {
        truthy(&flag)?;
        if !outcomes.iter().all(|o| matches!(o, Outcome::Rejected)) {
            return Err("invoke_rejects_at_api_boundary: the invocation was not rejected".into());
        }
        if !lock(&harness.order).is_empty() {
            return Err("invoke_rejects_at_api_boundary: a node ran".into());
        }
    }
    if let Some(flag) = expected.get("no_spans_emitted") {
        truthy(&flag)?;
        if !forest.spans.is_empty() {
            return Err(format!("no_spans_emitted: {} spans", forest.spans.len()).into());
        }
    }
    if let Some(flag) = expected.get("no_langfuse_observations_emitted") {
        // Register O3: without a Langfuse observer nothing can be emitted.
        truthy(&flag)?;
        if let Some(n) = run.langfuse.as_ref().map(Vec::len).filter(|n| *n > 0) {
            return Err(format!("no_langfuse_observations_emitted: {n} traces").into());
        }
    }
    if expected.get("langfuse_trace").is_some() || expected.get("langfuse_traces").is_some() {
        let traces = run
            .langfuse
            .as_deref()
            .ok_or("langfuse_trace: no Langfuse observer ran")?;
        super::langfuse::expect::check_expected(expected, traces, Default::default())?;
    }
    let langfuse_spans = |f: &Forest| {
        f.spans
            .iter()
            .filter(|s| s.name.starts_with("langfuse.observation"))
            .count()
    };
    for (key, private, want_some) in [
        ("no_langfuse_observations_on_global", false, false),
        ("no_langfuse_observations_on_private", true, false),
        ("langfuse_observations_on_global", false, true),
    ] {
        let Some(flag) = expected.get(key) else {
            continue;
        };
        truthy(&flag)?;
        let n = if private {
            langfuse_spans(forest)
        } else {
            langfuse_spans(global.ok_or_else(|| format!("{key}: no global provider"))?)
        };
        if (n > 0) != want_some {
            return Err(format!("{key}: {n} Langfuse observation spans").into());
        }
    }
    if let Some(flag) = expected.get("no_edge_spans") {
        truthy(&flag)?;
        no_edge_spans(run)?;
    }
    if let Some(state) = expected.get("final_state") {
        let want = state.json()?;
        match outcomes.first() {
            Some(Outcome::Completed(got)) => crate::matchers::check(
                &want,
                &declared_only(got, run.case, &want),
                &mut crate::matchers::Bindings::default(),
                "final_state",
            )?,
            _ => return Err("final_state: the invocation did not complete".into()),
        }
    }
    if let Some(list) = expected.get("metrics") {
        metrics::check(&list, &run.metrics)?;
    }
    if let Some(inv) = expected.get("invariants") {
        invariants::check_all(&inv, run)?;
    }
    Ok(())
}

/// Register O2 (see the module docs).
const O2_CASE: &str = "three_attempts_third_succeeds";

/// Register O5 (see the module docs).
const O5_CASE: &str = "detached_subgraph_attribution_propagates_to_child_trace_invocation_span";

/// `node_completed_event_carries_error: {node_name, error_category}` (053): a
/// completed node event of that node whose error's §6.4 derived category (register
/// O6) is the one named.
fn node_completed_error(y: &Y<'_>, run: &Run<'_>) -> Check {
    y.check_keys(&["node_name", "error_category"])?;
    let node = y.req("node_name").and_then(|n| n.str())?;
    let want = y.req("error_category").and_then(|c| c.str())?;
    let found: Vec<Option<String>> = run
        .events
        .iter()
        .filter_map(|e| e.as_node())
        .filter(|n| &*n.node_name == node && n.phase == openarmature_graph::Phase::Completed)
        .filter_map(|n| n.error.as_ref())
        .map(openarmature_graph::EventError::derived_category)
        .collect();
    if found.iter().any(|c| c.as_deref() == Some(want)) {
        Ok(())
    } else {
        Err(format!(
            "node_completed_event_carries_error: `{node}` completed with error categories {found:?}, expected {want}"
        ).into())
    }
}
