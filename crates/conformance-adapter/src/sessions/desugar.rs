//! Spec: conformance-adapter §5.1–§5.4 — adapter register S1: the sessions fixtures'
//! node vocabulary rewritten into the graph-engine runner's, so `ge/build.rs` builds
//! the graphs unchanged.
//!
//! - A subgraph node's `mapping: {inputs, outputs}` is the graph-engine `inputs` /
//!   `outputs` pair (same directions: `inputs: {subgraph_field: parent_field}`,
//!   `outputs: {parent_field: subgraph_field}`).
//! - A fan-out's `mapping: {inputs: {f: "<fan_out_item>", ...}, outputs: {t: c}}` is
//!   `item_field: f` (the other inputs stay `inputs`), `collect_field: c`,
//!   `target_field: t`; exactly one output pair.
//! - `raises: {category: c}` is `raises: "<node> raises"` with `error_category: c`.
//!
//! `explicit_save_session` and `emits_log` are left for [`super::nodes`].

use serde_norway::{Mapping, Value as Yv};

use crate::failure::{Check, Failure};

/// The `inputs` value naming the fan-out item.
const FAN_OUT_ITEM: &str = "<fan_out_item>";

fn k(s: &str) -> Yv {
    Yv::String(s.to_owned())
}

/// A graph definition: `{state, entry, nodes, edges}` rewritten per S1.
pub(super) fn graph(state: &Yv, entry: &str, nodes: &Yv, edges: &Yv) -> Check<Yv> {
    let mut g = Mapping::new();
    g.insert(k("state"), state.clone());
    g.insert(k("entry"), k(entry));
    g.insert(k("nodes"), self::nodes(nodes)?);
    g.insert(k("edges"), edges.clone());
    Ok(Yv::Mapping(g))
}

/// `subgraphs: {name: {state, entry, nodes, edges}}` with every graph rewritten.
pub(super) fn subgraphs(defs: &Yv) -> Check<Yv> {
    let Yv::Mapping(defs) = defs else {
        return Err(Failure::fixture(
            "fixture_schema_invalid: `subgraphs` must be a mapping",
        ));
    };
    let mut out = Mapping::new();
    for (name, def) in defs {
        let Yv::Mapping(def) = def else {
            return Err(Failure::fixture(format!(
                "fixture_schema_invalid: subgraph {name:?} must be a mapping"
            )));
        };
        let mut def = def.clone();
        if let Some(nodes) = def.get("nodes") {
            let rewritten = self::nodes(nodes)?;
            def.insert(k("nodes"), rewritten);
        }
        out.insert(name.clone(), Yv::Mapping(def));
    }
    Ok(Yv::Mapping(out))
}

fn nodes(nodes: &Yv) -> Check<Yv> {
    let Yv::Mapping(nodes) = nodes else {
        return Err(Failure::fixture(
            "fixture_schema_invalid: `nodes` must be a mapping",
        ));
    };
    let mut out = Mapping::new();
    for (name, spec) in nodes {
        let Yv::Mapping(spec) = spec else {
            return Err(Failure::fixture(format!(
                "fixture_schema_invalid: node {name:?} must be a mapping"
            )));
        };
        let label = name.as_str().unwrap_or("node");
        out.insert(name.clone(), Yv::Mapping(node(label, spec.clone())?));
    }
    Ok(Yv::Mapping(out))
}

fn node(name: &str, mut spec: Mapping) -> Check<Mapping> {
    if let Some(mapping) = spec.remove("mapping") {
        for (key, value) in pair_tables(&mapping, name)? {
            spec.insert(k(key), value);
        }
    }
    if let Some(Yv::Mapping(mut f)) = spec.remove("fan_out") {
        if let Some(mapping) = f.remove("mapping") {
            fan_out_mapping(&mut f, &mapping, name)?;
        }
        spec.insert(k("fan_out"), Yv::Mapping(f));
    }
    if let Some(Yv::Mapping(raises)) = spec.get("raises").cloned() {
        let mut rest = raises.clone();
        if let Some(category) = rest.remove("category") {
            if !rest.is_empty() {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: node `{name}`: raises keys besides category"
                )));
            }
            spec.insert(k("raises"), k(&format!("{name} raises")));
            spec.insert(k("error_category"), category);
        }
    }
    Ok(spec)
}

