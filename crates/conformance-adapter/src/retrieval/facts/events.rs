//! Spec: retrieval-provider §4–§10 — facts about the typed events.

use super::*;

use crate::failure::{ensure, Check};

pub(in crate::retrieval) fn event_input_type(run: &Run<'_>) -> Check {
    let t = input_type(run).ok_or("the call sets no input_type")?;
    let params = event(run)?
        .get("request_params")
        .cloned()
        .unwrap_or(Value::Null);
    ensure(params.get("input_type") == Some(&Value::from(t)), || {
        format!("request_params {params}, input_type {t}")
    })
}

pub(in crate::retrieval) fn event_request_params_empty(run: &Run<'_>) -> Check {
    let params = event(run)?
        .get("request_params")
        .cloned()
        .unwrap_or(Value::Null);
    ensure(
        params.as_object().is_some_and(serde_json::Map::is_empty),
        || format!("request_params {params}"),
    )
}

fn event_mirrors(run: &Run<'_>, key: &str, null: Option<bool>) -> Check {
    let (e, r) = (
        event(run)?.get(key).cloned().unwrap_or(Value::Null),
        field(run, key)?,
    );
    ensure(e == *r, || {
        format!("the event's {key} {e} differs from the response's {r}")
    })?;
    match null {
        Some(true) => ensure(e.is_null(), || format!("{key} {e}, expected null")),
        Some(false) => ensure(!e.is_null(), || format!("{key} is null")),
        None => Ok(()),
    }
}

pub(in crate::retrieval) fn event_usage_null_mirrors(run: &Run<'_>) -> Check {
    event_mirrors(run, "usage", Some(true))
}

pub(in crate::retrieval) fn event_usage_mirrors_present(run: &Run<'_>) -> Check {
    event_mirrors(run, "usage", Some(false))
}

pub(in crate::retrieval) fn event_response_id_null_mirrors(run: &Run<'_>) -> Check {
    event_mirrors(run, "response_id", Some(true))
}
