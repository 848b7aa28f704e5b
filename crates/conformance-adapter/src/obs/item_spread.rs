//! Spec: pipeline-utilities §9.7 (instance middleware) — register O21: the fan-out
//! instances of an `inner_subgraphs` shorthand copy item keys into their state.
//!
//! 039 case 1 runs an inner fan-out over `inner_seed`, a key of the *outer* fan-out's
//! item; the engine's item projection places the whole item in one field, so the
//! desugared fan-out carries `spread_item_fields: [names]` and this instance
//! middleware copies each named key of the item (from the fan-out's `item_field`)
//! into the same-named instance field before the instance runs.

use std::sync::Arc;

use openarmature_graph::{DynState, Middleware, Next, NodeCtx, NodeFuture, State};

use crate::yaml::Y;
use crate::AdapterError;

/// The `fan_out:` key the desugaring writes.
pub(crate) const KEY: &str = "spread_item_fields";

struct Spread {
    item_field: String,
    fields: Vec<String>,
}

impl Middleware<DynState> for Spread {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            let item = state.get(&self.item_field).cloned();
            let mut spread = (*state).clone();
            for name in &self.fields {
                if let Some(value) = item.as_ref().and_then(|i| i.get(name)) {
                    spread = spread.with_field_json(name, value.clone())?;
                }
            }
            next.run(Arc::new(spread), ctx).await
        })
    }
}

/// The spreading middleware of a `fan_out:` block carrying [`KEY`], if any.
pub(crate) fn middleware(
    fan_out: &Y<'_>,
) -> Result<Option<Arc<dyn Middleware<DynState>>>, AdapterError> {
    let Some(y) = fan_out.get(KEY) else {
        return Ok(None);
    };
    let item_field = fan_out
        .get("item_field")
        .ok_or_else(|| y.invalid("spread_item_fields needs item_field"))?
        .str()?
        .to_owned();
    Ok(Some(Arc::new(Spread {
        item_field,
        fields: y.strings()?,
    })))
}
