//! Spec: observability conformance (fixture-001 header) and conformance-adapter
//! §5.8 — trace-level expectations: `traces` matched per trace id (register O5),
//! `no_edge_spans`, and `determinism_check` over canonical span forms.

use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;

use super::spans::{self, attr_str, match_list, Binder, Forest, MatchOpts};
use super::Run;
use crate::failure::{Check, Failure};
use crate::yaml::Y;

pub(super) fn match_traces(
    expected: &[Y<'_>],
    forest: &Forest,
    binder: &Binder,
    opts: &MatchOpts,
) -> Check<Binder> {
    let actual = forest.trace_ids();
    if actual.len() != expected.len() {
        return Err(format!(
            "traces: {} traces, expected {}",
            actual.len(),
            expected.len()
        )
        .into());
    }
    fn go(
        expected: &[Y<'_>],
        actual: &[opentelemetry::trace::TraceId],
        used: &mut Vec<bool>,
        forest: &Forest,
        binder: &Binder,
        opts: &MatchOpts,
    ) -> Check<Binder> {
        let Some((first, rest)) = expected.split_first() else {
            return Ok(binder.clone());
        };
        first.check_keys(&["trace_id", "span_tree"])?;
        let token = first
            .req("trace_id")
            .and_then(|t| t.str().map(str::to_owned))?;
        let tree = first.req("span_tree").and_then(|t| t.seq())?;
        let mut last = None;
        for (i, trace) in actual.iter().enumerate() {
            if used[i] {
                continue;
            }
            let mut b = binder.clone();
            if let Err(e) = b.bind(&token, &trace.to_string()) {
                last = Some(e);
                continue;
            }
            match match_list(
                &tree,
                &forest.roots_of(*trace),
                forest,
                &b,
                opts,
                &format!("traces[{token}]"),
            ) {
                Ok(b) => {
                    used[i] = true;
                    match go(rest, actual, used, forest, &b, opts) {
                        Ok(done) => return Ok(done),
                        Err(e) => {
                            used[i] = false;
                            last = Some(e);
                        }
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| "traces: no trace left".into()))
    }
    go(
        expected,
        &actual,
        &mut vec![false; actual.len()],
        forest,
        binder,
        opts,
    )
}

pub(super) fn no_edge_spans(run: &Run<'_>) -> Check {
    let mut names: Vec<String> = vec![a::INVOCATION_SPAN.into(), a::LLM_SPAN.into()];
    for (_, node) in run
        .case
        .get("nodes")
        .and_then(|n| n.entries().ok())
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.clone(), (k, v)))
    {
        names.push(node.0);
    }
    match run
        .forest
        .spans
        .iter()
        .find(|s| !names.iter().any(|n| *n == s.name))
    {
        Some(s) => Err(format!("no_edge_spans: unexpected span `{}`", s.name).into()),
        None => Ok(()),
    }
}

/// A run's spans as a canonical string: names, statuses and attributes (minus the
/// ignored ones), children sorted.
fn canonical(span: &SpanData, forest: &Forest, ignore: &[String]) -> String {
    let ignored = |k: &str| {
        ignore.iter().any(|i| match i.strip_suffix('*') {
            Some(prefix) => k.starts_with(prefix),
            None => k == i,
        })
    };
    let mut attrs: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| !ignored(kv.key.as_str()))
        .map(|kv| format!("{}={}", kv.key, spans::json_of(&kv.value)))
        .collect();
    attrs.sort();
    let mut kids: Vec<String> = forest
        .children(span)
        .into_iter()
        .map(|c| canonical(c, forest, ignore))
        .collect();
    kids.sort();
    format!(
        "{}[{:?}]{{{}}}({})",
        span.name,
        span.status,
        attrs.join(","),
        kids.join(";")
    )
}

pub(super) fn determinism(d: &Y<'_>, run: &Run<'_>) -> Check {
    d.check_keys(&[
        "compare_runs",
        "ignore_attributes",
        "compare",
        "require_equal",
    ])?;
    for aspect in d
        .get("compare")
        .map(|c| c.strings())
        .transpose()?
        .unwrap_or_default()
    {
        if ![
            "span_tree_structure",
            "span_names",
            "span_status",
            "span_attributes_excluding_ignored",
        ]
        .contains(&aspect.as_str())
        {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: determinism aspect `{aspect}`"
            )));
        }
    }
    let ignore = d
        .get("ignore_attributes")
        .map(|c| c.strings())
        .transpose()?
        .unwrap_or_default();
    let runs: Vec<i64> = d
        .req("compare_runs")
        .and_then(|r| r.seq())?
        .iter()
        .map(|r| r.i64())
        .collect::<Result<_, _>>()?;
    let require_equal = d
        .get("require_equal")
        .map(|r| r.bool())
        .transpose()?
        .unwrap_or(true);
    let forms: Vec<String> = run
        .invocation_ids
        .iter()
        .map(|id| {
            let mut roots: Vec<String> = run
                .forest
                .roots()
                .into_iter()
                .filter(|r| attr_str(r, a::INVOCATION_ID).as_deref() == Some(id.as_str()))
                .map(|r| canonical(r, run.forest, &ignore))
                .collect();
            roots.sort();
            roots.join("|")
        })
        .collect();
    let picked: Vec<&String> = runs
        .iter()
        .map(|i| {
            usize::try_from(*i)
                .ok()
                .and_then(|i| forms.get(i))
                .ok_or_else(|| format!("determinism_check: no run {i}"))
        })
        .collect::<Result<_, _>>()?;
    let equal = picked.windows(2).all(|w| w[0] == w[1]);
    if equal == require_equal {
        Ok(())
    } else {
        Err(format!("determinism_check: runs differ: {picked:?}").into())
    }
}
