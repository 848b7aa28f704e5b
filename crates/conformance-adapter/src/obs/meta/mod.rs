//! Spec: observability §3.4 (mid-invocation metadata: `set_invocation_metadata` /
//! `get_invocation_metadata`, per-context and per-attempt scoping) and §9 (queryable
//! observers), conformance-adapter §8.3 (sibling directives run in document order) —
//! the harness directives of observability fixtures 028, 043–049 and 135.
//!
//! Node directives, run at the top of the node body in document order, through the
//! ambient helpers (so the task-local context is what is exercised):
//!
//! - `augment_metadata: {k: v}` → `set_invocation_metadata`; a rejection fails the
//!   node with the `MetadataError` as its cause;
//! - `capture_invocation_metadata_into: field` → `get_invocation_metadata()` into the
//!   field;
//! - `capture_queryable_observer_read_into: {observer_name, method, state_field}`,
//!   `then_drop_for_current_invocation: {observer_name}`,
//!   `then_assert_bucket_absent_into: field` (see [`queryable`]);
//! - `per_attempt_behavior: [{attempt, <directives>, raises | succeeds}]` with
//!   `retry_middleware: {max_attempts, classifier: transient_marker}` (a
//!   `raises: <name>` error has category `<name>`; `transient_marker` retries
//!   `transient_marker_error`);
//! - `noop: true`.
//!
//! Fan-out `augment_metadata_from_field: {key: item_field}` is an instance middleware
//! that augments each instance's copy from its item before the instance runs.
//!
//! Register O11 (REGISTER.md): a queryable-observer read first waits for the
//! delivery of every event the invocation emitted so far (`NodeCtx::drain_events`,
//! the §9.2 stability gate), so the read value is deterministic; 049's
//! `captured_bucket_is_non_empty` depends on it. An inner-subgraph node's
//! `capture_invocation_metadata_into: f` (044) makes `f` the fan-out's collect and
//! target field (see `llm_desugar`).

pub(crate) mod checks;
pub(crate) mod expect;
mod middleware;
pub(crate) mod query_checks;
pub(crate) mod queryable;

use std::sync::{Arc, Mutex};

use openarmature_graph::{
    get_invocation_metadata, set_invocation_metadata, CategorizedError, DynState, DynUpdate,
    InvocationMetadata, Node, NodeCtx, NodeError,
};
use serde_json::{Map, Value};

pub(crate) use self::middleware::{instance_middleware, node_middleware};
use self::queryable::Queryable;
use crate::shared::{lock, Around, AroundNode};
use crate::yaml::Y;
use crate::AdapterError;

/// Node keys handled here.
pub(crate) const NODE_KEYS: &[&str] = &[
    "augment_metadata",
    "capture_invocation_metadata_into",
    "capture_queryable_observer_read_into",
    "then_drop_for_current_invocation",
    "then_assert_bucket_absent_into",
    "per_attempt_behavior",
    "retry_middleware",
    "noop",
];

/// Fan-out keys handled here.
pub(crate) const FAN_OUT_KEYS: &[&str] = &["augment_metadata_from_field"];

/// Where a directive ran.
#[derive(Debug, Clone)]
pub(crate) struct Site {
    pub(crate) invocation_id: String,
    pub(crate) node: String,
    pub(crate) attempt: u32,
    pub(crate) fan_out_index: Option<usize>,
}

impl Site {
    fn of(node: &str, ctx: &NodeCtx) -> Site {
        Site {
            invocation_id: ctx.invocation_id().to_owned(),
            node: node.to_owned(),
            attempt: ctx.attempt_index(),
            fan_out_index: ctx.fan_out_index(),
        }
    }
}

/// What the directives did, in execution order.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    /// A `set_invocation_metadata` call; `rejected` is the error's category.
    Augment {
        site: Site,
        entries: Map<String, Value>,
        rejected: Option<String>,
    },
    /// A `get_invocation_metadata()` read.
    Capture {
        site: Site,
        field: String,
        read: InvocationMetadata,
    },
    /// A queryable-observer read.
    Query { site: Site, value: Value },
    /// An explicit bucket drop.
    Drop { site: Site },
    /// A bucket-absence check after a drop.
    Absent { site: Site, absent: bool },
}

