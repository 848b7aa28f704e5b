//! Spec: conformance-adapter §5.9 — the named invariants of the observability fixtures
//! about span lineage under nesting: §4.1 / §4.3 / §6 chain-keyed spans (132),
//! §5.5 *Lineage-resolved parent* for provider spans, including the orphan fallback
//! (132, 133, 152, 153), and §5.7 / §6 dispatch-span closing (038, 152, 153).
//!
//! Lineage is computed two independent ways and compared:
//!
//! - from the **tree**: walking up from a span, every fan-out instance span (it
//!   carries `openarmature.fan_out.parent_node_name`) contributes its index and every
//!   branch dispatch span (`openarmature.parallel_branches.parent_node_name`) its
//!   branch name, outermost first;
//! - from the **events**: the implicit recorder's `fan_out_index_chain` /
//!   `branch_name_chain`, boundary by boundary.
//!
//! A provider span is paired with its call's `LlmCompletionEvent` by the response id
//! (`gen_ai.response.id`). Orphan calls are the ones the adapter's
//! `calls_llm_from_wrapper` middleware made (see [`super::wrapper_llm`]), known from
//! the adapter's own call records, not from the spans. Every predicate first
//! requires the situation it is about (nesting, a coinciding innermost index, two
//! branches), so none passes vacuously. An unknown name falls through to the caller.

use std::collections::BTreeSet;

use openarmature_observability::attributes as a;
use opentelemetry_sdk::trace::SpanData;
use serde_json::Value;

use super::spans::{attr, attr_str, Forest};
use super::typed::records;
use super::Run;

use super::invariants::truthy;
use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};

/// One boundary crossed on the way in: a fan-out instance or a parallel branch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Hop {
    Instance(u64),
    Branch(String),
}

pub(super) fn is_instance(s: &SpanData) -> bool {
    attr(s, a::FAN_OUT_PARENT_NODE_NAME).is_some()
}

pub(super) fn is_dispatch(s: &SpanData) -> bool {
    attr(s, a::PARALLEL_BRANCHES_PARENT_NODE_NAME).is_some()
}

/// A node attempt span (composite node spans included; wrappers carry no attempt).
fn is_node(s: &SpanData) -> bool {
    attr(s, a::NODE_ATTEMPT_INDEX).is_some()
}

fn is_composite(s: &SpanData) -> bool {
    attr(s, a::FAN_OUT_ITEM_COUNT).is_some() || attr(s, a::PARALLEL_BRANCHES_BRANCH_COUNT).is_some()
}

/// The lineage a span sits in, read from the tree (the span itself included).
pub(super) fn tree_lineage(f: &Forest, span: &SpanData) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut at = Some(span);
    while let Some(s) = at {
        if is_instance(s) {
            hops.push(Hop::Instance(
                attr(s, a::NODE_FAN_OUT_INDEX)
                    .and_then(|v| v.as_u64())
                    .unwrap_or(u64::MAX),
            ));
        } else if is_dispatch(s) {
            hops.push(Hop::Branch(
                attr_str(s, a::NODE_BRANCH_NAME).unwrap_or_default(),
            ));
        }
        at = f.parent(s);
    }
    hops.reverse();
    hops
}

/// The lineage an event record reports (`fan_out_index_chain` / `branch_name_chain`).
pub(super) fn event_lineage(r: &Value) -> Vec<Hop> {
    let list = |k: &str| {
        r.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (fan, branch) = (list("fan_out_index_chain"), list("branch_name_chain"));
    (0..fan.len().max(branch.len()))
        .filter_map(|i| {
            match (
                fan.get(i).and_then(Value::as_u64),
                branch.get(i).and_then(Value::as_str),
            ) {
                (Some(n), _) => Some(Hop::Instance(n)),
                (None, Some(b)) => Some(Hop::Branch(b.to_owned())),
                _ => None,
            }
        })
        .collect()
}

pub(super) fn text<'v>(r: &'v Value, k: &str) -> &'v str {
    r.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// A provider span with the event of its call.
pub(super) struct Call<'f> {
    /// The response id the span and the event share.
    pub(super) id: String,
    pub(super) parent: &'f SpanData,
    pub(super) node: String,
    pub(super) attempt: u64,
    pub(super) lineage: Vec<Hop>,
    from_wrapper: bool,
}

