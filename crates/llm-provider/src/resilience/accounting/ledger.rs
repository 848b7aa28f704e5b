//! The aggregator's state: assigns every attempt to its invocation and logical
//! call.

use std::collections::{HashMap, HashSet};

use openarmature_graph::Lineage;

use super::report::{AttemptUsage, CallUsage, InvocationUsage};

/// A node's identity within an invocation, attempt-independent.
pub(super) type Unit = (Vec<String>, Vec<Option<usize>>, Vec<Option<String>>);

fn unit_of(lineage: &Lineage) -> Unit {
    unit(
        &lineage.namespace,
        &lineage.fan_out_index_chain,
        &lineage.branch_name_chain,
    )
}

/// The unit of a node at `namespace` with these lineage chains.
pub(super) fn unit(
    namespace: &[String],
    fan_out: &[Option<usize>],
    branches: &[Option<String>],
) -> Unit {
    (namespace.to_vec(), fan_out.to_vec(), branches.to_vec())
}

/// Extension 0001: the logical call id of the `ordinal`-th call a node attempt made
/// in the node execution at `step` (`"<invocation_id>:<node path>[<lineage>]@<step>#<ordinal>"`).
/// Written straight from the lineage (no copy of its parts).
pub(crate) fn logical_call_id(
    invocation_id: &str,
    lineage: &Lineage,
    step: u64,
    ordinal: u32,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(invocation_id.len() + 32);
    s.push_str(invocation_id);
    s.push(':');
    for (i, name) in lineage.namespace.iter().enumerate() {
        if i > 0 {
            s.push('/');
        }
        s.push_str(name);
    }
    let mut tagged = false;
    let mut open = |s: &mut String| {
        s.push(if tagged { ',' } else { '[' });
        tagged = true;
    };
    for i in lineage.fan_out_index_chain.iter().flatten() {
        open(&mut s);
        let _ = write!(s, "fan_out={i}");
    }
    for b in lineage.branch_name_chain.iter().flatten() {
        open(&mut s);
        s.push_str("branch=");
        s.push_str(b);
    }
    if tagged {
        s.push(']');
    }
    let _ = write!(s, "@{step}#{ordinal}");
    s
}

/// The node execution a unit is in: its step, and per node attempt the number of
/// calls made so far.
#[derive(Default)]
struct Execution {
    step: u64,
    calls_in_attempt: HashMap<u32, u32>,
}

#[derive(Default)]
pub(super) struct Invocation {
    executions: HashMap<Unit, Execution>,
    calls: Vec<CallUsage>,
    by_call_id: HashMap<String, usize>,
    by_logical: HashMap<String, usize>,
    seen: HashSet<(String, u32)>,
    unattributed: Vec<AttemptUsage>,
}

/// Where an attempt came from.
pub(super) struct Origin<'a> {
    pub(super) lineage: Option<&'a Lineage>,
    pub(super) node_name: Option<&'a str>,
    /// The logical call id the emitter derived at the call site, if any.
    pub(super) logical: Option<&'a str>,
}

impl Invocation {
    /// A node attempt started: remember its step; its calls count from 0.
    pub(super) fn node_started(&mut self, unit: Unit, attempt: u32, step: u64) {
        let e = self.executions.entry(unit).or_default();
        if e.step != step {
            e.calls_in_attempt.clear();
        }
        e.step = step;
        e.calls_in_attempt.insert(attempt, 0);
    }

    /// Whether the attempt `(call_id, index)` was already accounted.
    pub(super) fn has(&self, call_id: &str, index: u32) -> bool {
        self.seen.contains(&(call_id.to_owned(), index))
    }

    /// Whether any attempt of `call_id` was accounted.
    pub(super) fn knows_call(&self, call_id: &str) -> bool {
        self.by_call_id.contains_key(call_id)
    }

    /// Accounts one attempt.
    pub(super) fn attempt(&mut self, invocation_id: &str, origin: &Origin<'_>, a: AttemptUsage) {
        if a.call_id.is_empty() {
            self.unattributed.push(a);
            return;
        }
        if !self.seen.insert((a.call_id.clone(), a.attempt_index)) {
            return;
        }
        let index = match self.by_call_id.get(&a.call_id) {
            Some(i) => *i,
            None => self.new_call_id(invocation_id, origin, &a.call_id),
        };
        if let Some(call) = self.calls.get_mut(index) {
            call.attempts.push(a);
        }
    }

    fn new_call_id(&mut self, invocation_id: &str, origin: &Origin<'_>, call_id: &str) -> usize {
        // The emitter's id (minted at the call site) wins; otherwise it is derived
        // from the event stream by the same rule.
        let logical = origin
            .logical
            .map(str::to_owned)
            .or_else(|| {
                let l = origin.lineage?;
                let e = self.executions.get_mut(&unit_of(l))?;
                let n = e.calls_in_attempt.entry(l.attempt_index).or_insert(0);
                let ordinal = *n;
                *n += 1;
                Some(logical_call_id(invocation_id, l, e.step, ordinal))
            })
            // No node start seen (or outside a graph): the call is its own logical call.
            .unwrap_or_else(|| format!("{invocation_id}:{call_id}"));
        let index = match self.by_logical.get(&logical) {
            Some(i) => *i,
            None => {
                self.calls.push(CallUsage {
                    logical_call_id: logical.clone(),
                    call_ids: Vec::new(),
                    node_name: origin.node_name.map(str::to_owned),
                    attempts: Vec::new(),
                });
                let i = self.calls.len() - 1;
                self.by_logical.insert(logical, i);
                i
            }
        };
        if let Some(call) = self.calls.get_mut(index) {
            call.call_ids.push(call_id.to_owned());
        }
        self.by_call_id.insert(call_id.to_owned(), index);
        index
    }

    pub(super) fn report(&self, invocation_id: &str) -> InvocationUsage {
        InvocationUsage {
            invocation_id: invocation_id.to_owned(),
            calls: self.calls.clone(),
            unattributed: self.unattributed.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn lineage(fan_out: &[Option<usize>], branches: &[Option<&str>]) -> Lineage {
        Lineage {
            namespace: Arc::from(vec!["outer".to_owned(), "ask".to_owned()]),
            attempt_index: 0,
            fan_out_index: None,
            branch_name: None,
            fan_out_index_chain: Arc::from(fan_out.to_vec()),
            branch_name_chain: branches.iter().map(|b| b.map(str::to_owned)).collect(),
        }
    }

    #[test]
    fn logical_call_ids_name_the_path_the_lineage_step_and_ordinal() {
        assert_eq!(
            logical_call_id("inv", &lineage(&[None, None], &[None, None]), 3, 0),
            "inv:outer/ask@3#0"
        );
        assert_eq!(
            logical_call_id(
                "inv",
                &lineage(&[Some(2), None, Some(7)], &[None, Some("b"), None]),
                12,
                4
            ),
            "inv:outer/ask[fan_out=2,fan_out=7,branch=b]@12#4"
        );
        assert_eq!(
            logical_call_id("inv", &lineage(&[], &[Some("x")]), 1, 1),
            "inv:outer/ask[branch=x]@1#1"
        );
    }
}
