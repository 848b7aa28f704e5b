//! Spec: conformance-adapter §5.1 / §5.3 extended by the observability fixture headers:
//! the graph directives the observability suite adds to the graph-engine vocabulary.
//!
//! - `emits_log: {message, level}` — the node makes a log record (fixture 010) through
//!   [`OtelObserver::log`], before its other work.
//! - `calls_llm` / `also_emits_via_global_tracer` — an LLM call against the case's
//!   mock provider, after the node's scripted steps (see [`super::llm`]).
//! - `calls_llm_from_wrapper` — an LLM call made by a node middleware, outside the
//!   node body (see [`super::wrapper_llm`]).
//! - `update_pure_from_state: {field: <harness function>}` — a pure update computed
//!   from the state (fixtures 006 / 008: `input_times_two`).
//! - The §3.4 / §9 directives of [`super::meta`] (`augment_metadata`,
//!   `capture_invocation_metadata_into`, queryable-observer reads, …), run at the
//!   top of the body in document order.
//! - Guarded edges `{from, when: {field, gt | lt | equals}, to}` with an unguarded
//!   fallback edge from the same node (fixture 011).
//! - `condition: {if_field, equals, then, else}` edges are compiled without destination
//!   hints, so every node counts as reachable from them (adapter register O4: the
//!   reference over-approximates a conditional edge's range, and fixture 004 declares a
//!   node no edge reaches).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use openarmature_graph::{
    DynState, DynUpdate, GraphBuilder, Node, NodeCtx, NodeError, Target, END,
};
use openarmature_observability::OtelObserver;
use opentelemetry::logs::Severity;
use serde_json::Value;

use super::llm::{LlmCall, LlmHarness};
use super::prompts::{PromptHarness, PromptStep};
use crate::ge::build::Extension;
use crate::shared::{lock, target, Around, AroundNode};
use crate::yaml::Y;
use crate::AdapterError;

/// Node keys this extension handles (with [`super::meta::NODE_KEYS`]).
const NODE_KEYS: &[&str] = &[
    "emits_log",
    "update_pure_from_state",
    "calls_llm",
    "also_emits_via_global_tracer",
    "renders_prompt",
    "renders_prompt_group",
    super::wrapper_llm::KEY,
    super::tools::KEY,
    super::retrieval::EMBED_KEY,
    super::retrieval::RERANK_KEY,
];

static ALL_NODE_KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    NODE_KEYS
        .iter()
        .chain(super::meta::NODE_KEYS)
        .copied()
        .collect()
});

/// A log record a node made: which node, which body.
#[derive(Debug, Clone)]
pub(crate) struct EmittedLog {
    pub(crate) node: String,
    pub(crate) body: String,
}

/// The observability directives, wired to the case's observer.
pub(crate) struct ObsExtension {
    pub(crate) observer: OtelObserver,
    pub(crate) logs: Arc<Mutex<Vec<EmittedLog>>>,
    /// The mock provider, when the case makes LLM calls.
    pub(crate) llm: Option<Arc<LlmHarness>>,
    /// The prompt store, when the case declares `prompt_backend`.
    pub(crate) prompts: Option<Arc<PromptHarness>>,
    /// The §3.4 / §9 directives' records and queryable observers.
    pub(crate) meta: Arc<super::meta::MetaHarness>,
    /// The embedding / rerank mocks, when the case declares them.
    pub(crate) retrieval: Option<Arc<super::retrieval::RetrievalHarness>>,
}

fn unknown(y: &Y<'_>, what: String) -> AdapterError {
    AdapterError::DirectiveUnknown {
        file: y.file.to_path_buf(),
        directive: what,
        location: y.location().to_owned(),
    }
}

/// A harness function of `update_pure_from_state`.
#[derive(Debug, Clone)]
enum PureFn {
    /// `<field>_times_two`: the field's value doubled.
    TimesTwo(String),
}

impl PureFn {
    fn parse(y: &Y<'_>) -> Result<PureFn, AdapterError> {
        let name = y.str()?;
        match name.strip_suffix("_times_two") {
            Some(field) if !field.is_empty() => Ok(PureFn::TimesTwo(field.to_owned())),
            _ => Err(unknown(
                y,
                format!("update_pure_from_state function `{name}`"),
            )),
        }
    }

    fn eval(&self, state: &DynState) -> Result<Value, NodeError> {
        match self {
            PureFn::TimesTwo(field) => {
                let v = state.get(field).cloned().unwrap_or(Value::Null);
                if let Some(i) = v.as_i64() {
                    Ok(Value::from(i.checked_mul(2).ok_or("integer overflow")?))
                } else if let Some(f) = v.as_f64() {
                    Ok(serde_json::Number::from_f64(f * 2.0).map_or(Value::Null, Value::Number))
                } else {
                    Err(format!("`{field}` is not a number: {v}").into())
                }
            }
        }
    }
}

