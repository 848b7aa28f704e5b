//! Spec: retrieval-provider §4–§10 — facts about the requests the mapping sent.

use super::*;

use crate::failure::{ensure, Check};

pub(in crate::retrieval) fn bearer(run: &Run<'_>) -> Check {
    let key = run
        .bound
        .api_key
        .as_deref()
        .ok_or("the provider block binds no api_key")?;
    let want = format!("Bearer {key}");
    ensure(!run.requests.is_empty(), || {
        "no request reached the wire".into()
    })?;
    for r in &run.requests {
        let got = r
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str());
        ensure(got == Some(want.as_str()), || {
            format!("Authorization {got:?}, expected {want:?}")
        })?;
    }
    Ok(())
}

pub(in crate::retrieval) fn routes_to_base_url(run: &Run<'_>) -> Check {
    let want = format!(
        "{}{}",
        run.bound.base_url.trim_end_matches('/'),
        run.bound.route
    );
    ensure(!run.requests.is_empty(), || {
        "no request reached the wire".into()
    })?;
    for r in &run.requests {
        let url = crate::retrieval::expect::request_url(run, r);
        ensure(url == want, || {
            format!("request URL {url}, expected {want}")
        })?;
    }
    Ok(())
}

pub(in crate::retrieval) fn wire_model_bound(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        ensure(
            b.get("model").and_then(Value::as_str) == Some(run.bound.model.as_str()),
            || {
                format!(
                    "the body's model is not the bound `{}`: {b}",
                    run.bound.model
                )
            },
        )
    })
}

pub(in crate::retrieval) fn wire_inputs_array(run: &Run<'_>) -> Check {
    every_body(run, |b| wire_list(b, run).map(|_| ()))
}

/// The wire list, concatenated over the requests, equals the caller's list.
pub(in crate::retrieval) fn wire_inputs_verbatim(run: &Run<'_>) -> Check {
    let mut sent = Vec::new();
    for b in run.bodies() {
        sent.extend(wire_list(b, run)?.iter().cloned());
    }
    let want: Vec<Value> = oracle::call_list(run)
        .iter()
        .cloned()
        .map(Value::from)
        .collect();
    ensure(!sent.is_empty() && sent == want, || {
        format!("the wire carried {sent:?}, the call {want:?}")
    })
}

pub(in crate::retrieval) fn wire_documents_strings(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        ensure(wire_list(b, run)?.iter().all(Value::is_string), || {
            format!("non-string documents: {b}")
        })
    })
}

pub(in crate::retrieval) fn wire_input_prefixed(run: &Run<'_>) -> Check {
    let prefix = match input_type(run) {
        Some("query") => run.bound.query_prefix.as_deref(),
        Some("document") => run.bound.document_prefix.as_deref(),
        _ => None,
    }
    .ok_or("no prefix applies to the call's input_type")?;
    let want: Vec<Value> = oracle::call_list(run)
        .iter()
        .map(|s| Value::from(format!("{prefix}{s}")))
        .collect();
    every_body(run, |b| {
        ensure(wire_list(b, run)? == &want, || {
            format!("the wire input is not prefixed with {prefix:?}: {b}")
        })
    })
}

pub(in crate::retrieval) fn wire_top_n(run: &Run<'_>) -> Check {
    let k = top_k(run)?;
    every_body(run, |b| {
        ensure(
            b.get("top_n").and_then(Value::as_u64) == Some(u64::from(k)),
            || format!("top_n is not {k}: {b}"),
        )
    })
}

fn wire_declared_dimensions(run: &Run<'_>, key: &str) -> Check {
    let d = match run.call {
        Call::Embed(c) => c.config.dimensions.ok_or("the call sets no dimensions")?,
        Call::Rerank(_) => return Err("not an embedding call".into()),
    };
    every_body(run, |b| {
        ensure(
            b.get(key).and_then(Value::as_u64) == Some(u64::from(d)),
            || format!("`{key}` is not {d}: {b}"),
        )
    })
}

pub(in crate::retrieval) fn wire_dimensions_declared(run: &Run<'_>) -> Check {
    wire_declared_dimensions(run, "dimensions")
}

pub(in crate::retrieval) fn wire_output_dimension_declared(run: &Run<'_>) -> Check {
    wire_declared_dimensions(run, "output_dimension")
}

pub(in crate::retrieval) fn same_query(run: &Run<'_>) -> Check {
    let Call::Rerank(c) = run.call else {
        return Err("not a rerank call".into());
    };
    every_body(run, |b| {
        ensure(
            b.get("query").and_then(Value::as_str) == Some(c.query.as_str()),
            || format!("a chunk's query differs: {b}"),
        )
    })
}

pub(in crate::retrieval) fn wire_has_float(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        ensure(embedding_types(b)?.first() == Some(&"float"), || {
            format!("\"float\" is not first: {b}")
        })
    })
}

