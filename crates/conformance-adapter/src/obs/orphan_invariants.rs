//! Spec: conformance-adapter §5.9 — the orphan-call invariants of observability
//! fixtures 133, 152 and 153: §5.5 *Lineage-resolved parent*, the fallback for a
//! provider span whose calling node's span is not open (a call made by a
//! `calls_llm_from_wrapper` middleware). Built on the lineage machinery of
//! [`super::lineage_invariants`]; each check runs over every orphan call (there must
//! be one) and first requires the nesting it is about.

use openarmature_observability::attributes as a;

use serde_json::Value;

use super::lineage_invariants::{
    calling_node, event_lineage, is_dispatch, is_instance, orphans, text, tree_lineage,
    under_own_wrapper, Call, Hop,
};
use super::spans::{attr, attr_str, Forest};
use super::{typed, Run};

use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};

/// Runs `each` over every orphan call.
fn each(run: &Run<'_>, each: impl Fn(&Forest, &Call<'_>) -> Check) -> Check {
    for c in orphans(run)? {
        each(run.forest, &c)?;
    }
    Ok(())
}

fn instances(lineage: &[Hop]) -> usize {
    lineage
        .iter()
        .filter(|h| matches!(h, Hop::Instance(_)))
        .count()
}

/// 133: under the call's own *inner* fan-out instance span.
fn under_inner_instance(f: &Forest, c: &Call<'_>) -> Check {
    ensure(instances(&c.lineage) >= 2, || {
        format!("the call's lineage {:?} is not nested", c.lineage)
    })?;
    under_own_instance(f, c)
}

/// 133: another instance span shares the parent's name and index at another
/// lineage, and the orphan is under the one of its own lineage.
fn not_under_coinciding_sibling(f: &Forest, c: &Call<'_>) -> Check {
    let index = attr(c.parent, a::NODE_FAN_OUT_INDEX);
    let coinciding = f.spans.iter().any(|s| {
        is_instance(s)
            && s.name == c.parent.name
            && attr(s, a::NODE_FAN_OUT_INDEX) == index
            && tree_lineage(f, s) != c.lineage
    });
    ensure(coinciding, || {
        "no instance span shares the orphan's innermost index".into()
    })?;
    under_own_wrapper(f, c)
}

/// 133 / 152 / 153: a sibling of the calling node's span. The call really was made
/// while that span was not open: in delivery order, its completion event is not
/// between the calling attempt's `started` and `completed` events. (Span times are
/// not compared: the per-attempt LLM signal carries no timestamp, so the observer
/// stamps the provider span at delivery.)
fn sibling_of_caller(run: &Run<'_>, c: &Call<'_>) -> Check {
    let f = run.forest;
    let node = calling_node(f, c)?;
    let node_parent = f.parent(node).map(|p| p.span_context.span_id());
    ensure(node_parent == Some(c.parent.span_context.span_id()), || {
        format!(
            "the orphan parents under `{}`, the `{}` span elsewhere",
            c.parent.name, node.name
        )
    })?;
    let records: Vec<Value> = run
        .events
        .iter()
        .filter_map(|e| typed::record(e, None))
        .collect();
    let at = |pick: &dyn Fn(&Value) -> bool| records.iter().position(pick);
    let call =
        at(&|r| text(r, "event_type") == "LlmCompletionEvent" && text(r, "response_id") == c.id);
    let phase = |p: &'static str| {
        move |r: &Value| {
            text(r, "event_type") == "NodeEvent"
                && text(r, "phase") == p
                && text(r, "node_name") == c.node
                && r.get("attempt_index").and_then(Value::as_u64) == Some(c.attempt)
                && event_lineage(r) == c.lineage
        }
    };
    match (call, at(&phase("started")), at(&phase("completed"))) {
        (Some(i), Some(s), Some(e)) => ensure(i < s || i > e, || {
            format!("the call of `{}` was made inside its node attempt", c.node)
        }),
        other => Err(format!("events of the call / its node attempt missing: {other:?}").into()),
    }
}

/// 152: under the dispatch span of its own branch.
fn under_dispatch(f: &Forest, c: &Call<'_>) -> Check {
    ensure(matches!(c.lineage.last(), Some(Hop::Branch(_))), || {
        format!(
            "the call's lineage {:?} does not end in a branch",
            c.lineage
        )
    })?;
    ensure(is_dispatch(c.parent), || {
        format!(
            "the orphan parents under `{}`, not a dispatch span",
            c.parent.name
        )
    })?;
    under_own_wrapper(f, c)
}

