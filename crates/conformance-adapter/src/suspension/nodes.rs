//! Spec: conformance-adapter §5 for the suspension suite — the directives its fixtures
//! add to graph definitions: `suspend_with_descriptor`, `conditional_suspend` (with
//! `on_other_indices`) and `wrap_with_middleware` (`pre_post_logger`,
//! `suspending_middleware`).

use std::sync::{Arc, Mutex};

use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{
    DynState, GraphBuilder, Middleware, Next, Node, NodeCtx, NodeError, NodeFuture, State,
};
use serde_json::Value;

use crate::ge::build::Extension;
use crate::ge::harness::lock;
use crate::yaml::Y;
use crate::AdapterError;

/// The suite's directives, and the middleware log they write.
#[derive(Default)]
pub(crate) struct SuspendExt {
    /// `pre_post_logger` markers, in order.
    pub(crate) log: Arc<Mutex<Vec<String>>>,
}

const NODE_KEYS: &[&str] = &[
    "suspend_with_descriptor",
    "conditional_suspend",
    "on_other_indices",
    "wrap_with_middleware",
];

/// `{signal_id, metadata?}`.
pub(crate) fn descriptor(y: &Y<'_>) -> Result<SignalDescriptor, AdapterError> {
    y.check_keys(&["signal_id", "metadata"])?;
    let d = SignalDescriptor::new(y.req("signal_id")?.str()?);
    Ok(match y.get("metadata") {
        Some(m) => d.with_metadata_value(m.json()?),
        None => d,
    })
}

/// A node that runs its scripted steps, then suspends.
struct Suspending {
    inner: Arc<dyn Node<DynState>>,
    descriptor: SignalDescriptor,
}

impl Node<DynState> for Suspending {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(async move {
            self.inner.run(state, ctx).await?;
            suspend(self.descriptor.clone())
        })
    }
}

/// `conditional_suspend` + `on_other_indices: {update_from_field: {...}}`: the
/// fan-out instance of the given index suspends; the others write `field × multiplier`.
struct ConditionalSuspend {
    index: usize,
    descriptor: SignalDescriptor,
    writes: Vec<(String, String)>,
    multiplier: i64,
}

impl Node<DynState> for ConditionalSuspend {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(async move {
            if ctx.fan_out_index() == Some(self.index) {
                return suspend(self.descriptor.clone());
            }
            let mut pairs = Vec::new();
            for (target, source) in &self.writes {
                let value = state.field_json(source).unwrap_or(Value::Null);
                let Some(n) = value.as_i64() else {
                    return Err(NodeError::from(format!(
                        "on_other_indices: `{source}` is not an integer: {value}"
                    )));
                };
                pairs.push((target.clone(), Value::from(n * self.multiplier)));
            }
            Ok(state.update_from_json(pairs)?)
        })
    }
}

fn conditional(spec: &Y<'_>) -> Result<ConditionalSuspend, AdapterError> {
    let c = spec.req("conditional_suspend")?;
    c.check_keys(&["suspend_on_item_index", "descriptor"])?;
    let index = usize::try_from(c.req("suspend_on_item_index")?.i64()?)
        .map_err(|_| c.invalid("suspend_on_item_index must be ≥ 0"))?;
    let other = spec.req("on_other_indices")?;
    other.check_keys(&["update_from_field"])?;
    let mut writes = Vec::new();
    let mut multiplier = 1;
    for (k, v) in other.req("update_from_field")?.entries()? {
        if k == "multiplier" {
            multiplier = v.i64()?;
        } else {
            writes.push((k, v.str()?.to_owned()));
        }
    }
    Ok(ConditionalSuspend {
        index,
        descriptor: descriptor(&c.req("descriptor")?)?,
        writes,
        multiplier,
    })
}

/// `pre_post_logger`: logs `pre_log` before `next()` and `post_log` after it returns.
struct Logger {
    pre: String,
    post: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Middleware<DynState> for Logger {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            lock(&self.log).push(self.pre.clone());
            let out = next.run(state, ctx).await;
            lock(&self.log).push(self.post.clone());
            out
        })
    }
}

/// `suspending_middleware`: calls `suspend()` before `next()` (refused, §8.4).
struct SuspendingMiddleware {
    descriptor: SignalDescriptor,
}

impl Middleware<DynState> for SuspendingMiddleware {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            suspend::<()>(self.descriptor.clone())?;
            next.run(state, ctx).await
        })
    }
}

impl Extension for SuspendExt {
    fn node_keys(&self) -> &'static [&'static str] {
        NODE_KEYS
    }

    fn wrap_node(
        &self,
        _name: &str,
        spec: &Y<'_>,
        node: Arc<dyn Node<DynState>>,
    ) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
        if let Some(d) = spec.get("suspend_with_descriptor") {
            return Ok(Arc::new(Suspending {
                inner: node,
                descriptor: descriptor(&d)?,
            }));
        }
        if spec.get("conditional_suspend").is_some() {
            return Ok(Arc::new(conditional(spec)?));
        }
        Ok(node)
    }

    fn edges<'y>(
        &self,
        builder: GraphBuilder<DynState>,
        edges: Vec<Y<'y>>,
    ) -> Result<(GraphBuilder<DynState>, Vec<Y<'y>>), AdapterError> {
        Ok((builder, edges))
    }

    fn node_middleware(
        &self,
        spec: &Y<'_>,
    ) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
        let Some(list) = spec.get("wrap_with_middleware") else {
            return Ok(Vec::new());
        };
        let mut out: Vec<Arc<dyn Middleware<DynState>>> = Vec::new();
        for m in list.seq()? {
            let name = m.req("name")?.str()?.to_owned();
            match name.as_str() {
                "pre_post_logger" => {
                    m.check_keys(&["name", "pre_log", "post_log"])?;
                    out.push(Arc::new(Logger {
                        pre: m.req("pre_log")?.str()?.to_owned(),
                        post: m.req("post_log")?.str()?.to_owned(),
                        log: Arc::clone(&self.log),
                    }));
                }
                "suspending_middleware" => {
                    m.check_keys(&["name", "pre_next_calls_suspend_with_descriptor"])?;
                    out.push(Arc::new(SuspendingMiddleware {
                        descriptor: descriptor(&m.req("pre_next_calls_suspend_with_descriptor")?)?,
                    }));
                }
                other => {
                    return Err(AdapterError::DirectiveUnknown {
                        file: m.file.to_path_buf(),
                        directive: format!("wrap_with_middleware: {other}"),
                        location: m.location().to_owned(),
                    })
                }
            }
        }
        Ok(out)
    }
}
