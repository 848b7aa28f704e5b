//! Spec: pipeline-utilities §9.1 / §9.7 — running one fan-out instance: its projected
//! initial state, its run through the instance middleware, and its contribution.

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::{is_carrier, Boundary, NodeCtx, NodeError, State, StateRef};
use serde_json::Value;

use super::{ErrorPolicy, FanOutNode};
use crate::dispatch::{run_default, DispatchSite, InstanceRequest};

impl<P: State, C: State> FanOutNode<P, C> {
    /// One instance's initial subgraph state.
    fn instance_state(&self, parent: &P, item: Option<Value>) -> Result<C, NodeError> {
        let mut child = self.graph.defaults().clone();
        if let (Some(item), Some(field)) = (item, &self.item_field) {
            child = child.with_field_json(field, item)?;
        }
        for (sub, par) in &self.inputs {
            child = child.with_field_json(sub, parent.field_json(par).unwrap_or(Value::Null))?;
        }
        Ok(child)
    }

    /// The instance's contribution, in subgraph space: `collect_field` and the
    /// `extra_outputs` subgraph fields of its final state.
    fn project(&self, done: &C) -> Result<C::Update, NodeError> {
        let mut fields = vec![(
            self.collect_field.clone(),
            done.field_json(&self.collect_field).unwrap_or(Value::Null),
        )];
        for (_, sub) in &self.extra_outputs {
            fields.push((sub.clone(), done.field_json(sub).unwrap_or(Value::Null)));
        }
        Ok(done.update_from_json(fields)?)
    }

    pub(super) async fn run_instance(
        &self,
        parent: &Arc<P>,
        ctx: &NodeCtx,
        site: Option<&DispatchSite>,
        index: usize,
        item: Option<Value>,
    ) -> Result<C::Update, NodeError> {
        let initial = self.instance_state(parent, item)?;
        let instance_ctx = ctx.enter(
            Arc::clone(parent) as StateRef,
            Boundary::FanOutInstance(index),
        );
        // Suspension §8.2: an instance of a collecting fan-out cannot suspend.
        let instance_ctx = match self.error_policy {
            ErrorPolicy::Collect => instance_ctx.forbid_suspension(
                "suspend() inside an instance of a fan-out with error_policy collect (suspension §8.2)",
            ),
            ErrorPolicy::FailFast => instance_ctx,
        };
        let graph = &self.graph;
        let target =
            move |state: Arc<C>, ictx: NodeCtx| -> BoxFuture<'_, Result<C::Update, NodeError>> {
                Box::pin(async move {
                    let done = match (&self.dispatcher, site) {
                        (Some(dispatcher), Some(site)) => {
                            let request = InstanceRequest::new(site, index, state, graph, &ictx);
                            dispatcher.dispatch(request).await?
                        }
                        _ => run_default(graph, state, &ictx).await?,
                    };
                    self.project(&done)
                })
            };
        openarmature_graph::run_chain(
            &self.instance_middleware,
            Arc::new(initial),
            instance_ctx,
            &target,
        )
        .await
    }
}

/// A fail-fast instance error propagates as the offending instance's error, wrapped
/// in one `node_exception` carrier (a subgraph failure already is one).
pub(super) fn carrier(error: NodeError) -> NodeError {
    if is_carrier(&error) {
        error
    } else {
        openarmature_graph::Carrier::new(
            openarmature_graph::Category::NODE_EXCEPTION,
            "fan-out instance failed",
            openarmature_graph::erase(error),
        )
        .into()
    }
}
