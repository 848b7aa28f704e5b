//! Spec: conformance-adapter §5.4 — fan-out and parallel-branches node directives
//! (pipeline-utilities §9, §11), built on the real primitives.

use std::num::NonZeroUsize;
use std::sync::Arc;

use openarmature_graph::{
    CategorizedError, Category, CompileError, DynState, Middleware, Next, Node, NodeCtx, NodeError,
    NodeFuture,
};
use openarmature_pipeline::{
    Branch, CallBranch, ErrorPolicy, FanOutNode, OnEmpty, ParallelBranchesNode, SubgraphBranch,
};
use serde_json::Value;

use super::build::Builder;
use super::middleware::chain;
use crate::yaml::Y;
use crate::AdapterError;

fn unknown(y: &Y<'_>, what: String) -> AdapterError {
    AdapterError::DirectiveUnknown {
        file: y.file.to_path_buf(),
        directive: what,
        location: y.location().to_owned(),
    }
}

fn pairs(y: &Y<'_>) -> Result<Vec<(String, String)>, AdapterError> {
    y.entries()?
        .into_iter()
        .map(|(k, v)| Ok((k, v.str()?.to_owned())))
        .collect()
}

fn policy(y: Option<Y<'_>>) -> Result<ErrorPolicy, AdapterError> {
    let Some(y) = y else {
        return Ok(ErrorPolicy::FailFast);
    };
    match y.str()? {
        "fail_fast" => Ok(ErrorPolicy::FailFast),
        "collect" => Ok(ErrorPolicy::Collect),
        other => Err(unknown(&y, format!("error_policy: {other}"))),
    }
}

/// A count / concurrency resolver: a literal, null, or a named harness callable.
enum Resolver {
    Literal(Option<i64>),
    Field(String),
    QueueChunk(String, i64),
}

impl Resolver {
    fn parse(y: &Y<'_>) -> Result<Resolver, AdapterError> {
        if y.is_null() {
            return Ok(Resolver::Literal(None));
        }
        if let Ok(n) = y.i64() {
            return Ok(Resolver::Literal(Some(n)));
        }
        let callable = y.req("callable")?;
        match callable.str()? {
            "state_field_read" => {
                y.check_keys(&["callable", "field"])?;
                Ok(Resolver::Field(y.req("field")?.str()?.to_owned()))
            }
            "queue_chunk" => {
                y.check_keys(&["callable", "field", "chunk_size"])?;
                let size = y.req("chunk_size")?.i64()?;
                if size < 1 {
                    return Err(y.invalid("chunk_size must be ≥ 1"));
                }
                Ok(Resolver::QueueChunk(
                    y.req("field")?.str()?.to_owned(),
                    size,
                ))
            }
            other => Err(unknown(&callable, format!("callable: {other}"))),
        }
    }

    fn eval(&self, state: &DynState) -> Result<Option<i64>, NodeError> {
        match self {
            Resolver::Literal(v) => Ok(*v),
            Resolver::Field(f) => match state.get(f) {
                Some(Value::Null) | None => Ok(None),
                Some(v) => v
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| format!("field `{f}` is not an integer: {v}").into()),
            },
            Resolver::QueueChunk(f, size) => {
                let len = state.get(f).and_then(Value::as_array).map_or(0, Vec::len);
                let len = i64::try_from(len).unwrap_or(i64::MAX);
                Ok(Some((len / size).max(1)))
            }
        }
    }
}

/// Register R8: a fixture's `count` is a YAML int; a negative one (literal or
/// resolved) is the spec's runtime `fan_out_invalid_count` (pipeline-utilities §9.1).
fn instance_count(n: Option<i64>) -> Result<usize, NodeError> {
    let n = n.ok_or_else(|| NodeError::from("count resolved to null"))?;
    usize::try_from(n).map_err(|_| {
        fan_out_error(
            Category::FAN_OUT_INVALID_COUNT,
            format!("fan-out count must be ≥ 0, got {n}"),
        )
    })
}

/// Register R8: a fixture's `concurrency` is a YAML int or null; zero or negative
/// is the spec's runtime `fan_out_invalid_concurrency` (pipeline-utilities §9.2).
fn concurrency_bound(n: Option<i64>) -> Result<Option<NonZeroUsize>, NodeError> {
    let Some(n) = n else { return Ok(None) };
    usize::try_from(n)
        .ok()
        .and_then(NonZeroUsize::new)
        .map(Some)
        .ok_or_else(|| {
            fan_out_error(
                Category::FAN_OUT_INVALID_CONCURRENCY,
                format!("fan-out concurrency must be a positive integer, got {n}"),
            )
        })
}

