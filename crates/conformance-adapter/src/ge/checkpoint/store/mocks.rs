//! Spec: conformance-adapter §5.6 / §6.2 — the state-migration mocks of the
//! pipeline-utilities §10.12 fixtures (and the sessions §7 ones), and the `flaky_resume_aware` node script.

use std::sync::{Arc, Mutex};

use openarmature_graph::BoxError;
use serde_json::{json, Value};

use crate::ge::harness::{lock, FailSpec, FlakyMode, FlakyScript};
use crate::yaml::Y;
use crate::AdapterError;

/// What the migration mocks did: `from->to` per call, and contract violations.
#[derive(Default)]
pub(crate) struct MigrationLog {
    pub(crate) runs: Mutex<Vec<String>>,
    pub(crate) violations: Mutex<Vec<String>>,
}

/// The error `raises_keyerror` raises (`cause: {exception_type: KeyError}`).
#[derive(Debug, thiserror::Error)]
#[error("KeyError: '{0}'")]
pub(crate) struct KeyError(pub(crate) String);

/// A migration function.
pub(crate) type Migrate = Arc<dyn Fn(Value) -> Result<Value, BoxError> + Send + Sync>;

/// The named migration mock, logging each call into `log`.
pub(crate) fn migration(
    y: &Y<'_>,
    name: &str,
    pair: (&str, &str),
    log: &Arc<MigrationLog>,
) -> Result<Migrate, AdapterError> {
    let add = |field: &'static str, value: &'static str| -> Migrate {
        Arc::new(move |mut v: Value| {
            if let Value::Object(m) = &mut v {
                m.insert(field.into(), json!(value));
            }
            Ok(v)
        })
    };
    // Sessions 007 / 009: integer arithmetic on one field.
    let arith = |field: &'static str, f: fn(i64) -> Option<i64>| -> Migrate {
        Arc::new(move |mut v: Value| {
            let old = v
                .get(field)
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("`{field}` is not an integer"))?;
            let new = f(old).ok_or("integer overflow")?;
            if let Value::Object(m) = &mut v {
                m.insert(field.into(), json!(new));
            }
            Ok(v)
        })
    };
    let body: Migrate = match name {
        "add_ten_to_value" => arith("value", |x| x.checked_add(10)),
        "multiply_value_by_two" => arith("value", |x| x.checked_mul(2)),
        "add_new_field_default" => add("new_field", "v2_default"),
        "add_v2_field" => add("v2_field", "v2_default"),
        "add_v3_field" => add("v3_field", "v3_default"),
        "identity_passthrough" | "irrelevant" => Arc::new(Ok),
        "raises_keyerror" => Arc::new(|_| Err(Box::new(KeyError("missing_key".into())))),
        "should_not_run" => {
            let log = Arc::clone(log);
            Arc::new(move |_| {
                lock(&log.violations).push("the `should_not_run` migration ran".into());
                Err("should_not_run was called".into())
            })
        }
        other => {
            return Err(AdapterError::DirectiveUnknown {
                file: y.file.to_path_buf(),
                directive: format!("migrate: {other}"),
                location: y.location().to_owned(),
            })
        }
    };
    let label = format!("{}->{}", pair.0, pair.1);
    let log = Arc::clone(log);
    Ok(Arc::new(move |v| {
        lock(&log.runs).push(label.clone());
        body(v)
    }))
}

/// `flaky_resume_aware: {fail_first_invocation_count, fail_resumed_invocation_count,
/// category, message?, on_success}`: fails the first N attempts of the first
/// invocation that reaches it, the first M attempts of every later one (transient).
pub(crate) fn flaky_resume_aware(y: &Y<'_>) -> Result<FlakyScript, AdapterError> {
    y.check_keys(&[
        "fail_first_invocation_count",
        "fail_resumed_invocation_count",
        "category",
        "message",
        "on_success",
    ])?;
    let count = |k: &str| -> Result<usize, AdapterError> {
        let n = y.req(k)?;
        usize::try_from(n.i64()?).map_err(|_| n.invalid("must be ≥ 0"))
    };
    let failure = FailSpec {
        category: match y.get("category") {
            None => Some("provider_unavailable".to_owned()),
            Some(c) if c.is_null() => None,
            Some(c) => Some(c.str()?.to_owned()),
        },
        message: match y.get("message") {
            Some(m) => m.str()?.to_owned(),
            None => "resume-aware failure".into(),
        },
        transient: true,
        cause: None,
    };
    let success = match y.get("on_success") {
        Some(u) if !u.is_null() => crate::ge::build::json_pairs(&u)?,
        _ => Vec::new(),
    };
    let mode = FlakyMode::ResumeAware {
        first: count("fail_first_invocation_count")?,
        resumed: count("fail_resumed_invocation_count")?,
        failure,
    };
    Ok(FlakyScript::new(mode, success))
}
