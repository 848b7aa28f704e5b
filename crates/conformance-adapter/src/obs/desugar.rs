//! Spec: conformance-adapter §5.8 — register O7: the `inner_subgraphs` shorthand
//! rewritten into `subgraphs`, and the synthesized fields `final_state` leaves out.

use serde_json::Value;

use crate::yaml::Y;
use crate::AdapterError;

/// Register O7: rewrites `inner_subgraphs` shorthand into `subgraphs`, or `None`.
pub(super) fn llm_desugar(case: &Y<'_>) -> Result<Option<serde_norway::Value>, AdapterError> {
    use serde_norway::{Mapping, Value as Yv};
    let Some(inner) = case.get("inner_subgraphs") else {
        return Ok(None);
    };
    let k = |s: &str| Yv::String(s.to_owned());
    let field = |ty: &str| {
        let mut m = Mapping::new();
        m.insert(k("type"), k(ty));
        Yv::Mapping(m)
    };
    let mut subgraphs = Mapping::new();
    let mut stored: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    // Register O11: an inner `capture_invocation_metadata_into: f` (044) names the
    // outer list the reads are collected into.
    let mut captured: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (name, def) in inner.entries()? {
        def.check_keys(&["entry", "nodes", "edges"])?;
        let Yv::Mapping(mut m) = def.value.clone() else {
            return Err(def.invalid("an inner subgraph is a mapping"));
        };
        let mut fields = Mapping::new();
        fields.insert(k("input"), field("dict"));
        for (_, node) in def.req("nodes")?.entries()? {
            if let Some(target) = node
                .get("calls_llm")
                .and_then(|c| c.get("stores_response_in"))
            {
                let target = target.str()?.to_owned();
                fields.insert(k(&target), field("any"));
                stored.insert(name.clone(), target);
            }
            if let Some(target) = node.get("capture_invocation_metadata_into") {
                let target = target.str()?.to_owned();
                fields.insert(k(&target), field("any"));
                captured.insert(name.clone(), target);
            }
        }
        let mut state = Mapping::new();
        state.insert(k("fields"), Yv::Mapping(fields));
        m.insert(k("state"), Yv::Mapping(state));
        subgraphs.insert(k(&name), Yv::Mapping(m));
    }
    let Yv::Mapping(mut out) = case.value.clone() else {
        return Err(case.invalid("a case is a mapping"));
    };
    out.remove("inner_subgraphs");
    out.insert(k("subgraphs"), Yv::Mapping(subgraphs));
    let mut collects = false;
    let mut item_lists = Vec::new();
    if let Some(Yv::Mapping(nodes)) = out.get_mut("nodes") {
        for (_, node) in nodes.iter_mut() {
            let Yv::Mapping(node) = node else { continue };
            if let Some(Yv::Mapping(f)) = node.get_mut("fan_out") {
                if let Some(Yv::String(items)) = f.get("items_field") {
                    item_lists.push(items.clone());
                }
                if let Some(Yv::String(sub)) = f.remove("inner_subgraph") {
                    f.insert(k("subgraph"), k(&sub));
                    f.insert(k("item_field"), k("input"));
                    if let Some(target) = captured.get(&sub) {
                        f.insert(k("collect_field"), k(target));
                        f.insert(k("target_field"), k(target));
                    } else {
                        let collect = stored.get(&sub).cloned().unwrap_or_else(|| "input".into());
                        f.insert(k("collect_field"), k(&collect));
                        f.insert(k("target_field"), k("__collected"));
                        collects = true;
                    }
                }
            }
            if let Some(Yv::Mapping(p)) = node.get_mut("parallel_branches") {
                if let Some(Yv::Sequence(names)) = p.get("branches").cloned() {
                    let mut branches = Mapping::new();
                    for n in names {
                        let mut b = Mapping::new();
                        b.insert(k("subgraph"), n.clone());
                        branches.insert(n, Yv::Mapping(b));
                    }
                    p.insert(k("branches"), Yv::Mapping(branches));
                }
            }
        }
    }
    let mut synthesized = Vec::new();
    if let Some(Yv::Mapping(state)) = out.get_mut("state") {
        if let Some(Yv::Mapping(fields)) = state.get_mut("fields") {
            if collects {
                fields.insert(k("__collected"), field("list<any>"));
                synthesized.push(k("__collected"));
            }
            for items in item_lists {
                if !fields.contains_key(items.as_str()) {
                    fields.insert(k(&items), field("list<any>"));
                    synthesized.push(k(&items));
                }
            }
        }
    }
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