pub(in crate::retrieval) fn float_once(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        let n = embedding_types(b)?
            .iter()
            .filter(|p| **p == "float")
            .count();
        ensure(n == 1, || format!("\"float\" appears {n} times: {b}"))
    })
}

pub(in crate::retrieval) fn wire_has_extras_precisions(run: &Run<'_>) -> Check {
    let caller: Vec<&str> = extras_types(run)
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(Value::as_str).collect())
        .ok_or("the caller's embedding_types is not a string list")?;
    every_body(run, |b| {
        let wire = embedding_types(b)?;
        ensure(caller.iter().all(|p| wire.contains(p)), || {
            format!("the wire drops a caller precision: {b}")
        })
    })
}

/// `"float"` first, then the caller's precisions in order, first occurrence kept.
pub(in crate::retrieval) fn embedding_types_merged(run: &Run<'_>) -> Check {
    let caller: Vec<&str> = extras_types(run)
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(Value::as_str).collect())
        .ok_or("the caller's embedding_types is not a string list")?;
    let mut want = vec!["float"];
    for p in caller {
        if !want.contains(&p) {
            want.push(p);
        }
    }
    every_body(run, |b| {
        ensure(embedding_types(b)? == want, || {
            format!("embedding_types is not the merge {want:?}: {b}")
        })
    })
}

pub(in crate::retrieval) fn no_extras_precision_on_wire(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        let wire = embedding_types(b)?;
        ensure(wire == ["float"], || {
            format!("a salvaged precision reached the wire: {b}")
        })
    })
}

/// TEI `/embed`'s minimal body: `{inputs[, prompt_name][, dimensions]}`.
pub(in crate::retrieval) fn tei_embed_body_minimal(run: &Run<'_>) -> Check {
    every_body(run, |b| {
        let extra = b.as_object().and_then(|o| {
            o.keys()
                .find(|k| !matches!(k.as_str(), "inputs" | "prompt_name" | "dimensions"))
        });
        ensure(extra.is_none(), || format!("the body is not minimal: {b}"))
    })
}

/// An extras `truncate` equal to the managed value leaves the wire at that value,
/// or (TEI `/embed`, relying on the default) absent.
pub(in crate::retrieval) fn truncate_noop(run: &Run<'_>) -> Check {
    let extra = extras(run)
        .get("truncate")
        .ok_or("the call's extras carry no truncate")?;
    every_body(run, |b| match b.get("truncate") {
        None => Ok(()),
        Some(v) => ensure(v == extra, || {
            format!("the wire truncate {v} differs from the extras {extra}")
        }),
    })
}

/// The chunks are the consecutive count-based slices at the provider's cap.
pub(in crate::retrieval) fn count_chunked(run: &Run<'_>) -> Check {
    let cap = run.bound.cap.ok_or("the mapping has no per-call cap")?;
    let want: Vec<usize> = oracle::call_list(run)
        .chunks(cap.max(1))
        .map(<[String]>::len)
        .collect();
    let sizes: Vec<usize> = run
        .bodies()
        .iter()
        .map(|b| wire_list(b, run).map(Vec::len))
        .collect::<Result<_, _>>()?;
    ensure(sizes == want, || {
        format!("chunk sizes {sizes:?}, count-based chunking at {cap} gives {want:?}")
    })
}

pub(in crate::retrieval) fn over_cap_chunked(run: &Run<'_>) -> Check {
    let cap = run.bound.cap.ok_or("the mapping has no per-call cap")?;
    ensure(oracle::call_list(run).len() > cap, || {
        "the call is not over the cap".into()
    })?;
    ensure(run.requests.len() > 1, || {
        "the over-cap call went out in one request".into()
    })?;
    every_body(run, |b| {
        let n = wire_list(b, run)?.len();
        ensure(n <= cap, || {
            format!("a request carried {n} items over the cap {cap}")
        })
    })
}

pub(in crate::retrieval) fn identical_params(run: &Run<'_>) -> Check {
    let key = oracle::list_key(run.bound.mapping, run.call.kind());
    let mut rest = run.bodies().into_iter().map(|b| {
        let mut b = b.clone();
        if let Some(o) = b.as_object_mut() {
            o.remove(key);
        }
        b
    });
    let first = rest.next().ok_or("no request reached the wire")?;
    rest.try_for_each(|b| {
        ensure(b == first, || {
            format!("chunk params differ: {b} vs {first}")
        })
    })
}

pub(in crate::retrieval) fn chunked(run: &Run<'_>) -> Check {
    ensure(run.requests.len() > 1, || {
        format!("the call went out in {} request(s)", run.requests.len())
    })
}

pub(in crate::retrieval) fn one_request_all_inputs(run: &Run<'_>) -> Check {
    let n = oracle::call_list(run).len();
    ensure(n >= 2, || "the call has fewer than two inputs".into())?;
    wire_inputs_verbatim(run)
}