/// Every provider span, paired with its completion event by response id.
fn calls<'f>(run: &'f Run<'_>) -> Check<Vec<Call<'f>>> {
    let events = records(run, "LlmCompletionEvent");
    let wrapper_ids: BTreeSet<String> = run
        .calls
        .iter()
        .filter(|c| c.from_wrapper)
        .filter_map(|c| c.result.as_ref().ok())
        .filter_map(|r| r.response_id().map(str::to_owned))
        .collect();
    let mut out = Vec::new();
    for span in run.llm_spans() {
        let id = attr_str(span, a::GEN_AI_RESPONSE_ID)
            .ok_or("an LLM span has no gen_ai.response.id to pair it by")?;
        let event = events
            .iter()
            .find(|e| text(e, "response_id") == id)
            .ok_or_else(|| format!("no LlmCompletionEvent has response_id `{id}`"))?;
        let parent = run
            .forest
            .parent(span)
            .ok_or_else(|| format!("the LLM span of `{id}` has no parent"))?;
        out.push(Call {
            parent,
            id: id.clone(),
            node: text(event, "node_name").to_owned(),
            attempt: event
                .get("attempt_index")
                .and_then(Value::as_u64)
                .unwrap_or_default(),
            lineage: event_lineage(event),
            from_wrapper: wrapper_ids.contains(&id),
        });
    }
    ensure(!out.is_empty(), || "no LLM span".into())?;
    Ok(out)
}

/// The calls a wrapper made (at least one).
pub(super) fn orphans<'f>(run: &'f Run<'_>) -> Check<Vec<Call<'f>>> {
    let out: Vec<Call<'_>> = calls(run)?.into_iter().filter(|c| c.from_wrapper).collect();
    ensure(!out.is_empty(), || {
        "no LLM call was made from a wrapper".into()
    })?;
    Ok(out)
}