/// Per-case state of these directives.
#[derive(Default)]
pub(crate) struct MetaHarness {
    pub(crate) log: Mutex<Vec<Record>>,
    pub(crate) observers: Vec<Arc<Queryable>>,
    /// Each invocation's final state (`None` when it did not complete).
    pub(crate) finals: Mutex<Vec<Option<Value>>>,
    /// `sequential_invocations` (049): `(name, caller invocation id)` per invocation.
    pub(crate) sequence: Vec<(String, String)>,
}

impl MetaHarness {
    /// The case's (or, for 049, the file's) `queryable_observers`.
    pub(crate) fn from_case(doc: &Y<'_>, case: &Y<'_>) -> Result<MetaHarness, AdapterError> {
        let mut observers = Vec::new();
        for holder in [doc, case] {
            if let Some(list) = holder.get("queryable_observers") {
                for o in list.seq()? {
                    observers.push(Arc::new(Queryable::parse(&o)?));
                }
            }
            if std::ptr::eq(doc.value, case.value) {
                break;
            }
        }
        let mut sequence = Vec::new();
        if let Some(seq) = doc.get("sequential_invocations") {
            seq.check_keys(&["observer_persists_across", "invocations"])?;
            for inv in seq.req("invocations")?.seq()? {
                inv.check_keys(&["name", "caller_invocation_id"])?;
                sequence.push((
                    inv.req("name")?.str()?.to_owned(),
                    inv.req("caller_invocation_id")?.str()?.to_owned(),
                ));
            }
        }
        Ok(MetaHarness {
            observers,
            sequence,
            ..MetaHarness::default()
        })
    }

    /// The observer `name` (the error is a node error's message: a node body asks).
    fn observer(&self, name: &str) -> Result<&Arc<Queryable>, String> {
        self.observers
            .iter()
            .find(|o| o.name == name)
            .ok_or_else(|| format!("no queryable observer named `{name}`"))
    }

    pub(crate) fn records(&self) -> Vec<Record> {
        lock(&self.log).clone()
    }

    fn record(&self, r: Record) {
        lock(&self.log).push(r);
    }
}

/// One directive.
#[derive(Debug, Clone)]
enum Step {
    Augment(Map<String, Value>),
    Capture(String),
    Query {
        observer: String,
        method: String,
        field: String,
    },
    DropBucket(String),
    AssertAbsent {
        observer: String,
        field: String,
    },
    Raise(String),
}

fn steps(spec: &Y<'_>, in_attempt: bool) -> Result<Vec<Step>, AdapterError> {
    let mut out = Vec::new();
    let mut last_observer: Option<String> = None;
    for (key, y) in spec.entries()? {
        out.push(match key.as_str() {
            "augment_metadata" => Step::Augment(object(&y)?),
            "capture_invocation_metadata_into" => Step::Capture(y.str()?.to_owned()),
            "capture_queryable_observer_read_into" => {
                y.check_keys(&["observer_name", "method", "state_field"])?;
                let observer = y.req("observer_name")?.str()?.to_owned();
                last_observer = Some(observer.clone());
                Step::Query {
                    observer,
                    method: y.req("method")?.str()?.to_owned(),
                    field: y.req("state_field")?.str()?.to_owned(),
                }
            }
            "then_drop_for_current_invocation" => {
                y.check_keys(&["observer_name"])?;
                let observer = y.req("observer_name")?.str()?.to_owned();
                last_observer = Some(observer.clone());
                Step::DropBucket(observer)
            }
            "then_assert_bucket_absent_into" => Step::AssertAbsent {
                observer: last_observer
                    .clone()
                    .ok_or_else(|| y.invalid("needs an observer named earlier in the node"))?,
                field: y.str()?.to_owned(),
            },
            "raises" if in_attempt => Step::Raise(y.str()?.to_owned()),
            // Other directives of the node (or `attempt` / `succeeds`).
            _ => continue,
        });
    }
    Ok(out)
}

fn object(y: &Y<'_>) -> Result<Map<String, Value>, AdapterError> {
    match y.json()? {
        Value::Object(m) => Ok(m),
        _ => Err(y.invalid("expected a mapping")),
    }
}

/// A node running the directives of [`NODE_KEYS`] before its scripted body.
struct MetaNode {
    name: String,
    inner: Arc<dyn Node<DynState>>,
    steps: Vec<Step>,
    per_attempt: Vec<(u32, Vec<Step>)>,
    harness: Arc<MetaHarness>,
}

