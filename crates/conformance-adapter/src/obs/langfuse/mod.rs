//! Spec: observability §8 (the Langfuse mapping) and conformance-adapter §6.4 (the
//! Langfuse recorder) — the Langfuse side of the observability runner.
//!
//! A case gets a [`LangfuseObserver`] when it configures one (`langfuse_observer`,
//! `langfuse_observer_config`, `langfuse_client`) or expects Langfuse traces. The
//! observer's own in-memory trace store is the recorder; it is attached to every
//! invocation beside the OTel observer and configured with the same detached units.
//! Register O16 (REGISTER.md): `trace_input_from_state` / `trace_output_from_state`
//! name harness hooks (`returns_job_input_summary`, `returns_job_output_summary`,
//! `returns_null`, `returns_state_snapshot`); `langfuse_client: {mode: credentials}`
//! builds the observer's ingestion client against a 127.0.0.1 mock of the Langfuse
//! ingestion API, `{mode: supplied, provider}` hands it the provider-faithful fake
//! client ([`client`]).

pub(crate) mod client;
pub(crate) mod expect;
pub(crate) mod invariants;
mod nested_invariants;
mod session_invariants;
mod stream_invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
pub(crate) use nested_invariants::TABLE_NAMES as NESTED_INVARIANT_NAMES;
pub(crate) use session_invariants::TABLE_NAMES as SESSION_INVARIANT_NAMES;
pub(crate) use stream_invariants::TABLE_NAMES as STREAM_INVARIANT_NAMES;

use openarmature_observability::langfuse::{
    LangfuseCredentials, LangfuseObserver, LangfuseObserverBuilder,
};
use serde_json::{json, Value};

use crate::failure::{Check, Failure};
use crate::yaml::Y;

/// Case keys of the Langfuse runner.
pub(crate) const CASE_KEYS: &[&str] = &[
    "langfuse_observer",
    "langfuse_observer_config",
    "langfuse_client",
    "caller_invocation_label",
];

const OBSERVER_KEYS: &[&str] = &[
    "disable_llm_spans",
    "disable_provider_payload",
    "disable_state_payload",
    "payload_byte_cap",
    "trace_input_from_state",
    "trace_output_from_state",
];

/// Whether the case runs a Langfuse observer.
pub(crate) fn wanted(case: &Y<'_>) -> bool {
    CASE_KEYS.iter().any(|k| case.get(k).is_some())
        || case.get("expected").is_some_and(|e| {
            e.get("langfuse_trace").is_some() || e.get("langfuse_traces").is_some()
        })
}

/// A harness trace hook.
pub(crate) type Hook = fn(&dyn openarmature_graph::StateView) -> Option<Value>;

/// The harness hook named by `y`.
pub(crate) fn hook(y: &Y<'_>) -> Check<Hook> {
    Ok(match y.str()? {
        "returns_job_input_summary" => |_| Some(json!({"summary": "job-input"})),
        "returns_job_output_summary" => |_| Some(json!({"summary": "job-output"})),
        "returns_null" => |_| None,
        "returns_state_snapshot" => |s| Some(s.to_json()),
        other => {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: trace hook `{other}`"
            )))
        }
    })
}

/// Fan-out nodes and the subgraph identity their instances run.
fn fan_out_subgraphs(defs: &[Y<'_>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for g in defs {
        for (name, spec) in g
            .get("nodes")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            let Some(f) = spec.get("fan_out") else {
                continue;
            };
            let id = f.get("subgraph").or_else(|| f.get("inner_subgraph"));
            if let Some(id) = id.and_then(|s| s.str().ok()) {
                out.push((name, id.to_owned()));
            }
        }
        for (_, inner) in g
            .get("inner_subgraphs")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            out.extend(fan_out_subgraphs(&[inner]));
        }
    }
    out
}

/// Builds the case's Langfuse observer: detached units and subgraph identities as the
/// OTel observer has them (`sub_nodes`: node → identity; `detached`: the node names).
pub(crate) fn observer(
    case: &Y<'_>,
    sub_nodes: &[(String, String)],
    detached_subgraph_nodes: &[String],
    detached_fan_outs: &[String],
    client: Option<&client::ClientMode>,
    defs: &[Y<'_>],
) -> Check<LangfuseObserver> {
    let mut b = LangfuseObserverBuilder::new();
    for (node, identity) in fan_out_subgraphs(defs) {
        b = b.fan_out_subgraph(node, identity);
    }
    for (node, identity) in sub_nodes {
        b = b.subgraph_name(node, identity);
    }
    for n in detached_subgraph_nodes {
        b = b.detach_subgraph(n);
    }
    for n in detached_fan_outs {
        b = b.detach_fan_out(n);
    }
    // A case-level payload flag configures every observer of the case (098); a
    // Langfuse-specific block below overrides it.
    if let Some(flag) = case.get("disable_provider_payload") {
        b = b.disable_provider_payload(flag.bool()?);
    }
    for key in ["langfuse_observer", "langfuse_observer_config"] {
        let Some(block) = case.get(key) else {
            continue;
        };
        block.check_keys(OBSERVER_KEYS)?;
        for (k, v) in block.entries()? {
            b = match k.as_str() {
                "disable_llm_spans" => b.disable_llm_spans(v.bool()?),
                "disable_provider_payload" => b.disable_provider_payload(v.bool()?),
                "disable_state_payload" => b.disable_state_payload(v.bool()?),
                "payload_byte_cap" => {
                    let n = usize::try_from(v.i64()?).map_err(|_| {
                        Failure::from(v.invalid("payload_byte_cap must be positive"))
                    })?;
                    b.payload_byte_cap(n).map_err(Failure::setup)?
                }
                "trace_input_from_state" => b.trace_input_from_state(hook(&v)?),
                _ => b.trace_output_from_state(hook(&v)?),
            };
        }
    }
    match client {
        Some(client::ClientMode::Supplied(fake)) => b = b.client(fake.clone()),
        Some(client::ClientMode::Credentials(mock)) => {
            let creds = LangfuseCredentials::new(mock.host(), "pk-lf-test", "sk-lf-test");
            b = b.credentials(creds).map_err(Failure::setup)?;
        }
        None => {}
    }
    Ok(b.build())
}