/// The span of the node attempt that made `call`: its name, attempt and lineage.
pub(super) fn calling_node<'f>(f: &'f Forest, call: &Call<'_>) -> Check<&'f SpanData> {
    let found: Vec<&SpanData> = f
        .spans
        .iter()
        .filter(|s| {
            s.name == call.node.as_str()
                && attr(s, a::NODE_ATTEMPT_INDEX).and_then(|v| v.as_u64()) == Some(call.attempt)
                && tree_lineage(f, s) == call.lineage
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        other => Err(format!(
            "{} `{}` spans at lineage {:?}, expected one",
            other.len(),
            call.node,
            call.lineage
        )
        .into()),
    }
}

fn same(a: &SpanData, b: &SpanData) -> bool {
    a.span_context.span_id() == b.span_context.span_id()
}

/// The parent is the innermost wrapper of the call's own lineage: an instance or
/// dispatch span (not a node or invocation span) whose tree lineage is the call's.
pub(super) fn under_own_wrapper(f: &Forest, c: &Call<'_>) -> Check {
    ensure(
        !is_node(c.parent) && c.parent.name != a::INVOCATION_SPAN,
        || format!("an orphan LLM span parents under `{}`", c.parent.name),
    )?;
    ensure(tree_lineage(f, c.parent) == c.lineage, || {
        format!(
            "an orphan LLM span parents under `{}` at lineage {:?}, the call's is {:?}",
            c.parent.name,
            tree_lineage(f, c.parent),
            c.lineage
        )
    })
}

/// 132 (b): each provider span's parent is its own calling node's span, and two
/// calls share an innermost fan-out index across different lineages.
fn exact_calling_node(run: &Run<'_>) -> Check {
    let calls = calls(run)?;
    for c in &calls {
        let node = calling_node(run.forest, c)?;
        ensure(same(c.parent, node), || {
            format!(
                "the LLM span of `{}` {:?} parents under `{}`",
                c.node, c.lineage, c.parent.name
            )
        })?;
    }
    let coincide = calls.iter().any(|x| {
        calls
            .iter()
            .any(|y| x.lineage != y.lineage && x.lineage.last() == y.lineage.last())
    });
    ensure(coincide, || {
        "no two calls share an innermost index across lineages".into()
    })
}

/// 132 (a): the node spans and the node `started` events are the same multiset of
/// (name, attempt, lineage), under nesting where innermost indices coincide.
fn none_dropped(run: &Run<'_>) -> Check {
    let f = run.forest;
    let mut from_events: Vec<(String, u64, Vec<Hop>)> = records(run, "NodeEvent")
        .iter()
        .filter(|r| text(r, "phase") == "started")
        .map(|r| {
            (
                text(r, "node_name").to_owned(),
                r.get("attempt_index")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
                event_lineage(r),
            )
        })
        .collect();
    let mut from_spans: Vec<(String, u64, Vec<Hop>)> = f
        .spans
        .iter()
        .filter(|s| is_node(s))
        .map(|s| {
            (
                s.name.to_string(),
                attr(s, a::NODE_ATTEMPT_INDEX)
                    .and_then(|v| v.as_u64())
                    .unwrap_or_default(),
                tree_lineage(f, s),
            )
        })
        .collect();
    from_events.sort();
    from_spans.sort();
    let nested = from_events.iter().any(|(_, _, l)| {
        l.iter().filter(|h| matches!(h, Hop::Instance(_))).count() >= 2
            && from_events
                .iter()
                .any(|(_, _, m)| m != l && m.last() == l.last() && m.len() == l.len())
    });
    ensure(nested, || {
        "no nested fan-out instances with a coinciding innermost index".into()
    })?;
    ensure(from_events == from_spans, || {
        format!("node spans {from_spans:?}, node started events {from_events:?}")
    })
}

/// Node spans run inside a fan-out instance, composite node spans excluded.
fn inner_node_spans(f: &Forest) -> usize {
    f.spans
        .iter()
        .filter(|s| is_node(s) && !is_composite(s))
        .filter(|s| {
            tree_lineage(f, s)
                .iter()
                .any(|h| matches!(h, Hop::Instance(_)))
        })
        .count()
}

/// Every fan-out node span named `node` has unique instance indices covering
/// `0..item_count`.
fn unique_per_node_span(f: &Forest, node: &str) -> Check {
    let nodes: Vec<&SpanData> = f
        .spans
        .iter()
        .filter(|s| s.name == node && attr(s, a::FAN_OUT_ITEM_COUNT).is_some())
        .collect();
    ensure(!nodes.is_empty(), || {
        format!("no fan-out node span `{node}`")
    })?;
    for n in nodes {
        let count = attr(n, a::FAN_OUT_ITEM_COUNT)
            .and_then(|v| v.as_u64())
            .unwrap_or_default();
        let mut got: Vec<u64> = f
            .children(n)
            .into_iter()
            .filter(|c| attr_str(c, a::FAN_OUT_PARENT_NODE_NAME).as_deref() == Some(node))
            .filter_map(|c| attr(c, a::NODE_FAN_OUT_INDEX).and_then(|v| v.as_u64()))
            .collect();
        got.sort_unstable();
        ensure(got == (0..count).collect::<Vec<_>>(), || {
            format!("`{node}` (item_count {count}) has instance indices {got:?}")
        })?;
    }
    Ok(())
}

/// The dispatch spans of `names`, one each, in that order.
fn dispatch_spans<'f>(f: &'f Forest, names: &[String]) -> Check<Vec<&'f SpanData>> {
    names
        .iter()
        .map(|n| {
            let found: Vec<&SpanData> = f
                .spans
                .iter()
                .filter(|s| is_dispatch(s) && s.name == n.as_str())
                .collect();
            match found.as_slice() {
                [one] => Ok(*one),
                other => Err(format!("{} dispatch spans `{n}`, expected one", other.len()).into()),
            }
        })
        .collect()
}

/// The dispatch spans close (are exported) in the order given, at non-decreasing
/// end times, all under one parallel-branches node span.
fn close_in_order(f: &Forest, v: &Value) -> Check {
    let names: Vec<String> = v
        .as_array()
        .and_then(|l| l.iter().map(|n| n.as_str().map(str::to_owned)).collect())
        .ok_or_else(|| format!("expected a list of branch names, got {v}"))?;
    ensure(names.len() >= 2, || "fewer than two branches".into())?;
    let spans = dispatch_spans(f, &names)?;
    let parents: BTreeSet<String> = spans
        .iter()
        .filter_map(|s| f.parent(s))
        .map(|p| p.span_context.span_id().to_string())
        .collect();
    ensure(parents.len() == 1, || {
        "the dispatch spans are not siblings".into()
    })?;
    for w in spans.windows(2) {
        ensure(
            f.close_rank(w[0]) < f.close_rank(w[1]) && w[0].end_time <= w[1].end_time,
            || format!("`{}` closed after `{}`", w[0].name, w[1].name),
        )?;
    }
    Ok(())
}

