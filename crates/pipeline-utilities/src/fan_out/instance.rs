//! Spec: pipeline-utilities §9.1 / §9.7 — running one fan-out instance: its projected
//! initial state, its run through the instance middleware, and its contribution.

use std::sync::Arc;

use openarmature_graph::{is_carrier, InstanceEntry, NodeCtx, NodeError, NodeFuture, State};
use serde_json::Value;

use super::fan_in::Contribution;
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

    /// An instance's contribution read from its update (what the instance chain
    /// returned): `collect_field`, then each `extra_outputs` subgraph field.
    fn contribution(&self, update: &C::Update) -> Contribution {
        let read = |f: &str| C::update_field_json(update, f).unwrap_or(Value::Null);
        self.fields(read)
    }

    /// The same values read from the instance's final state (no instance middleware:
    /// no update is built).
    fn contribution_of(&self, done: &C) -> Contribution {
        self.fields(|f: &str| done.field_json(f).unwrap_or(Value::Null))
    }

    fn fields(&self, read: impl Fn(&str) -> Value) -> Contribution {
        Contribution {
            collect: read(&self.collect_field),
            extras: self
                .extra_outputs
                .iter()
                .map(|(_, sub)| read(sub))
                .collect(),
        }
    }

    /// The subgraph run of one instance: through the dispatcher when one is set, else
    /// nested in this invocation.
    async fn run_subgraph(
        &self,
        site: Option<&DispatchSite>,
        index: usize,
        state: Arc<C>,
        ictx: &NodeCtx,
    ) -> Result<C, NodeError> {
        match (&self.dispatcher, site) {
            (Some(dispatcher), Some(site)) => {
                let request = InstanceRequest::new(site, index, state, &self.graph, ictx);
                dispatcher.dispatch(request).await
            }
            _ => run_default(&self.graph, state, ictx).await,
        }
    }

    /// Runs instance `index` through its middleware chain; its contribution values.
    pub(super) async fn run_instance(
        &self,
        parent: &P,
        entry: &InstanceEntry,
        site: Option<&DispatchSite>,
        index: usize,
        item: Option<Value>,
    ) -> Result<Contribution, NodeError> {
        let initial = Arc::new(self.instance_state(parent, item)?);
        let instance_ctx = entry.enter(index);
        // Suspension §8.2: an instance of a collecting fan-out cannot suspend.
        let instance_ctx = match self.error_policy {
            ErrorPolicy::Collect => instance_ctx.forbid_suspension(
                "suspend() inside an instance of a fan-out with error_policy collect (suspension §8.2)",
            ),
            ErrorPolicy::FailFast => instance_ctx,
        };
        // No middleware and no dispatcher: nothing re-attempts, inspects or replaces
        // the update, so the chain (and the update it carries) is skipped.
        if self.instance_middleware.is_empty() && site.is_none() {
            let done = self
                .run_subgraph(site, index, initial, &instance_ctx)
                .await?;
            return Ok(self.contribution_of(&done));
        }
        let target = move |state: Arc<C>, ictx: NodeCtx| -> NodeFuture<'_, C> {
            Box::pin(async move {
                let done = self.run_subgraph(site, index, state, &ictx).await?;
                self.project(&done)
            })
        };
        let update = openarmature_graph::run_chain(
            &self.instance_middleware,
            initial,
            instance_ctx,
            &target,
        )
        .await?;
        Ok(self.contribution(&update))
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
