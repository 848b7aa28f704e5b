//! Spec: observability §4.1 / §4.3 / §6 — the identities spans are keyed by.
//!
//! A [`Key`] is a namespace plus the fan-out / branch lineage chains. It names two
//! kinds of things:
//!
//! - a **unit**: a node execution context, keyed by the node's event lineage (the
//!   chains have one entry per namespace boundary, `len(namespace) - 1`);
//! - a **scope**: the inside of a wrapper (subgraph, fan-out instance, parallel
//!   branch) entered through the node `namespace.last()` — the chains then include
//!   the boundary that node crossed, `len(namespace)` entries.
//!
//! Within one invocation a unit executes serially (retry attempts follow each other),
//! so `(unit, attempt_index)` identifies a node span and a scope identifies the one
//! open wrapper for it.

use std::sync::Arc;

use openarmature_graph::Lineage;

/// A namespace with aligned lineage chains (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) namespace: Vec<String>,
    pub(crate) fan_out: Vec<Option<usize>>,
    pub(crate) branch: Vec<Option<String>>,
}

impl Key {
    /// The unit of an event source: chains padded / cut to `len(namespace) - 1`.
    pub(crate) fn unit(
        namespace: &[String],
        fan_out: &Arc<[Option<usize>]>,
        branch: &Arc<[Option<String>]>,
    ) -> Key {
        let boundaries = namespace.len().saturating_sub(1);
        Key {
            namespace: namespace.to_vec(),
            fan_out: (0..boundaries)
                .map(|i| fan_out.get(i).copied().flatten())
                .collect(),
            branch: (0..boundaries)
                .map(|i| branch.get(i).cloned().flatten())
                .collect(),
        }
    }

    /// The unit of a lineage (LLM events, log records).
    pub(crate) fn of_lineage(lineage: &Lineage) -> Key {
        Key::unit(
            &lineage.namespace,
            &lineage.fan_out_index_chain,
            &lineage.branch_name_chain,
        )
    }

    /// The number of namespace segments.
    pub(crate) fn depth(&self) -> usize {
        self.namespace.len()
    }

    /// The scope at depth `d` on this unit's path (`1 <= d < depth()`): the inside of
    /// the wrapper node `namespace[d - 1]`.
    pub(crate) fn scope(&self, d: usize) -> Key {
        Key {
            namespace: self.namespace[..d].to_vec(),
            fan_out: self.fan_out[..d].to_vec(),
            branch: self.branch[..d].to_vec(),
        }
    }

    /// The unit of the wrapper node whose inside this scope is.
    pub(crate) fn wrapper_unit(&self) -> Key {
        let d = self.depth();
        let b = d.saturating_sub(1);
        Key {
            namespace: self.namespace.clone(),
            fan_out: self.fan_out[..b.min(self.fan_out.len())].to_vec(),
            branch: self.branch[..b.min(self.branch.len())].to_vec(),
        }
    }

    /// Whether this scope's first `k` levels equal the unit's (scope `k` of both paths).
    fn shares_scope(&self, unit: &Key, k: usize) -> bool {
        k <= self.depth()
            && k < unit.depth()
            && self.namespace[..k] == unit.namespace[..k]
            && self.fan_out[..k] == unit.fan_out[..k]
            && self.branch[..k] == unit.branch[..k]
    }

    /// Whether activity at `unit` shows this scope's wrapper has finished.
    ///
    /// Nodes of one graph level run one after another. So once an event arrives from
    /// another node of a level on this scope's path (or from the wrapper node itself:
    /// a composite's `completed`), the wrapper is done. Events from inside the scope,
    /// or from a sibling instance / branch of the same composite (concurrent), are not.
    pub(crate) fn departed_by(&self, unit: &Key) -> bool {
        let d = self.depth();
        let mut common = 0;
        while common < d && self.shares_scope(unit, common + 1) {
            common += 1;
        }
        if common == d {
            return false;
        }
        // The unit lives directly in scope `common`: a node of that level.
        if unit.depth() == common + 1 {
            return true;
        }
        unit.namespace[common] != self.namespace[common]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &[&str], fo: &[Option<usize>], br: &[Option<&str>]) -> Key {
        Key {
            namespace: ns.iter().map(|s| (*s).to_owned()).collect(),
            fan_out: fo.to_vec(),
            branch: br.iter().map(|b| b.map(str::to_owned)).collect(),
        }
    }

    #[test]
    fn a_wrapper_departs_when_its_level_moves_on() {
        let sub = key(&["sub"], &[None], &[None]);
        assert!(!sub.departed_by(&key(&["sub", "x"], &[None], &[None])));
        assert!(sub.departed_by(&key(&["after"], &[], &[])));
        // Nested: the inner wrapper departs when the outer level's next node runs.
        let inner = key(&["sub", "in"], &[None, None], &[None, None]);
        assert!(inner.departed_by(&key(&["sub", "y"], &[None], &[None])));
        assert!(!inner.departed_by(&key(&["sub", "in", "z"], &[None, None], &[None, None])));
    }

    #[test]
    fn sibling_instances_do_not_close_each_other() {
        let inst0 = key(&["fan"], &[Some(0)], &[None]);
        let in_inst1 = key(&["fan", "work"], &[Some(1)], &[None]);
        assert!(!inst0.departed_by(&in_inst1));
        // The fan-out node's own completed event closes every instance.
        assert!(inst0.departed_by(&key(&["fan"], &[], &[])));
        let wrapped = key(&["fan", "sub"], &[Some(0), None], &[None, None]);
        assert!(wrapped.departed_by(&key(&["fan", "next"], &[Some(0)], &[None])));
        assert!(!wrapped.departed_by(&key(&["fan", "next"], &[Some(1)], &[None])));
    }
}
