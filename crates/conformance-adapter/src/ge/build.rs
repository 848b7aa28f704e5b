//! Spec: conformance-adapter §5.1–§5.4 — graph construction from fixture YAML.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use openarmature_graph::reducers::{json::field_key, Reducer};
use openarmature_graph::{
    timeout_from_secs, CompileError, CompiledGraph, DynSchema, DynState, FieldType, GraphBuilder,
    Middleware, Node, SubgraphNode, Target,
};
use serde_json::Value;

use super::harness::{
    FailSpec, FlakyMode, FlakyScript, Harness, IndexedFlaky, IndexedMode, OrderRecorder,
    ScriptedNode, Step,
};
use crate::shared::{if_field_edge, target};
use crate::yaml::Y;
use crate::AdapterError;

/// Keys every case that inlines its graph may carry (the harness, suspension and
/// observability runners' cases): its name and description, and the graph itself.
pub(crate) const INLINE_GRAPH_CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "state",
    "entry",
    "nodes",
    "edges",
    "subgraph",
    "subgraphs",
];

/// Keys a graph definition may carry.
pub(crate) const GRAPH_KEYS: &[&str] = &[
    "subgraph_with_idx",
    "state",
    "entry",
    "nodes",
    "edges",
    "subgraph",
    "subgraphs",
    "middleware",
];

/// Directives another suite's runner adds to graph definitions (the observability
/// runner's `emits_log`, `update_pure_from_state`, guarded `when:` edges).
pub(crate) trait Extension {
    /// Node keys [`Extension::wrap_node`] handles, accepted beside any node form.
    fn node_keys(&self) -> &'static [&'static str];
    /// Wraps a built node with the extension directives present in `spec`.
    fn wrap_node(
        &self,
        name: &str,
        spec: &Y<'_>,
        node: Arc<dyn Node<DynState>>,
    ) -> Result<Arc<dyn Node<DynState>>, AdapterError>;
    /// Adds the edges it understands; returns the rest for the base builder.
    fn edges<'y>(
        &self,
        builder: GraphBuilder<DynState>,
        edges: Vec<Y<'y>>,
    ) -> Result<(GraphBuilder<DynState>, Vec<Y<'y>>), AdapterError>;
    /// Node middleware for the extension's node keys in `spec` (innermost).
    fn node_middleware(
        &self,
        spec: &Y<'_>,
    ) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
        let _ = spec;
        Ok(Vec::new())
    }
    /// `fan_out:` keys [`Extension::instance_middleware`] handles.
    fn fan_out_keys(&self) -> &'static [&'static str] {
        &[]
    }
    /// Instance middleware for the extension's keys in a `fan_out:` block (innermost).
    fn instance_middleware(
        &self,
        fan_out: &Y<'_>,
    ) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
        let _ = fan_out;
        Ok(Vec::new())
    }
}

/// Compiles graphs of one case: the invoked graph and the named subgraphs it uses
/// (each compiled once, so observers attached to a subgraph see every use).
pub(crate) struct Builder<'a> {
    pub(crate) defs: HashMap<String, Y<'a>>,
    compiled: RefCell<HashMap<String, CompiledGraph<DynState>>>,
    in_progress: RefCell<Vec<String>>,
    pub(crate) harness: Arc<Harness>,
    /// Extra directives of another suite (none for graph-engine / pipeline-utilities).
    pub(crate) extension: Option<Arc<dyn Extension>>,
    /// Applied to the invoked graph's builder just before it compiles (the checkpoint
    /// runner registers its Checkpointer, schema version and migrations here).
    pub(crate) configure_outer: Option<OuterConfig>,
}

/// See [`Builder::configure_outer`].
pub(crate) type OuterConfig = Box<dyn Fn(GraphBuilder<DynState>) -> GraphBuilder<DynState>>;

/// A compile outcome: the graph, or the compile error the engine raised.
pub(crate) type Compiled = Result<CompiledGraph<DynState>, CompileError>;

impl<'a> Builder<'a> {
    pub(crate) fn new(harness: Arc<Harness>) -> Self {
        Builder {
            defs: HashMap::new(),
            compiled: RefCell::new(HashMap::new()),
            in_progress: RefCell::new(Vec::new()),
            harness,
            extension: None,
            configure_outer: None,
        }
    }

