//! Spec: conformance-adapter §5.8 — registers O7 / O21: the `inner_subgraphs`
//! shorthand rewritten into `subgraphs`, and the synthesized fields `final_state`
//! leaves out.
//!
//! An inner subgraph's state is its declared `state` (if any) plus the implied
//! fields: `input: dict` (the fan-out item slot, [`ITEM_SLOT`]) and one `any` field
//! per `stores_response_in` / `capture_invocation_metadata_into` it does not declare.
//! Every graph of the case (the case itself, its `subgraphs` and the inner ones) is
//! then rewritten by [`graph::rewrite`].

mod graph;

use std::collections::HashMap;

use serde_json::Value;
use serde_norway::{Mapping, Value as Yv};

use crate::ge::composite::ITEM_SLOT;
use crate::yaml::Y;
use crate::AdapterError;

/// A YAML string key.
fn k(s: &str) -> Yv {
    Yv::String(s.to_owned())
}

/// A `{type: ty}` field declaration.
fn field(ty: &str) -> Yv {
    let mut m = Mapping::new();
    m.insert(k("type"), k(ty));
    Yv::Mapping(m)
}

/// The `state.fields` mapping of a graph definition, created when absent.
fn fields_mut(graph: &mut Mapping) -> Option<&mut Mapping> {
    let state = graph
        .entry(k("state"))
        .or_insert_with(|| Yv::Mapping(Mapping::new()));
    let Yv::Mapping(state) = state else {
        return None;
    };
    let fields = state
        .entry(k("fields"))
        .or_insert_with(|| Yv::Mapping(Mapping::new()));
    match fields {
        Yv::Mapping(f) => Some(f),
        _ => None,
    }
}

/// Declares `name: {type: ty}` unless the fields already declare `name`.
fn ensure(fields: &mut Mapping, name: &str, ty: &str) -> bool {
    if fields.contains_key(name) {
        return false;
    }
    fields.insert(k(name), field(ty));
    true
}

/// What the per-graph rewrite needs to know about the inner subgraphs.
#[derive(Default)]
struct Inner {
    /// Inner subgraph → the field its `calls_llm` stores the reply in.
    stored: HashMap<String, String>,
    /// Register O11: inner subgraph → its `capture_invocation_metadata_into` field
    /// (044), the outer list the reads are collected into.
    captured: HashMap<String, String>,
    /// Register O21: inner subgraph → the items fields of its own fan-outs it does
    /// not declare; the instances running it copy them from their item.
    spread: HashMap<String, Vec<String>>,
    /// Register O21: subgraph → the items fields of its fan-outs it does not declare;
    /// a `subgraph_call` of it projects them in by name.
    fanned: HashMap<String, Vec<String>>,
}

/// Registers O7 / O21: rewrites `inner_subgraphs` shorthand into `subgraphs`, or `None`.
pub(super) fn llm_desugar(case: &Y<'_>) -> Result<Option<Yv>, AdapterError> {
    let Some(inner) = case.get("inner_subgraphs") else {
        return Ok(None);
    };
    let Yv::Mapping(mut out) = case.value.clone() else {
        return Err(case.invalid("a case is a mapping"));
    };
    out.remove("inner_subgraphs");
    let mut subgraphs = match out.remove("subgraphs") {
        Some(Yv::Mapping(m)) => m,
        _ => Mapping::new(),
    };
    let mut info = Inner::default();
    for (name, def) in inner.entries()? {
        def.check_keys(&["state", "entry", "nodes", "edges"])?;
        let Yv::Mapping(mut m) = def.value.clone() else {
            return Err(def.invalid("an inner subgraph is a mapping"));
        };
        let fields =
            fields_mut(&mut m).ok_or_else(|| def.invalid("`state.fields` is a mapping"))?;
        ensure(fields, ITEM_SLOT, "dict");
        let mut spread = Vec::new();
        for (_, node) in def.req("nodes")?.entries()? {
            if let Some(target) = node
                .get("calls_llm")
                .and_then(|c| c.get("stores_response_in"))
            {
                let target = target.str()?.to_owned();
                ensure(fields, &target, "any");
                info.stored.insert(name.clone(), target);
            }
            if let Some(target) = node.get("capture_invocation_metadata_into") {
                let target = target.str()?.to_owned();
                ensure(fields, &target, "any");
                info.captured.insert(name.clone(), target);
            }
            if let Some(items) = node.get("fan_out").and_then(|f| f.get("items_field")) {
                let items = items.str()?;
                if !fields.contains_key(items) {
                    spread.push(items.to_owned());
                }
            }
        }
        if !spread.is_empty() {
            info.spread.insert(name.clone(), spread);
        }
        subgraphs.insert(k(&name), Yv::Mapping(m));
    }
    let mut outer_item_branches = Vec::new();
    for (name, sub) in subgraphs.iter_mut() {
        if let (Yv::Mapping(sub), Some(name)) = (sub, name.as_str()) {
            let fanned = graph::rewrite(sub, &info, &mut outer_item_branches)
                .iter()
                .filter_map(|f| {
                    f.as_str()
                        .filter(|f| *f != "__collected")
                        .map(str::to_owned)
                })
                .collect();
            info.fanned.insert(name.to_owned(), fanned);
        }
    }
    let mut synthesized = graph::rewrite(&mut out, &info, &mut outer_item_branches);
    // Register O21: a branch augmenting from the outer item gets the item slot
    // projected in, so its subgraph declares it.
    for name in outer_item_branches {
        if let Some(Yv::Mapping(sub)) = subgraphs.get_mut(name.as_str()) {
            if let Some(fields) = fields_mut(sub) {
                ensure(fields, ITEM_SLOT, "dict");
            }
        }
    }
    // Register O21: initial-state fields the case graph does not declare (039 case 3
    // seeds `products` for a fan-out inside a called subgraph) are declared `any`.
    let seeded: Vec<String> = match out.get("initial_state") {
        Some(Yv::Mapping(m)) => m
            .keys()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if let Some(fields) = fields_mut(&mut out) {
        for name in seeded {
            if ensure(fields, &name, "any") {
                synthesized.push(k(&name));
            }
        }
    }
    out.insert(k("subgraphs"), Yv::Mapping(subgraphs));
    // Remembered so `final_state` can leave them out.
    out.insert(k(SYNTHESIZED), Yv::Sequence(synthesized));
    Ok(Some(Yv::Mapping(out)))
}

/// The case key under which [`llm_desugar`] lists the fields it synthesized.
pub(super) const SYNTHESIZED: &str = "__synthesized_fields";

/// Register O7: the fields the runner synthesized (an undeclared items field,
/// `__collected`) are not part of `final_state` unless it names them.
pub(super) fn declared_only(got: &Value, case: &Y<'_>, want: &Value) -> Value {
    let synthesized = case
        .get(SYNTHESIZED)
        .and_then(|s| s.strings().ok())
        .unwrap_or_default();
    match got {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !synthesized.contains(k) || want.get(k.as_str()).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}
