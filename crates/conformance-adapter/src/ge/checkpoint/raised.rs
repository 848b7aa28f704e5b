//! Spec: conformance-adapter §5.6 / §5.8 / §5.13 — a failed run against
//! `first_run_expected_error` / `expected_error`: category, `raised_from`, `transient`,
//! the `carries` fields of the checkpoint error (§10.10) and the migration `cause`.

use serde_json::{json, Value};

use super::assert::{entries, eq, j};
use super::Run;
use crate::failure::Check;
use crate::yaml::Y;

/// `{category, raised_from, transient, carries, cause}` against a failed run.
pub(crate) fn expected_error(y: &Y<'_>, run: &Run) -> Check {
    y.check_keys(&["category", "raised_from", "transient", "carries", "cause"])?;
    let f = match &run.result {
        Err(f) => f,
        Ok(_) if run.crashed => return Err("the run crashed instead of failing".into()),
        Ok(state) => {
            return Err(format!("expected a failure; the run completed with {state}").into())
        }
    };
    if let Some(c) = y.get("category") {
        eq(&j(&c)?, &json!(f.category), "category")?;
    }
    if let Some(n) = y.get("raised_from") {
        eq(&j(&n)?, &json!(f.node), "raised_from")?;
    }
    if let Some(t) = y.get("transient") {
        let got = f
            .transient
            .ok_or("transient: the cause is not a checkpoint error")?;
        eq(&j(&t)?, &json!(got), "transient")?;
    }
    if let Some(c) = y.get("carries") {
        let fields = f.carries.as_ref().ok_or(format!(
            "carries: the cause is not a checkpoint error ({}: {})",
            f.category, f.message
        ))?;
        for (key, want) in entries(&c)? {
            let want = j(&want)?;
            // §5.13: bare name = equality (subset for mappings); `_present`; `_mentions`.
            if let Some(field) = key.strip_suffix("_present") {
                let present = fields.get(field).is_some_and(|v| !v.is_null());
                eq(&want, &json!(present), &format!("carries.{key}"))?;
            } else if let Some(field) = key.strip_suffix("_mentions") {
                let got = fields
                    .get(field)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let needle = want
                    .as_str()
                    .ok_or(format!("carries.{key}: not a string"))?;
                if !got.contains(needle) {
                    return Err(
                        format!("carries.{key}: `{got}` does not mention `{needle}`").into(),
                    );
                }
            } else {
                let got = fields
                    .get(&key)
                    .ok_or(format!("carries.{key}: the error exposes no such field"))?;
                match (&want, got) {
                    (Value::Object(w), Value::Object(g)) => {
                        for (k, v) in w {
                            eq(
                                v,
                                g.get(k).unwrap_or(&Value::Null),
                                &format!("carries.{key}.{k}"),
                            )?;
                        }
                    }
                    _ => eq(&want, got, &format!("carries.{key}"))?,
                }
            }
        }
    }
    if let Some(c) = y.get("cause") {
        c.check_keys(&["exception_type"])?;
        let want = j(&c.req("exception_type")?)?;
        eq(&want, &json!(f.cause_type), "cause.exception_type")?;
    }
    Ok(())
}
