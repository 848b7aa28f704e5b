//! Spec: conformance-adapter §5.8 — registers O7 / O21: the per-graph rewrite of the
//! `inner_subgraphs` shorthand (fan-outs over inner subgraphs, list-shaped and
//! outer-item-augmenting branches, `subgraph_call` nodes).

use serde_norway::{Mapping, Value as Yv};

use super::{ensure, fields_mut, k, Inner};
use crate::ge::composite::ITEM_SLOT;

/// Rewrites one graph definition in place; returns the state fields it synthesized.
/// `outer_item_branches` collects the subgraphs of branches that augment from the
/// outer item (their states need the item slot).
pub(super) fn rewrite(
    graph: &mut Mapping,
    inner: &Inner,
    outer_item_branches: &mut Vec<String>,
) -> Vec<Yv> {
    let mut collects = false;
    let mut item_lists = Vec::new();
    let mut any_typed = Vec::new();
    if let Some(Yv::Mapping(nodes)) = graph.get_mut("nodes") {
        for (_, node) in nodes.iter_mut() {
            let Yv::Mapping(node) = node else { continue };
            if let Some(Yv::Mapping(f)) = node.get_mut("fan_out") {
                collects |= fan_out(f, inner, &mut item_lists);
            }
            if let Some(Yv::Mapping(p)) = node.get_mut("parallel_branches") {
                branches(p, outer_item_branches);
            }
            if let Some(Yv::Mapping(call)) = node.remove("subgraph_call") {
                any_typed.extend(subgraph_call(node, call, inner));
            }
        }
    }
    let mut synthesized = Vec::new();
    if let Some(fields) = fields_mut(graph) {
        if collects && ensure(fields, "__collected", "list<any>") {
            synthesized.push(k("__collected"));
        }
        for items in item_lists {
            if ensure(fields, &items, "list<any>") {
                synthesized.push(k(&items));
            }
        }
        // Register O21: a `subgraph_call` output target takes whatever the subgraph
        // field holds (039 maps a `list<dict>` onto a `dict` field).
        for name in any_typed {
            fields.insert(k(&name), super::field("any"));
        }
    }
    synthesized
}

/// Register O7: `fan_out: {items_field, inner_subgraph}` fans the items into the
/// inner subgraph's item slot and collects its stored reply into `__collected`
/// (or a captured field, O11); register O21: the instances copy the item keys the
/// inner subgraph fans out over itself (`spread_item_fields`). Returns whether the
/// graph collects into `__collected`.
fn fan_out(f: &mut Mapping, inner: &Inner, item_lists: &mut Vec<String>) -> bool {
    if let Some(Yv::String(items)) = f.get("items_field") {
        item_lists.push(items.clone());
    }
    let Some(Yv::String(sub)) = f.remove("inner_subgraph") else {
        return false;
    };
    f.insert(k("subgraph"), k(&sub));
    f.insert(k("item_field"), k(ITEM_SLOT));
    if let Some(spread) = inner.spread.get(&sub) {
        let list = spread.iter().map(|s| k(s)).collect();
        f.insert(k(crate::obs::item_spread::KEY), Yv::Sequence(list));
    }
    if let Some(target) = inner.captured.get(&sub) {
        f.insert(k("collect_field"), k(target));
        f.insert(k("target_field"), k(target));
        return false;
    }
    let collect = inner.stored.get(&sub).map_or(ITEM_SLOT, String::as_str);
    f.insert(k("collect_field"), k(collect));
    f.insert(k("target_field"), k("__collected"));
    true
}

/// Register O7: `branches: [names]` runs the same-named subgraphs; register O21: a
/// branch with `augment_metadata_from_outer_item` gets the item slot projected in.
fn branches(p: &mut Mapping, outer_item_branches: &mut Vec<String>) {
    if let Some(Yv::Sequence(names)) = p.get("branches").cloned() {
        let mut branches = Mapping::new();
        for n in names {
            let mut b = Mapping::new();
            b.insert(k("subgraph"), n.clone());
            branches.insert(n, Yv::Mapping(b));
        }
        p.insert(k("branches"), Yv::Mapping(branches));
    }
    let Some(Yv::Mapping(branches)) = p.get_mut("branches") else {
        return;
    };
    for (_, b) in branches.iter_mut() {
        let Yv::Mapping(b) = b else { continue };
        if !b.contains_key("augment_metadata_from_outer_item") {
            continue;
        }
        if let Some(Yv::String(sub)) = b.get("subgraph") {
            outer_item_branches.push(sub.clone());
        }
        let inputs = b
            .entry(k("inputs"))
            .or_insert_with(|| Yv::Mapping(Mapping::new()));
        if let Yv::Mapping(inputs) = inputs {
            inputs.entry(k(ITEM_SLOT)).or_insert_with(|| k(ITEM_SLOT));
        }
    }
}

/// Register O21: `subgraph_call: {subgraph, inputs, outputs}` is a subgraph node
/// (without `inputs`, the items fields the subgraph fans over without declaring
/// them are projected in by name: 039 seeds them in the initial state); returns its
/// output target fields.
fn subgraph_call(node: &mut Mapping, mut call: Mapping, inner: &Inner) -> Vec<String> {
    let fanned = call
        .get("subgraph")
        .and_then(Yv::as_str)
        .and_then(|s| inner.fanned.get(s));
    if let (false, Some(fanned)) = (call.contains_key("inputs"), fanned) {
        let inputs = fanned.iter().map(|f| (k(f), k(f))).collect();
        call.insert(k("inputs"), Yv::Mapping(inputs));
    }
    let mut targets = Vec::new();
    if let Some(Yv::Mapping(outputs)) = call.get("outputs") {
        targets.extend(outputs.keys().filter_map(|t| t.as_str().map(str::to_owned)));
    }
    for (key, value) in call {
        node.insert(key, value);
    }
    targets
}
