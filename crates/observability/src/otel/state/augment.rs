//! Spec: observability §3.4 *Mid-invocation augmentation* (open spans in the
//! augmenting context, the call-stack ancestor chain, the sibling and shared-parent
//! boundaries) and §6 *Reflecting mid-invocation metadata augmentation on open
//! spans*.
//!
//! On a [`MetadataAugmented`] event the added entries are set, in place, on the
//! spans still open on the writer's call-stack path, walked from the writer outwards
//! through its lineage chains:
//!
//! - the writer's own node span (none for a write from instance or branch
//!   middleware, whose path starts at its wrapper);
//! - at every level crossed, the wrapper span of that level (a subgraph span, a
//!   fan-out instance span, a parallel-branch dispatch span — in a detached trace,
//!   also its dispatch span and root), and, for a serial boundary, the span of the
//!   node that entered it;
//! - never the span of a fan-out or parallel-branches node (a shared parent, by
//!   its type), never anything off the path (siblings are keyed by other chains);
//! - the invocation span only when no fan-out instance or branch is on the path.
//!
//! Spans already closed are not touched; spans opened later take the entries from
//! their own event's metadata snapshot.

use openarmature_graph::MetadataAugmented;
use opentelemetry::trace::Span;
use opentelemetry::KeyValue;

use super::{InvState, Key};

impl InvState {
    /// Applies one metadata-augmentation event (see the module docs).
    pub(crate) fn on_metadata(&mut self, e: &MetadataAugmented) {
        let attrs = crate::metadata::lenient_user_attributes(&e.entries);
        if attrs.is_empty() {
            return;
        }
        let lineage = &e.lineage;
        let n = lineage.namespace.len();
        // A write from a dispatch context itself (fan-out instance or branch
        // middleware): its chains already include the boundary it entered, so its
        // path starts at that wrapper's scope, not at a node span.
        let in_scope =
            n > 0 && lineage.fan_out_index_chain.len() >= n && lineage.branch_name_chain.len() >= n;
        let (path, top) = if in_scope {
            let path = Key {
                namespace: lineage.namespace.to_vec(),
                fan_out: lineage.fan_out_index_chain[..n].to_vec(),
                branch: lineage.branch_name_chain[..n].to_vec(),
            };
            (path, n)
        } else {
            let unit = Key::of_lineage(lineage);
            if let Some(open) = self.nodes.get_mut(&(unit.clone(), lineage.attempt_index)) {
                open.span.set_attributes(attrs.clone());
            }
            let top = unit.depth().saturating_sub(1);
            (unit, top)
        };
        let mut forked = false;
        for d in (1..=top).rev() {
            let scope = path.scope(d);
            let dispatched = scope.fan_out[d - 1].is_some() || scope.branch[d - 1].is_some();
            if let Some(w) = self.wrappers.get_mut(&scope) {
                set_all(&mut w.inner.span, &attrs);
                if let Some(dispatch) = w.dispatch.as_mut() {
                    set_all(&mut dispatch.span, &attrs);
                }
                if let Some(root) = w.detached_root.as_mut() {
                    set_all(&mut root.span, &attrs);
                }
            }
            if dispatched {
                // The fan-out / parallel-branches node itself is a shared parent.
                forked = true;
                continue;
            }
            // A serial boundary: the node that entered it (a node running a subgraph
            // in its body) is on the path too.
            let entered_by = scope.wrapper_unit();
            for ((key, _), open) in &mut self.nodes {
                if *key == entered_by {
                    set_all(&mut open.span, &attrs);
                }
            }
        }
        if !forked {
            set_all(&mut self.root.span, &attrs);
        }
    }
}

fn set_all(span: &mut opentelemetry::global::BoxedSpan, attrs: &[KeyValue]) {
    span.set_attributes(attrs.iter().cloned());
}