/// A node wrapped with the extension's directives.
struct ObsNode {
    name: String,
    inner: Arc<dyn Node<DynState>>,
    logs: Vec<(Severity, String)>,
    pure: Vec<(String, PureFn)>,
    llm: Option<LlmCall>,
    prompt: Option<(PromptStep, Arc<PromptHarness>)>,
    global_span: Option<String>,
    observer: OtelObserver,
    emitted: Arc<Mutex<Vec<EmittedLog>>>,
}

impl AroundNode for ObsNode {
    fn inner(&self) -> &Arc<dyn Node<DynState>> {
        &self.inner
    }

    async fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> Result<DynUpdate, NodeError> {
        for (sev, body) in &self.logs {
            self.observer.log(&ctx, *sev, body.clone());
            lock(&self.emitted).push(EmittedLog {
                node: self.name.clone(),
                body: body.clone(),
            });
        }
        let mut update = self.inner.run(Arc::clone(&state), ctx.clone()).await?;
        if let Some(name) = &self.global_span {
            super::llm::emit_global(name);
        }
        match (&self.llm, &self.prompt) {
            (Some(call), Some((step, prompts))) => {
                let rendered = step.render(prompts).await?;
                let messages = Some(rendered.messages());
                rendered
                    .scope(call.run(&ctx, &mut update, messages))
                    .await?;
            }
            (Some(call), None) => call.run(&ctx, &mut update, None).await?,
            _ => {}
        }
        for (field, f) in &self.pure {
            update.fields.push((field.clone(), f.eval(&state)?));
        }
        Ok(update)
    }
}

/// One `when:` guard.
#[derive(Debug, Clone)]
enum Guard {
    Gt(String, f64),
    Lt(String, f64),
    Equals(String, Value),
}

impl Guard {
    fn parse(y: &Y<'_>) -> Result<Guard, AdapterError> {
        y.check_keys(&["field", "gt", "lt", "equals"])?;
        let field = y.req("field")?.str()?.to_owned();
        match (y.get("gt"), y.get("lt"), y.get("equals")) {
            (Some(v), None, None) => Ok(Guard::Gt(field, v.f64()?)),
            (None, Some(v), None) => Ok(Guard::Lt(field, v.f64()?)),
            (None, None, Some(v)) => Ok(Guard::Equals(field, v.json()?)),
            _ => Err(y.invalid("a `when` guard needs exactly one of gt, lt, equals")),
        }
    }

    fn holds(&self, s: &DynState) -> bool {
        let num = |f: &str| s.get(f).and_then(Value::as_f64);
        match self {
            Guard::Gt(f, b) => num(f).is_some_and(|x| x > *b),
            Guard::Lt(f, b) => num(f).is_some_and(|x| x < *b),
            Guard::Equals(f, v) => s.get(f).is_some_and(|x| crate::matchers::json_eq(x, v)),
        }
    }
}

/// A node's guarded destinations and its fallback.
type Routes = (Vec<(Guard, Target)>, Option<Target>);

/// Register O4: an `if_field` condition without destination hints.
fn if_field_edge(
    builder: GraphBuilder<DynState>,
    e: &Y<'_>,
    c: &Y<'_>,
) -> Result<GraphBuilder<DynState>, AdapterError> {
    e.check_keys(&["from", "condition"])?;
    let from = e.req("from")?.str()?.to_owned();
    crate::shared::if_field_edge(builder, from, c, false)
}

/// The `fan_out:` keys the extension's instance middleware handles.
static FAN_OUT_KEYS: [&str; 2] = [super::meta::FAN_OUT_KEYS[0], super::item_spread::KEY];

