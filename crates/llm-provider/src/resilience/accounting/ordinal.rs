//! Extension 0001 (attempt accounting): the ordinal of a `complete()` call among the
//! calls its node attempt issued, kept in the node's [`NodeCtx::extensions`].

use std::sync::{Mutex, PoisonError};

use openarmature_graph::NodeCtx;

/// Per node execution: `(attempt index, calls that attempt made so far)`.
#[derive(Default)]
struct CallOrdinals(Mutex<(u32, u32)>);

/// Claims the 0-based ordinal of the `complete()` call the current attempt of `ctx`'s
/// node is making: its first call gets 0, the next 1, and so on. Every attempt of a
/// node execution counts from 0, so a node-level retry that re-issues the same calls
/// in the same order gets the same ordinals — with [`NodeCtx::step`], the identity
/// of a *logical* call across both retry lanes.
pub(crate) fn next_call_ordinal(ctx: &NodeCtx) -> u32 {
    let attempt = ctx.latest_attempt_index();
    let ordinals = ctx.extensions().get_or_insert_with(CallOrdinals::default);
    let mut slot = ordinals.0.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.0 != attempt {
        *slot = (attempt, 0);
    }
    let ordinal = slot.1;
    slot.1 = slot.1.saturating_add(1);
    ordinal
}