/// 152: the parent's branch name is the call's, and the orphans span two branches.
fn routed_by_name(run: &Run<'_>) -> Check {
    let mut branches = Vec::new();
    each(run, |f, c| {
        under_dispatch(f, c)?;
        let want = match c.lineage.last() {
            Some(Hop::Branch(b)) => b.clone(),
            _ => String::new(),
        };
        let got = attr_str(c.parent, a::NODE_BRANCH_NAME).unwrap_or_default();
        ensure(got == want, || {
            format!("the orphan of branch `{want}` is under `{got}`")
        })
    })?;
    for c in orphans(run)? {
        if let Some(Hop::Branch(b)) = c.lineage.last() {
            if !branches.contains(b) {
                branches.push(b.clone());
            }
        }
    }
    ensure(branches.len() >= 2, || {
        format!("orphans in branches {branches:?}, expected two or more")
    })
}

/// 153: under the innermost wrapper — the fan-out instance — of a lineage that
/// crosses a branch first.
fn under_innermost_instance(f: &Forest, c: &Call<'_>) -> Check {
    let mixed = matches!(c.lineage.last(), Some(Hop::Instance(_)))
        && c.lineage.iter().any(|h| matches!(h, Hop::Branch(_)));
    ensure(mixed, || {
        format!(
            "the call's lineage {:?} is not branch-then-instance",
            c.lineage
        )
    })?;
    under_own_instance(f, c)
}

/// 153: not under the enclosing branch dispatch span (which is an ancestor).
fn not_under_enclosing_dispatch(f: &Forest, c: &Call<'_>) -> Check {
    ensure(!is_dispatch(c.parent), || {
        format!("the orphan parents under dispatch span `{}`", c.parent.name)
    })?;
    let mut at = f.parent(c.parent);
    let mut enclosed = false;
    while let Some(s) = at {
        enclosed |= is_dispatch(s);
        at = f.parent(s);
    }
    ensure(enclosed, || "no enclosing dispatch span".into())?;
    under_own_wrapper(f, c)
}

/// The orphan invariants (their values already required to be `true` by the caller).
const TABLE: &Table<fn(&Run<'_>) -> Check> = &[
    (
        "orphan_llm_span_parents_under_inner_fan_out_instance",
        |run| each(run, under_inner_instance),
    ),
    (
        "orphan_llm_span_not_under_coincidentally_indexed_sibling",
        |run| each(run, not_under_coinciding_sibling),
    ),
    (
        "orphan_llm_span_not_under_fan_out_node_or_invocation",
        |run| each(run, under_own_wrapper),
    ),
    (
        "orphan_llm_span_not_under_dispatcher_node_or_invocation",
        |run| each(run, under_own_wrapper),
    ),
    ("orphan_llm_span_not_under_node_or_invocation", |run| {
        each(run, under_own_wrapper)
    }),
    ("orphan_llm_span_sibling_of_calling_node_span", |run| {
        each(run, |_, c| sibling_of_caller(run, c))
    }),
    ("orphan_llm_span_sibling_of_guard_node_span", |run| {
        each(run, |_, c| sibling_of_caller(run, c))
    }),
    (
        "orphan_llm_span_parents_under_branch_dispatch_span",
        |run| each(run, under_dispatch),
    ),
    (
        "orphan_llm_span_routed_to_correct_branch_by_name",
        routed_by_name,
    ),
    (
        "orphan_llm_span_parents_under_innermost_fan_out_instance",
        |run| each(run, under_innermost_instance),
    ),
    (
        "orphan_llm_span_not_under_work_branch_dispatch_span",
        |run| each(run, not_under_enclosing_dispatch),
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The orphan invariant `name` (its value already required to be `true` by the
/// caller), or `None` when it is not one of these.
pub(super) fn check(name: &str, run: &Run<'_>) -> Option<Check> {
    lookup(TABLE, name).map(|verdict| verdict(run))
}

/// The orphan parents under a fan-out instance span, and that span is its own wrapper.
fn under_own_instance(f: &Forest, c: &Call<'_>) -> Check {
    ensure(is_instance(c.parent), || {
        format!(
            "the orphan parents under `{}`, not an instance",
            c.parent.name
        )
    })?;
    under_own_wrapper(f, c)
}