impl Extension for ObsExtension {
    fn node_keys(&self) -> &'static [&'static str] {
        &ALL_NODE_KEYS
    }

    fn node_middleware(
        &self,
        spec: &Y<'_>,
    ) -> Result<Vec<Arc<dyn openarmature_graph::Middleware<DynState>>>, AdapterError> {
        let mut chain = super::meta::node_middleware(spec)?;
        chain.extend(super::wrapper_llm::middleware(spec, self.llm.as_ref())?);
        Ok(chain)
    }

    fn fan_out_keys(&self) -> &'static [&'static str] {
        &FAN_OUT_KEYS
    }

    fn instance_middleware(
        &self,
        fan_out: &Y<'_>,
    ) -> Result<Vec<Arc<dyn openarmature_graph::Middleware<DynState>>>, AdapterError> {
        let mut chain: Vec<_> = super::item_spread::middleware(fan_out)?
            .into_iter()
            .collect();
        chain.extend(super::meta::instance_middleware(fan_out, &self.meta)?);
        Ok(chain)
    }

    fn wrap_node(
        &self,
        name: &str,
        spec: &Y<'_>,
        node: Arc<dyn Node<DynState>>,
    ) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
        let node = super::tools::wrap(spec, node)?;
        let node =
            super::retrieval::wrap(spec, node, self.retrieval.as_ref(), self.prompts.as_ref())?;
        let retrieval_prompt = spec.get(super::retrieval::EMBED_KEY).is_some()
            || spec.get(super::retrieval::RERANK_KEY).is_some();
        let node = super::meta::wrap(name, spec, node, &self.meta)?;
        let mut logs = Vec::new();
        if let Some(log) = spec.get("emits_log") {
            log.check_keys(&["message", "level"])?;
            let level = match log.get("level") {
                Some(l) => crate::shared::severity(&l)?,
                None => Severity::Info,
            };
            logs.push((level, log.req("message")?.str()?.to_owned()));
        }
        let mut pure = Vec::new();
        if let Some(p) = spec.get("update_pure_from_state") {
            for (field, f) in p.entries()? {
                pure.push((field, PureFn::parse(&f)?));
            }
        }
        let prompt = match PromptStep::parse(spec)?.filter(|_| !retrieval_prompt) {
            Some(step) => match (&self.prompts, spec.get("calls_llm")) {
                (Some(h), Some(_)) => Some((step, Arc::clone(h))),
                (None, _) => return Err(spec.invalid("a rendered prompt without prompt_backend")),
                (_, None) => return Err(spec.invalid("a rendered prompt without calls_llm")),
            },
            None => None,
        };
        let llm = match spec.get("calls_llm") {
            Some(c) => match &self.llm {
                Some(h) => Some(h.call(&c, prompt.is_some())?),
                None => return Err(c.invalid("calls_llm without a mock provider")),
            },
            None => None,
        };
        let global_span = spec
            .get("also_emits_via_global_tracer")
            .map(|g| super::llm::global_span(&g))
            .transpose()?;
        if logs.is_empty() && pure.is_empty() && llm.is_none() && global_span.is_none() {
            return Ok(node);
        }
        Ok(Around::node(ObsNode {
            name: name.to_owned(),
            inner: node,
            logs,
            pure,
            llm,
            prompt,
            global_span,
            observer: self.observer.clone(),
            emitted: Arc::clone(&self.logs),
        }))
    }

    fn edges<'y>(
        &self,
        mut builder: GraphBuilder<DynState>,
        edges: Vec<Y<'y>>,
    ) -> Result<(GraphBuilder<DynState>, Vec<Y<'y>>), AdapterError> {
        let mut guarded_from = Vec::new();
        let mut rest = Vec::new();
        for e in edges {
            if e.get("when").is_some() {
                guarded_from.push(e.req("from")?.str()?.to_owned());
            }
            match e.get("condition") {
                Some(c) if c.get("if_field").is_some() => {
                    builder = if_field_edge(builder, &e, &c)?;
                }
                _ => rest.push(e),
            }
        }
        if guarded_from.is_empty() {
            return Ok((builder, rest));
        }
        let edges = std::mem::take(&mut rest);
        let mut routes: HashMap<String, Routes> = HashMap::new();
        let mut order = Vec::new();
        for e in edges {
            let from = e.req("from")?.str()?.to_owned();
            if !guarded_from.contains(&from) {
                rest.push(e);
                continue;
            }
            e.check_keys(&["from", "to", "when"])?;
            let to = target(e.req("to")?.str()?);
            if !order.contains(&from) {
                order.push(from.clone());
            }
            let entry = routes.entry(from).or_default();
            match e.get("when") {
                Some(w) => entry.0.push((Guard::parse(&w)?, to)),
                None if entry.1.is_none() => entry.1 = Some(to),
                None => return Err(e.invalid("two unguarded edges from one node")),
            }
        }
        for from in order {
            let Some((guards, fallback)) = routes.remove(&from) else {
                continue;
            };
            let mut hints: Vec<Target> = guards.iter().map(|(_, t)| t.clone()).collect();
            hints.extend(fallback.clone());
            builder = builder.add_conditional_edge(
                from,
                move |s: &DynState| {
                    Ok(guards
                        .iter()
                        .find(|(g, _)| g.holds(s))
                        .map(|(_, t)| t.clone())
                        .or_else(|| fallback.clone())
                        .unwrap_or(END))
                },
                Some(hints),
            );
        }
        Ok((builder, rest))
    }
}