/// `mapping: {inputs?, outputs?}` → `[("inputs", ..), ("outputs", ..)]`.
fn pair_tables(mapping: &Yv, node: &str) -> Check<Vec<(&'static str, Yv)>> {
    let Yv::Mapping(m) = mapping else {
        return Err(Failure::fixture(format!(
            "fixture_schema_invalid: node `{node}`: `mapping` must be a mapping"
        )));
    };
    let mut out = Vec::new();
    for (key, value) in m {
        let key: &'static str = match key.as_str() {
            Some("inputs") => "inputs",
            Some("outputs") => "outputs",
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: node `{node}`: mapping key {other:?}"
                )))
            }
        };
        out.push((key, value.clone()));
    }
    Ok(out)
}

fn fan_out_mapping(f: &mut Mapping, mapping: &Yv, node: &str) -> Check {
    for (key, table) in pair_tables(mapping, node)? {
        let Yv::Mapping(table) = table else {
            return Err(Failure::fixture(format!(
                "fixture_schema_invalid: node `{node}`: fan_out mapping.{key} must be a mapping"
            )));
        };
        if key == "inputs" {
            let mut rest = Mapping::new();
            for (field, source) in table {
                if source.as_str() == Some(FAN_OUT_ITEM) {
                    f.insert(k("item_field"), field);
                } else {
                    rest.insert(field, source);
                }
            }
            if !rest.is_empty() {
                f.insert(k("inputs"), Yv::Mapping(rest));
            }
        } else {
            let mut pairs = table.into_iter();
            let (Some((target, collect)), None) = (pairs.next(), pairs.next()) else {
                return Err(Failure::fixture(format!(
                    "fixture_schema_invalid: node `{node}`: a fan-out maps exactly one output"
                )));
            };
            f.insert(k("target_field"), target);
            f.insert(k("collect_field"), collect);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn yaml(s: &str) -> Yv {
        serde_norway::from_str(s).unwrap()
    }

    #[test]
    fn subgraph_mapping_becomes_inputs_and_outputs() {
        let n = nodes(&yaml(
            "d: {subgraph: inner, mapping: {inputs: {i: s}, outputs: {r: o}}}",
        ))
        .unwrap();
        assert_eq!(
            n,
            yaml("d: {subgraph: inner, inputs: {i: s}, outputs: {r: o}}")
        );
    }

    #[test]
    fn fan_out_mapping_names_item_collect_and_target() {
        let n = nodes(&yaml(
            "f: {fan_out: {subgraph: p, items_field: items, mapping: {inputs: {item: '<fan_out_item>', k: kk}, outputs: {outs: done}}}}",
        ))
        .unwrap();
        assert_eq!(
            n,
            yaml("f: {fan_out: {subgraph: p, items_field: items, item_field: item, inputs: {k: kk}, target_field: outs, collect_field: done}}")
        );
        let two = nodes(&yaml(
            "f: {fan_out: {subgraph: p, mapping: {outputs: {a: b, c: d}}}}",
        ));
        assert!(two.unwrap_err().message().contains("exactly one output"));
    }

    #[test]
    fn raises_category_becomes_error_category() {
        let n = nodes(&yaml("C: {raises: {category: node_exception}}")).unwrap();
        assert_eq!(
            n,
            yaml("C: {raises: C raises, error_category: node_exception}")
        );
        let other = nodes(&yaml("C: {raises: {message: boom}}")).unwrap();
        assert_eq!(other, yaml("C: {raises: {message: boom}}"));
    }
}
