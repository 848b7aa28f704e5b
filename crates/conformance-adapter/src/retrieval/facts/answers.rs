//! Spec: retrieval-provider §4–§10 — facts about the mock's answers.

use super::*;

use crate::failure::{ensure, Check};

pub(in crate::retrieval) fn no_request_after_error(run: &Run<'_>) -> Check {
    let first_error = run
        .requests
        .iter()
        .position(|r| !r.status.is_some_and(|s| (200..300).contains(&s)))
        .ok_or("no request was answered with an error")?;
    ensure(first_error + 1 == run.requests.len(), || {
        format!(
            "{} request(s) followed the error answer",
            run.requests.len() - first_error - 1
        )
    })
}

pub(in crate::retrieval) fn an_earlier_chunk_succeeded(run: &Run<'_>) -> Check {
    ensure(
        !oracle::ok_bodies(run).is_empty() && run.requests.len() > 1,
        || "no chunk succeeded before the failure".into(),
    )
}

fn served_embeddings<'r>(run: &'r Run<'_>) -> Vec<&'r Value> {
    oracle::ok_bodies(run)
        .into_iter()
        .filter_map(|b| b.get("data").and_then(Value::as_array))
        .flatten()
        .filter_map(|e| e.get("embedding"))
        .collect()
}

pub(in crate::retrieval) fn served_base64(run: &Run<'_>) -> Check {
    let all = served_embeddings(run);
    ensure(!all.is_empty() && all.iter().all(|e| e.is_string()), || {
        "the answer's embeddings are not base64 strings".into()
    })
}

pub(in crate::retrieval) fn served_malformed_base64(run: &Run<'_>) -> Check {
    let bad = served_embeddings(run)
        .iter()
        .any(|e| e.is_string() && oracle::decode_embedding(e).is_err());
    ensure(bad, || "no served embedding is malformed base64".into())
}

pub(in crate::retrieval) fn served_non_conforming_embedding(run: &Run<'_>) -> Check {
    let bad = served_embeddings(run)
        .iter()
        .any(|e| !e.is_string() && !e.is_array());
    ensure(bad, || {
        "every served embedding is an array or a string".into()
    })
}

pub(in crate::retrieval) fn served_no_id(run: &Run<'_>) -> Check {
    let bodies = oracle::ok_bodies(run);
    ensure(
        !bodies.is_empty() && bodies.iter().all(|b| b.get("id").is_none()),
        || "an answer carries an id".into(),
    )
}

pub(in crate::retrieval) fn served_id_empty(run: &Run<'_>) -> Check {
    let first = oracle::ok_bodies(run)
        .first()
        .and_then(|b| b.get("id"))
        .cloned();
    ensure(first == Some(Value::from("")), || {
        format!("the first answer's id is {first:?}, not \"\"")
    })
}

pub(in crate::retrieval) fn first_id_malformed(run: &Run<'_>) -> Check {
    let first = oracle::ok_bodies(run)
        .first()
        .and_then(|b| b.get("id"))
        .cloned();
    ensure(first.as_ref().is_some_and(|v| !v.is_string()), || {
        format!("the first answer's id {first:?} is not malformed")
    })
}

pub(in crate::retrieval) fn served_no_model(run: &Run<'_>) -> Check {
    let bodies = oracle::ok_bodies(run);
    ensure(
        !bodies.is_empty() && bodies.iter().all(|b| b.get("model").is_none()),
        || "an answer echoes a model".into(),
    )
}

/// Some served usage figure (or the first id) is present but malformed.
pub(in crate::retrieval) fn some_figure_malformed(run: &Run<'_>) -> Check {
    let malformed = oracle::figures(run)
        .iter()
        .flatten()
        .any(|(_, v)| v.is_some_and(|v| sound(Some(v)).is_none()));
    ensure(malformed, || "no served usage figure is malformed".into())
}

pub(in crate::retrieval) fn some_figure_or_id_malformed(run: &Run<'_>) -> Check {
    some_figure_malformed(run).or_else(|_| first_id_malformed(run))
}

pub(in crate::retrieval) fn served_out_of_range_index(run: &Run<'_>) -> Check {
    let n = oracle::call_list(run).len() as u64;
    let out = served_entries(run)?.iter().any(|(i, _, _)| *i >= n);
    ensure(out, || "no served index is out of range".into())
}

pub(in crate::retrieval) fn served_duplicate_index(run: &Run<'_>) -> Check {
    let mut seen: Vec<u64> = served_entries(run)?.iter().map(|e| e.0).collect();
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    ensure(seen.len() < n, || "no served index repeats".into())
}

pub(in crate::retrieval) fn served_over_top_k(run: &Run<'_>) -> Check {
    let k = top_k(run)? as usize;
    let n = served_entries(run)?.len();
    ensure(n > k, || {
        format!("the answer carries {n} results for top_k {k}")
    })
}

pub(in crate::retrieval) fn served_scalar_echo(run: &Run<'_>) -> Check {
    let bad = served_entries(run)?
        .iter()
        .any(|(_, _, e)| oracle::echo(e.as_ref()).is_err());
    ensure(bad, || "no served echo is a non-text scalar".into())
}

pub(in crate::retrieval) fn served_textdoc_echo(run: &Run<'_>) -> Check {
    ensure(echo_shapes(run)?.contains(&"textdoc"), || {
        "no served echo is a {text} object".into()
    })
}

pub(in crate::retrieval) fn served_textless_object_echo(run: &Run<'_>) -> Check {
    ensure(echo_shapes(run)?.contains(&"object"), || {
        "no served echo is a text-less object".into()
    })
}

pub(in crate::retrieval) fn served_mixed_echo_shapes(run: &Run<'_>) -> Check {
    let mut shapes = echo_shapes(run)?;
    shapes.sort_unstable();
    shapes.dedup();
    ensure(shapes.len() > 1, || {
        "the served echoes share one shape".into()
    })
}

pub(in crate::retrieval) fn served_no_echo(run: &Run<'_>) -> Check {
    ensure(echo_shapes(run)?.iter().all(|s| *s == "absent"), || {
        "the answer echoes documents".into()
    })
}