/// Wraps `node` when `spec` carries any of [`NODE_KEYS`].
pub(crate) fn wrap(
    name: &str,
    spec: &Y<'_>,
    node: Arc<dyn Node<DynState>>,
    harness: &Arc<MetaHarness>,
) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
    if !NODE_KEYS.iter().any(|k| spec.get(k).is_some()) {
        return Ok(node);
    }
    if let Some(flag) = spec.get("noop") {
        if !flag.bool()? {
            return Err(flag.invalid("noop must be true when present"));
        }
    }
    let mut per_attempt = Vec::new();
    if let Some(list) = spec.get("per_attempt_behavior") {
        for entry in list.seq()? {
            entry.check_keys(&[
                "attempt",
                "augment_metadata",
                "capture_invocation_metadata_into",
                "raises",
                "succeeds",
            ])?;
            let attempt = u32::try_from(entry.req("attempt")?.i64()?)
                .map_err(|_| entry.invalid("attempt must be ≥ 0"))?;
            per_attempt.push((attempt, steps(&entry, true)?));
        }
    }
    Ok(Around::node(MetaNode {
        name: name.to_owned(),
        inner: node,
        steps: steps(spec, false)?,
        per_attempt,
        harness: Arc::clone(harness),
    }))
}

impl MetaNode {
    async fn run_steps(
        &self,
        steps: &[Step],
        ctx: &NodeCtx,
        writes: &mut Vec<(String, Value)>,
    ) -> Result<(), NodeError> {
        let h = &self.harness;
        let site = || Site::of(&self.name, ctx);
        for step in steps {
            match step {
                Step::Augment(entries) => {
                    let result = set_invocation_metadata(entries.clone());
                    h.record(Record::Augment {
                        site: site(),
                        entries: entries.clone(),
                        rejected: result.as_ref().err().map(|e| e.category().to_owned()),
                    });
                    result?;
                }
                Step::Capture(field) => {
                    let read = get_invocation_metadata();
                    writes.push((field.clone(), Value::from(read.clone())));
                    h.record(Record::Capture {
                        site: site(),
                        field: field.clone(),
                        read,
                    });
                }
                Step::Query {
                    observer,
                    method,
                    field,
                } => {
                    // Register O11: gate the read on the delivery of what was emitted.
                    ctx.drain_events(None).await;
                    let value = h.observer(observer)?.read(method, ctx.invocation_id())?;
                    writes.push((field.clone(), value.clone()));
                    h.record(Record::Query {
                        site: site(),
                        value,
                    });
                }
                Step::DropBucket(observer) => {
                    h.observer(observer)?.drop_bucket(ctx.invocation_id());
                    h.record(Record::Drop { site: site() });
                }
                Step::AssertAbsent { observer, field } => {
                    let absent = !h.observer(observer)?.has_bucket(ctx.invocation_id());
                    writes.push((field.clone(), Value::Bool(absent)));
                    h.record(Record::Absent {
                        site: site(),
                        absent,
                    });
                }
                Step::Raise(name) => {
                    let message = format!("{name} raised by attempt {}", ctx.attempt_index());
                    let err = CategorizedError::new(
                        openarmature_graph::Category::from_name(name),
                        message,
                    )
                    .transient(true);
                    return Err(err.into());
                }
            }
        }
        Ok(())
    }
}

impl AroundNode for MetaNode {
    fn inner(&self) -> &Arc<dyn Node<DynState>> {
        &self.inner
    }

    async fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> Result<DynUpdate, NodeError> {
        let mut writes = Vec::new();
        self.run_steps(&self.steps, &ctx, &mut writes).await?;
        if !self.per_attempt.is_empty() {
            let attempt = ctx.attempt_index();
            let steps = self
                .per_attempt
                .iter()
                .find(|(a, _)| *a == attempt)
                .map(|(_, s)| s.as_slice())
                .ok_or_else(|| format!("per_attempt_behavior has no attempt {attempt}"))?;
            self.run_steps(steps, &ctx, &mut writes).await?;
        }
        let mut update = self.inner.run(state, ctx).await?;
        writes.append(&mut update.fields);
        update.fields = writes;
        Ok(update)
    }
}