fn fan_out_error(category: Category, message: String) -> NodeError {
    CategorizedError::new(category, message).into()
}

impl<'a> Builder<'a> {
    /// `fan_out: {...}` → [`FanOutNode`].
    pub(crate) fn fan_out(
        &self,
        y: &Y<'a>,
    ) -> Result<Result<Arc<dyn Node<DynState>>, CompileError>, AdapterError> {
        let mut known = vec![
            "subgraph",
            "items_field",
            "item_field",
            "count",
            "collect_field",
            "target_field",
            "concurrency",
            "concurrent_mode",
            "error_policy",
            "errors_field",
            "on_empty",
            "count_field",
            "inputs",
            "extra_outputs",
            "instance_middleware",
            // Read by the checkpoint runner (ge/checkpoint/store.rs, register R13).
            "abort_after_instance",
        ];
        if let Some(ext) = &self.extension {
            known.extend_from_slice(ext.fan_out_keys());
        }
        y.check_keys(&known)?;
        let sub = y.req("subgraph")?;
        let graph = match self.subgraph(sub.str()?, &sub)? {
            Ok(g) => g,
            Err(e) => return Ok(Err(e)),
        };
        let s = |k: &str| y.req(k).and_then(|v| v.str().map(str::to_owned));
        let mut node =
            FanOutNode::<DynState, DynState>::new(graph, s("collect_field")?, s("target_field")?);
        if let Some(items) = y.get("items_field") {
            node = match y.get("item_field") {
                Some(item) => node.items(items.str()?, item.str()?),
                None => return Err(y.invalid("items_field needs item_field")),
            };
        } else if let Some(item) = y.get("item_field") {
            node = node.item_field(item.str()?);
        }
        if let Some(count) = y.get("count") {
            node = match Resolver::parse(&count)? {
                Resolver::Literal(None) => return Err(count.invalid("count must not be null")),
                Resolver::Literal(Some(n)) if n >= 0 => node.count(usize::try_from(n).unwrap_or(0)),
                other => node.count_with(move |s| instance_count(other.eval(s)?)),
            };
        }
        if let Some(c) = y.get("concurrency") {
            node = match Resolver::parse(&c)? {
                Resolver::Literal(v) if v.is_none_or(|n| n >= 1) => {
                    let v = v.and_then(|n| usize::try_from(n).ok());
                    node.concurrency(v.and_then(NonZeroUsize::new))
                }
                other => node.concurrency_with(move |s| concurrency_bound(other.eval(s)?)),
            };
        }
        if let Some(mode) = y.get("concurrent_mode") {
            match mode.str()? {
                "serial" => node = node.concurrency(Some(NonZeroUsize::MIN)),
                "concurrent" => {}
                other => return Err(unknown(&mode, format!("concurrent_mode: {other}"))),
            }
        }
        node = node.error_policy(policy(y.get("error_policy"))?);
        if let Some(f) = y.get("errors_field") {
            super::harness::lock(&self.harness.errors_fields).push(f.str()?.to_owned());
            node = node.errors_field(f.str()?);
        }
        if let Some(e) = y.get("on_empty") {
            node = node.on_empty(match e.str()? {
                "raise" => OnEmpty::Raise,
                "noop" => OnEmpty::Noop,
                other => return Err(unknown(&e, format!("on_empty: {other}"))),
            });
        }
        if let Some(f) = y.get("count_field") {
            node = node.count_field(f.str()?);
        }
        if let Some(i) = y.get("inputs") {
            node = node.inputs(pairs(&i)?);
        }
        if let Some(o) = y.get("extra_outputs") {
            node = node.extra_outputs(pairs(&o)?);
        }
        if let Some(list) = y.get("instance_middleware") {
            for m in chain(&list, &self.harness)? {
                node = node.instance_middleware(m);
            }
        }
        if let Some(ext) = &self.extension {
            for m in ext.instance_middleware(y)? {
                node = node.instance_middleware(m);
            }
        }
        Ok(Ok(Arc::new(node)))
    }