    /// `base` plus the extension's node keys.
    fn node_keys(&self, base: &[&'static str]) -> Vec<&'static str> {
        let mut keys = base.to_vec();
        if let Some(ext) = &self.extension {
            keys.extend_from_slice(ext.node_keys());
        }
        keys
    }

    /// Registers `subgraph: {name, ...}` / `subgraphs: {name: {...}}` found in `y`.
    pub(crate) fn collect_defs(&mut self, y: &Y<'a>) -> Result<(), AdapterError> {
        for key in ["subgraph", "subgraph_with_idx"] {
            if let Some(one) = y.get(key) {
                let name = one.req("name")?.str()?.to_owned();
                self.defs.insert(name, one);
            }
        }
        if let Some(many) = y.get("subgraphs") {
            for (name, def) in many.entries()? {
                self.defs.insert(name, def);
            }
        }
        Ok(())
    }

    /// A compiled subgraph by name (compiled on first use).
    pub(crate) fn subgraph(&self, name: &str, at: &Y<'a>) -> Result<Compiled, AdapterError> {
        if let Some(g) = self.compiled.borrow().get(name) {
            return Ok(Ok(g.clone()));
        }
        if self.in_progress.borrow().iter().any(|n| n == name) {
            return Err(at.invalid(format!("subgraph `{name}` references itself")));
        }
        let def = self
            .defs
            .get(name)
            .cloned()
            .ok_or_else(|| at.invalid(format!("unknown subgraph `{name}`")))?;
        def.check_keys(&[
            "name",
            "middleware",
            "state",
            "entry",
            "nodes",
            "edges",
            "subgraph",
            "subgraphs",
        ])?;
        self.in_progress.borrow_mut().push(name.to_owned());
        let result = self.graph(&def, false, &[]);
        self.in_progress.borrow_mut().retain(|n| n != name);
        let compiled = result?;
        if let Ok(g) = &compiled {
            self.compiled
                .borrow_mut()
                .insert(name.to_owned(), g.clone());
        }
        Ok(compiled)
    }

    /// Builds and compiles one graph definition. `extra_fields` are undeclared
    /// `initial_state` keys (adapter register: declared as `any`).
    pub(crate) fn graph(
        &self,
        g: &Y<'a>,
        outer: bool,
        extra_fields: &[String],
    ) -> Result<Compiled, AdapterError> {
        let schema = schema(&g.req("state")?, extra_fields)?;
        let errors = Arc::clone(&self.harness);
        let mut builder =
            GraphBuilder::new(schema.defaults()).on_observer_error(Arc::new(move |name, err| {
                super::harness::lock(&errors.observer_errors).push(format!("{name}: {err}"));
            }));
        if let Some(entry) = g.get("entry") {
            builder = builder.entry(entry.str()?);
        }
        if let Some(nodes) = g.get("nodes") {
            for (name, spec) in nodes.entries()? {
                let node = match self.node(&name, &spec)? {
                    Ok(node) => node,
                    Err(compile_error) => return Ok(Err(compile_error)),
                };
                let node = match &self.extension {
                    Some(ext) => ext.wrap_node(&name, &spec, node)?,
                    None => node,
                };
                let node: Arc<dyn Node<DynState>> = if outer {
                    Arc::new(OrderRecorder {
                        name: name.clone(),
                        inner: node,
                        harness: Arc::clone(&self.harness),
                    })
                } else {
                    node
                };
                builder = builder.add_shared_node(name.clone(), node);
                if let Some(list) = spec.get("middleware") {
                    for m in super::middleware::chain(&list, &self.harness)? {
                        builder = builder.node_middleware(&name, m);
                    }
                }
                if let Some(ext) = &self.extension {
                    for m in ext.node_middleware(&spec)? {
                        builder = builder.node_middleware(&name, m);
                    }
                }
            }
        }
        if let Some(mw) = g.get("middleware") {
            mw.check_keys(&["per_node", "per_graph"])?;
            if let Some(list) = mw.get("per_graph") {
                for m in super::middleware::chain(&list, &self.harness)? {
                    builder = builder.graph_middleware(m);
                }
            }
            if let Some(per_node) = mw.get("per_node") {
                for (node, list) in per_node.entries()? {
                    for m in super::middleware::chain(&list, &self.harness)? {
                        builder = builder.node_middleware(&node, m);
                    }
                }
            }
        }
        let mut edges = g
            .get("edges")
            .map(|e| e.seq())
            .transpose()?
            .unwrap_or_default();
        if let Some(ext) = &self.extension {
            (builder, edges) = ext.edges(builder, edges)?;
        }
        for edge in edges {
            builder = add_edge(builder, &edge)?;
        }
        if let (true, Some(configure)) = (outer, &self.configure_outer) {
            builder = configure(builder);
        }
        Ok(builder.compile())
    }

    fn node(
        &self,
        name: &str,
        spec: &Y<'a>,
    ) -> Result<Result<Arc<dyn Node<DynState>>, CompileError>, AdapterError> {
        if let Some(sub) = spec.get("subgraph") {
            spec.check_keys(&self.node_keys(&[
                "subgraph",
                "inputs",
                "outputs",
                "projects_in",
                "projects_out",
                "middleware",
            ]))?;
            let graph = match self.subgraph(sub.str()?, &sub)? {
                Ok(g) => g,
                Err(e) => return Ok(Err(e)),
            };
            let mut node = SubgraphNode::<DynState, DynState>::new(graph);
            if let Some(inputs) = spec.get("inputs") {
                node = node.inputs(string_pairs(&inputs)?);
            }
            if let Some(outputs) = spec.get("outputs") {
                node = node.outputs(string_pairs(&outputs)?);
            }
            if let Some(set) = spec.get("projects_in") {
                node = node.projects_in(set.strings()?);
            }
            if let Some(set) = spec.get("projects_out") {
                node = node.projects_out(set.strings()?);
            }
            return Ok(Ok(Arc::new(node)));
        }
        if let Some(fan_out) = spec.get("fan_out") {
            spec.check_keys(&self.node_keys(&["fan_out", "middleware"]))?;
            return self.fan_out(&fan_out);
        }
        if let Some(branches) = spec.get("parallel_branches") {
            spec.check_keys(&self.node_keys(&["parallel_branches", "middleware"]))?;
            return self.parallel_branches(name, &branches);
        }
        let node: Arc<dyn Node<DynState>> = self.scripted(name, spec)?;
        Ok(Ok(node))
    }

    /// A node made of scripted §5.1 behaviours, run in document order.
    pub(crate) fn scripted(
        &self,
        name: &str,
        spec: &Y<'a>,
    ) -> Result<Arc<ScriptedNode>, AdapterError> {
        let mut steps = Vec::new();
        let error_category = match spec.get("error_category") {
            Some(c) if !c.is_null() => Some(c.str()?.to_owned()),
            _ => None,
        };
        for (key, y) in spec.entries()? {
            steps.push(match key.as_str() {
                "middleware" | "error_category" => continue,
                k if self
                    .extension
                    .as_ref()
                    .is_some_and(|e| e.node_keys().contains(&k)) =>
                {
                    continue
                }
                "flaky" => Step::Flaky(Arc::new(flaky(&y)?)),
                "flaky_resume_aware" => {
                    Step::Flaky(Arc::new(super::checkpoint::flaky_resume_aware(&y)?))
                }
                "sleep_ms" => Step::Sleep(std::time::Duration::from_millis(
                    u64::try_from(y.i64()?).map_err(|_| y.invalid("sleep_ms must be ≥ 0"))?,
                )),
                "flaky_by_index" | "flaky_instance_only" => {
                    Step::Indexed(Arc::new(indexed_flaky(&y)?))
                }
                "flaky_per_index" => Step::Indexed(Arc::new(per_index_flaky(&y)?)),
                "update" => Step::Update(json_pairs(&y)?),
                "update_pure" => Step::UpdatePure(json_pairs(&y)?),
                "update_from_field" => {
                    let mut writes = Vec::new();
                    let mut multiplier = Value::from(1);
                    for (k, v) in y.entries()? {
                        if k == "multiplier" {
                            multiplier = v.json()?;
                        } else {
                            writes.push((k, v.str()?.to_owned()));
                        }
                    }
                    Step::UpdateFromField { writes, multiplier }
                }
                "raises" => {
                    let message = if y.value.is_mapping() {
                        y.check_keys(&["message", "exception_kind"])?;
                        y.req("message")?.str()?.to_owned()
                    } else {
                        y.str()?.to_owned()
                    };
                    Step::Raise(message, error_category.clone())
                }
                "invoke_drain_events_for" => {
                    y.check_keys(&["timeout_seconds", "snapshot_observer"])?;
                    let timeout = match y.get("timeout_seconds") {
                        Some(t) if !t.is_null() => Some(
                            timeout_from_secs(t.f64()?).map_err(|e| t.invalid(e.to_string()))?,
                        ),
                        _ => None,
                    };
                    let snapshot_observer = y
                        .get("snapshot_observer")
                        .map(|o| o.str().map(str::to_owned))
                        .transpose()?;
                    Step::DrainEventsFor {
                        timeout,
                        snapshot_observer,
                    }
                }
                _ => {
                    return Err(AdapterError::DirectiveUnknown {
                        file: y.file.to_path_buf(),
                        directive: key,
                        location: y.location().to_owned(),
                    })
                }
            });
        }
        Ok(Arc::new(ScriptedNode {
            name: name.to_owned(),
            steps,
            harness: Arc::clone(&self.harness),
        }))
    }
}

fn string_pairs(y: &Y<'_>) -> Result<Vec<(String, String)>, AdapterError> {
    y.entries()?
        .into_iter()
        .map(|(k, v)| Ok((k, v.str()?.to_owned())))
        .collect()
}

pub(crate) fn json_pairs(y: &Y<'_>) -> Result<Vec<(String, Value)>, AdapterError> {
    y.entries()?
        .into_iter()
        .map(|(k, v)| Ok((k, v.json()?)))
        .collect()
}

fn value_target(v: &Value) -> Result<Target, openarmature_graph::BoxError> {
    match v {
        Value::String(s) => Ok(target(s)),
        other => Err(format!("edge function produced a non-string destination {other}").into()),
    }
}

fn add_edge(
    b: GraphBuilder<DynState>,
    edge: &Y<'_>,
) -> Result<GraphBuilder<DynState>, AdapterError> {
    edge.check_keys(&["from", "to", "condition"])?;
    let from = edge.req("from")?.str()?.to_owned();
    let to = edge.get("to").map(|t| t.str().map(target)).transpose()?;
    let Some(cond) = edge.get("condition") else {
        let to = to.ok_or_else(|| edge.invalid("an edge needs `to` or `condition`"))?;
        return Ok(b.add_edge(from, to));
    };
    if let Some(callable) = cond.get("callable") {
        let hints = to.map(|t| vec![t]);
        return match callable.str()? {
            "state_field_read" => {
                cond.check_keys(&["callable", "field"])?;
                let field = cond.req("field")?.str()?.to_owned();
                Ok(b.add_conditional_edge(
                    from,
                    move |s: &DynState| value_target(s.get(&field).unwrap_or(&Value::Null)),
                    hints,
                ))
            }
            "edge_raises" => {
                cond.check_keys(&["callable", "message"])?;
                let message = cond.req("message")?.str()?.to_owned();
                Ok(b.add_conditional_edge(
                    from,
                    move |_: &DynState| Err(message.clone().into()),
                    hints,
                ))
            }
            other => Err(AdapterError::DirectiveUnknown {
                file: callable.file.to_path_buf(),
                directive: format!("callable: {other}"),
                location: callable.location().to_owned(),
            }),
        };
    }
    if_field_edge(b, from, &cond, true)
}

/// `state.fields.<f>: {type, default | required, reducer, alt_reducer}`; a
/// `schema_version` is read by the checkpoint runner (outermost graph only).
fn schema(state: &Y<'_>, extra_fields: &[String]) -> Result<Arc<DynSchema>, AdapterError> {
    state.check_keys(&["fields", "schema_version"])?;
    let mut b = DynSchema::builder();
    let fields = state.req("fields")?;
    let mut declared = Vec::new();
    for (name, spec) in fields.entries()? {
        spec.check_keys(&["type", "default", "required", "reducer", "alt_reducer"])?;
        let ty_y = spec.req("type")?;
        let ty = FieldType::parse(ty_y.str()?).map_err(|m| ty_y.invalid(m))?;
        let required = spec.get("required").map(|r| r.bool()).transpose()?;
        let default = match spec.get("default") {
            Some(d) if required == Some(true) => {
                return Err(d.invalid("a required field has no default"))
            }
            // Adapter register R9: a required field's default is null, which its
            // type rejects, so a state that never sets it fails validation.
            None if required == Some(true) => Value::Null,
            Some(d) => {
                let value = d.json()?;
                if !ty.accepts(&value) {
                    return Err(d.invalid(format!("default {value} does not match type {:?}", ty)));
                }
                value
            }
            None => zero_value(&ty),
        };
        b = b.field(name.clone(), ty, default);
        for key in ["reducer", "alt_reducer"] {
            if let Some(r) = spec.get(key) {
                b = b.reducer_result(&name, reducer(&r)?);
            }
        }
        declared.push(name);
    }
    for extra in extra_fields {
        if !declared.contains(extra) {
            // Adapter register R1 (GE 020): undeclared initial_state keys are
            // declared as `any` fields with a null default.
            b = b.field(extra.clone(), FieldType::Any, Value::Null);
        }
    }
    Ok(b.build())
}

pub(crate) fn zero_value(ty: &FieldType) -> Value {
    match ty {
        FieldType::String => Value::from(""),
        FieldType::Int => Value::from(0),
        FieldType::Float => Value::from(0.0),
        FieldType::Bool => Value::from(false),
        FieldType::List(_) => Value::Array(Vec::new()),
        FieldType::Dict(_) => Value::Object(serde_json::Map::new()),
        _ => Value::Null,
    }
}

/// A reducer spelling: a name, or a factory map `{bounded_append: {max_len: 3}}`.
fn reducer(y: &Y<'_>) -> Result<Result<Reducer, CompileError>, AdapterError> {
    if let Ok(name) = y.str() {
        return Reducer::by_name(name)
            .map(Ok)
            .ok_or_else(|| AdapterError::DirectiveUnknown {
                file: y.file.to_path_buf(),
                directive: format!("reducer: {name}"),
                location: y.location().to_owned(),
            });
    }
    let entries = y.entries()?;
    let [(factory, args)] = entries.as_slice() else {
        return Err(y.invalid("a reducer factory is a single-key mapping"));
    };
    let key_of = |args: &Y<'_>| -> Result<Option<String>, AdapterError> {
        match args.get("key") {
            Some(k) if !k.is_null() => Ok(Some(k.str()?.to_owned())),
            _ => Ok(None),
        }
    };
    Ok(match factory.as_str() {
        "bounded_append" => {
            args.check_keys(&["max_len"])?;
            Reducer::bounded_append(args.req("max_len")?.i64()?)
        }
        "dedupe_append" => {
            args.check_keys(&["key"])?;
            Ok(Reducer::DedupeAppend {
                key: key_of(args)?.map(field_key),
            })
        }
        "merge_by_key" => {
            args.check_keys(&["key"])?;
            Reducer::merge_by_key(key_of(args)?.map(field_key))
        }
        other => {
            return Err(AdapterError::DirectiveUnknown {
                file: y.file.to_path_buf(),
                directive: format!("reducer factory: {other}"),
                location: y.location().to_owned(),
            })
        }
    })
}

/// One `failure_sequence` entry (or the compact spellings): category absent means
/// `provider_unavailable`, an explicit null means uncategorised.
fn fail_spec(y: &Y<'_>, default_message: &str) -> Result<FailSpec, AdapterError> {
    y.check_keys(&["transient", "category", "message", "cause"])?;
    let category = match y.get("category") {
        None => Some("provider_unavailable".to_owned()),
        Some(c) if c.is_null() => None,
        Some(c) => Some(c.str()?.to_owned()),
    };
    let message = match y.get("message") {
        Some(m) => m.str()?.to_owned(),
        None => default_message.to_owned(),
    };
    let transient = y
        .get("transient")
        .map(|t| t.bool())
        .transpose()?
        .unwrap_or(false);
    let cause = match y.get("cause") {
        Some(c) if !c.is_null() => Some(Box::new(fail_spec(&c, "cause")?)),
        _ => None,
    };
    Ok(FailSpec {
        category,
        message,
        transient,
        cause,
    })
}

/// `flaky: {failure_sequence, success_update}` | `{fail_first_invocation_only,
/// on_success}` | `{fail_count, category, on_success}`.
fn flaky(y: &Y<'_>) -> Result<FlakyScript, AdapterError> {
    y.check_keys(&[
        "failure_sequence",
        "success_update",
        "fail_first_invocation_only",
        "on_success",
        "fail_count",
        "category",
        "message",
    ])?;
    let success = match y.get("success_update").or_else(|| y.get("on_success")) {
        Some(u) if !u.is_null() => json_pairs(&u)?,
        _ => Vec::new(),
    };
    let mode = if let Some(seq) = y.get("failure_sequence") {
        let mut entries = Vec::new();
        for entry in seq.seq()? {
            entries.push(if entry.is_null() {
                None
            } else {
                Some(fail_spec(&entry, "flaky failure")?)
            });
        }
        FlakyMode::Sequence(entries)
    } else if let Some(n) = y.get("fail_count") {
        let count = usize::try_from(n.i64()?).map_err(|_| n.invalid("fail_count must be ≥ 0"))?;
        let (category, message) = failure_of(y, "flaky failure")?;
        let spec = FailSpec {
            category,
            message,
            transient: true,
            cause: None,
        };
        FlakyMode::Sequence(vec![Some(spec); count])
    } else if let Some(flag) = y.get("fail_first_invocation_only") {
        if !flag.bool()? {
            return Err(flag.invalid("fail_first_invocation_only must be true when present"));
        }
        FlakyMode::FirstInvocation(FailSpec {
            category: Some("node_exception".into()),
            message: "first invocation fails".into(),
            transient: false,
            cause: None,
        })
    } else {
        return Err(
            y.invalid("flaky needs failure_sequence, fail_count or fail_first_invocation_only")
        );
    };
    Ok(FlakyScript::new(mode, success))
}

/// A scripted failure's `category` (`provider_unavailable` when absent, none when
/// null) and `message` (`default` when absent).
fn failure_of(y: &Y<'_>, default: &str) -> Result<(Option<String>, String), AdapterError> {
    let category = match y.get("category") {
        None => Some("provider_unavailable".to_owned()),
        Some(c) if c.is_null() => None,
        Some(c) => Some(c.str()?.to_owned()),
    };
    let message = y
        .get("message")
        .map(|m| m.str().map(str::to_owned))
        .transpose()?
        .unwrap_or_else(|| default.to_owned());
    Ok((category, message))
}

/// `flaky_by_index: {fail_when_idx | fail_count_per_idx, category?, success_compute}`
/// and `flaky_instance_only: {fail_count_per_instance, category, success_compute}`.
fn indexed_flaky(y: &Y<'_>) -> Result<IndexedFlaky, AdapterError> {
    y.check_keys(&[
        "fail_when_idx",
        "fail_count_per_idx",
        "fail_count_per_instance",
        "category",
        "message",
        "success_compute",
    ])?;
    let count = |k: &str| -> Result<Option<usize>, AdapterError> {
        y.get(k)
            .map(|n| usize::try_from(n.i64()?).map_err(|_| n.invalid("must be ≥ 0")))
            .transpose()
    };
    let mode = if let Some(v) = y.get("fail_when_idx") {
        IndexedMode::WhenIdx(v.json()?)
    } else if let Some(n) = count("fail_count_per_idx")?.or(count("fail_count_per_instance")?) {
        IndexedMode::FirstCallsPerInstance(n)
    } else {
        return Err(y.invalid("needs fail_when_idx, fail_count_per_idx or fail_count_per_instance"));
    };
    let (category, message) = failure_of(y, "instance failure")?;
    indexed(y, mode, category, message)
}

/// The indexed flaky node of `mode`, failing (transiently) with `category` and
/// `message`, its successes computing `y`'s `success_compute`.
fn indexed(
    y: &Y<'_>,
    mode: IndexedMode,
    category: Option<String>,
    message: String,
) -> Result<IndexedFlaky, AdapterError> {
    let success = match y.get("success_compute") {
        Some(u) if !u.is_null() => json_pairs(&u)?,
        _ => Vec::new(),
    };
    Ok(IndexedFlaky {
        mode,
        failure: FailSpec {
            category,
            message,
            transient: true,
            cause: None,
        },
        success,
        calls: std::sync::Mutex::new(std::collections::HashMap::new()),
        first_invocation: std::sync::Mutex::new(None),
    })
}

/// `flaky_per_index: {fail_first_run_indices | always_fail_indices, success_compute}`
/// (pipeline-utilities 048-054): the listed fan-out instances raise an uncategorised
/// (transient) error in the first invocation reaching the node, or always.
fn per_index_flaky(y: &Y<'_>) -> Result<IndexedFlaky, AdapterError> {
    y.check_keys(&[
        "fail_first_run_indices",
        "always_fail_indices",
        "success_compute",
    ])?;
    let indices = |l: Y<'_>| -> Result<Vec<usize>, AdapterError> {
        l.seq()?
            .iter()
            .map(|n| usize::try_from(n.i64()?).map_err(|_| n.invalid("must be ≥ 0")))
            .collect()
    };
    let mode = match (
        y.get("fail_first_run_indices"),
        y.get("always_fail_indices"),
    ) {
        (Some(l), None) => IndexedMode::FirstRunIndices(indices(l)?),
        (None, Some(l)) => IndexedMode::AlwaysIndices(indices(l)?),
        _ => return Err(y.invalid("needs one of fail_first_run_indices / always_fail_indices")),
    };
    indexed(y, mode, None, "flaky_per_index failure".into())
}