/// Every dispatch span closes before (and within) its parallel-branches node span.
fn close_before_node(f: &Forest) -> Check {
    let dispatch: Vec<&SpanData> = f.spans.iter().filter(|s| is_dispatch(s)).collect();
    ensure(!dispatch.is_empty(), || "no dispatch span".into())?;
    for d in dispatch {
        let parent = f
            .parent(d)
            .filter(|p| attr(p, a::PARALLEL_BRANCHES_BRANCH_COUNT).is_some())
            .ok_or_else(|| format!("`{}` is not under a parallel-branches node span", d.name))?;
        ensure(
            f.close_rank(d) < f.close_rank(parent) && d.end_time <= parent.end_time,
            || format!("`{}` closed after `{}`", d.name, parent.name),
        )?;
    }
    Ok(())
}

/// Same-named node spans in different branches parent under distinct dispatch spans
/// of their own branch.
fn disambiguated_by_dispatch(f: &Forest) -> Check {
    let inner: Vec<&SpanData> = f
        .spans
        .iter()
        .filter(|s| is_node(s) && f.parent(s).is_some_and(is_dispatch))
        .collect();
    let mut shared = false;
    for s in &inner {
        let twins: Vec<&&SpanData> = inner.iter().filter(|t| t.name == s.name).collect();
        if twins.len() < 2 {
            continue;
        }
        shared = true;
        let parents: BTreeSet<String> = twins
            .iter()
            .filter_map(|t| f.parent(t))
            .map(|p| p.span_context.span_id().to_string())
            .collect();
        ensure(parents.len() == twins.len(), || {
            format!("the `{}` spans share a dispatch parent", s.name)
        })?;
        let parent = f.parent(s).map(|p| attr_str(p, a::NODE_BRANCH_NAME));
        ensure(parent == Some(attr_str(s, a::NODE_BRANCH_NAME)), || {
            format!(
                "a `{}` span is under another branch's dispatch span",
                s.name
            )
        })?;
    }
    ensure(shared, || "no same-named node spans across branches".into())
}

/// `v` is the count `got` (of `what`).
fn count(v: &Value, got: usize, what: &str) -> Check {
    ensure(v.as_u64() == u64::try_from(got).ok(), || {
        format!("{got} {what}, expected {v}")
    })
}

/// The lineage invariants, each with its value; those about a situation only accept
/// `true`.
const TABLE: &Table<fn(&Value, &Run<'_>) -> Check> = &[
    ("llm_provider_span_count", |v, run| {
        count(v, run.llm_spans().len(), "LLM spans")
    }),
    ("inner_node_span_count", |v, run| {
        count(v, inner_node_spans(run.forest), "inner node spans")
    }),
    (
        "unique_fan_out_indices_per_node_span_under",
        |v, run| match v.as_str() {
            Some(node) => unique_per_node_span(run.forest, node),
            None => Err(format!("expected a node name, got {v}").into()),
        },
    ),
    ("dispatch_spans_close_in_declaration_order", |v, run| {
        close_in_order(run.forest, v)
    }),
    (
        "no_inner_spans_dropped_under_concurrent_nesting",
        |v, run| truthy(v).and(none_dropped(run)),
    ),
    (
        "llm_span_parents_under_own_lineage_calling_node",
        |v, run| truthy(v).and(exact_calling_node(run)),
    ),
    (
        "same_named_inner_spans_disambiguated_by_dispatch_parent",
        |v, run| truthy(v).and(disambiguated_by_dispatch(run.forest)),
    ),
    ("dispatch_spans_close_before_node_span", |v, run| {
        truthy(v).and(close_before_node(run.forest))
    }),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// The lineage invariant `name` (or an orphan one, its value required to be `true`),
/// or `None` when it is not one of these.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    if let Some(verdict) = lookup(TABLE, name) {
        return Some(verdict(v, run));
    }
    let verdict = super::orphan_invariants::check(name, run)?;
    Some(truthy(v).and(verdict))
}