    /// `parallel_branches: {branches, error_policy, errors_field}` →
    /// [`ParallelBranchesNode`].
    pub(crate) fn parallel_branches(
        &self,
        name: &str,
        y: &Y<'a>,
    ) -> Result<Result<Arc<dyn Node<DynState>>, CompileError>, AdapterError> {
        y.check_keys(&["branches", "error_policy", "errors_field"])?;
        let mut node =
            ParallelBranchesNode::<DynState>::new().error_policy(policy(y.get("error_policy"))?);
        if let Some(f) = y.get("errors_field") {
            super::harness::lock(&self.harness.errors_fields).push(f.str()?.to_owned());
            node = node.errors_field(f.str()?);
        }
        let branches = y.req("branches")?;
        let entries = if branches.is_null() {
            Vec::new()
        } else {
            branches.entries()?
        };
        for (branch_name, spec) in entries {
            spec.check_keys(&[
                "subgraph",
                "call",
                "inputs",
                "outputs",
                "middleware",
                "when",
                "augment_metadata",
                "augment_metadata_from_outer_item",
            ])?;
            let mut augment = spec
                .get("augment_metadata")
                .map(|a| augment_middleware(&a))
                .transpose()?;
            if let Some(a) = spec.get("augment_metadata_from_outer_item") {
                augment = Some(outer_item_middleware(&a)?);
            }
            let mut branch = Branch::empty();
            if let Some(sub) = spec.get("subgraph") {
                let graph = match self.subgraph(sub.str()?, &sub)? {
                    Ok(g) => g,
                    Err(e) => return Ok(Err(e)),
                };
                let mut work = SubgraphBranch::<DynState, DynState>::new(graph);
                if let Some(i) = spec.get("inputs") {
                    work = work.inputs(pairs(&i)?);
                }
                if let Some(o) = spec.get("outputs") {
                    work = work.outputs(pairs(&o)?);
                }
                if let Some(list) = spec.get("middleware") {
                    for m in chain(&list, &self.harness)? {
                        work = work.middleware(m);
                    }
                }
                if let Some(a) = &augment {
                    work = work.middleware(Arc::clone(a));
                }
                branch = branch.also(work);
            }
            if let Some(call) = spec.get("call") {
                let scripted = self.scripted(&format!("{name}.{branch_name}"), &call)?;
                let mut work = CallBranch::new(move |s, c| {
                    let node = Arc::clone(&scripted);
                    async move { node.run(s, c).await }
                });
                if spec.get("subgraph").is_none() {
                    if let Some(list) = spec.get("middleware") {
                        for m in chain(&list, &self.harness)? {
                            work = work.middleware(m);
                        }
                    }
                }
                branch = branch.also(work);
            }
            if let Some(when) = spec.get("when") {
                when.check_keys(&["field", "gt"])?;
                let field = when.req("field")?.str()?.to_owned();
                let gt = when.opt_f64("gt")?;
                branch = branch.when(move |s: &DynState| {
                    let v = s.get(&field).cloned().unwrap_or(Value::Null);
                    match gt {
                        Some(bound) => v.as_f64().is_some_and(|x| x > bound),
                        None => truthy(&v),
                    }
                });
            }
            node = node.branch(branch_name, branch);
        }
        Ok(Ok(Arc::new(node)))
    }
}

/// Register O18: a branch's `augment_metadata: {k: v}` (observability 030) is the
/// innermost branch middleware writing the entries with `set_invocation_metadata` in
/// the branch's own context, before the branch's subgraph runs (the "top of the
/// branch body").
fn augment_middleware(y: &Y<'_>) -> Result<Arc<dyn Middleware<DynState>>, AdapterError> {
    let entries: Vec<(String, Value)> = y
        .entries()?
        .into_iter()
        .map(|(k, v)| v.json().map(|v| (k, v)))
        .collect::<Result<_, _>>()?;
    Ok(Arc::new(AugmentFirst(entries)))
}

struct AugmentFirst(Vec<(String, Value)>);

/// Register O7 / O21: the state field a fan-out over an inner subgraph puts its item
/// in (the observability runner's `inner_subgraphs` shorthand).
pub(crate) const ITEM_SLOT: &str = "input";

/// Register O21: a branch's `augment_metadata_from_outer_item: {key: item_key}`
/// (observability 039) is the innermost branch middleware writing each `key` from
/// `item_key` of the enclosing fan-out instance's item, which the observability
/// runner projects into the branch state's [`ITEM_SLOT`].
fn outer_item_middleware(y: &Y<'_>) -> Result<Arc<dyn Middleware<DynState>>, AdapterError> {
    Ok(Arc::new(AugmentFromOuterItem(pairs(y)?)))
}

struct AugmentFromOuterItem(Vec<(String, String)>);

impl Middleware<DynState> for AugmentFromOuterItem {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            let item = state.get(ITEM_SLOT).cloned().unwrap_or(Value::Null);
            let entries = self.0.iter().map(|(key, item_key)| {
                let value = item.get(item_key).cloned().unwrap_or(Value::Null);
                (key.clone(), value)
            });
            ctx.set_invocation_metadata(entries)?;
            next.run(state, ctx).await
        })
    }
}

impl Middleware<DynState> for AugmentFirst {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            ctx.set_invocation_metadata(self.0.iter().cloned())?;
            next.run(state, ctx).await
        })
    }
}

/// Python-style truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
