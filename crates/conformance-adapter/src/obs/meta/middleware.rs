//! Spec: pipeline-utilities §6.1 (retry) / §9.7 (instance middleware) with
//! observability §3.4 — the middleware the §3.4 directives need: 045's
//! `retry_middleware` and 044's fan-out `augment_metadata_from_field`.

use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{
    set_invocation_metadata, DynState, Middleware, Next, NodeCtx, NodeFuture,
};
use openarmature_pipeline::retry::{CategoryClassifier, Constant, RetryConfig};
use openarmature_pipeline::RetryMiddleware;
use serde_json::{Map, Value};

use super::{MetaHarness, Record, Site};
use crate::yaml::Y;
use crate::AdapterError;

/// `retry_middleware: {max_attempts, classifier: transient_marker}`.
pub(crate) fn node_middleware(
    spec: &Y<'_>,
) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
    let Some(y) = spec.get("retry_middleware") else {
        return Ok(Vec::new());
    };
    y.check_keys(&["max_attempts", "classifier"])?;
    let mut config = RetryConfig::default().backoff(Constant(Duration::ZERO));
    if let Some(n) = y.get("max_attempts") {
        config =
            config.max_attempts(u32::try_from(n.i64()?).map_err(|_| n.invalid("must be ≥ 0"))?);
    }
    if let Some(c) = y.get("classifier") {
        let name = c.str()?;
        config.classifier = Arc::new(CategoryClassifier::new([format!("{name}_error")]));
    }
    Ok(vec![Arc::new(RetryMiddleware::new(config))])
}

/// Fan-out `augment_metadata_from_field: {key: field}`: each instance augments its
/// own copy from its item (the instance state's `item_field`).
struct AugmentFromItem {
    item_field: String,
    map: Vec<(String, String)>,
    harness: Arc<MetaHarness>,
}

impl Middleware<DynState> for AugmentFromItem {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            let item = state.get(&self.item_field).cloned().unwrap_or(Value::Null);
            let entries: Map<String, Value> = self
                .map
                .iter()
                .map(|(key, field)| (key.clone(), item.get(field).cloned().unwrap_or(Value::Null)))
                .collect();
            let result = set_invocation_metadata(entries.clone());
            self.harness.record(Record::Augment {
                site: Site::of(ctx.node_name(), &ctx),
                entries,
                rejected: result.as_ref().err().map(|e| e.category().to_owned()),
            });
            result?;
            next.run(state, ctx).await
        })
    }
}

/// The instance middleware of [`FAN_OUT_KEYS`] present in `fan_out`.
pub(crate) fn instance_middleware(
    fan_out: &Y<'_>,
    harness: &Arc<MetaHarness>,
) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
    let Some(y) = fan_out.get("augment_metadata_from_field") else {
        return Ok(Vec::new());
    };
    let item_field = fan_out
        .get("item_field")
        .ok_or_else(|| y.invalid("augment_metadata_from_field needs item_field"))?
        .str()?
        .to_owned();
    let map = y
        .entries()?
        .into_iter()
        .map(|(k, v)| Ok((k, v.str()?.to_owned())))
        .collect::<Result<_, AdapterError>>()?;
    Ok(vec![Arc::new(AugmentFromItem {
        item_field,
        map,
        harness: Arc::clone(harness),
    })])
}
