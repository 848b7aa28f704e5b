//! Spec: retrieval-provider §4–§10 — facts about the response record.

use super::*;

use crate::failure::{ensure, Check};

pub(in crate::retrieval) fn one_vector_per_input(run: &Run<'_>) -> Check {
    let (got, want) = (vectors(run)?.len(), oracle::call_list(run).len());
    ensure(got == want, || format!("{got} vectors for {want} inputs"))
}

pub(in crate::retrieval) fn same_dims(run: &Run<'_>) -> Check {
    let v = vectors(run)?;
    let first = v.first().map(Vec::len).ok_or("no vectors")?;
    ensure(v.iter().all(|x| x.len() == first), || {
        "the vectors differ in dimensionality".into()
    })
}

pub(in crate::retrieval) fn dims_field(run: &Run<'_>) -> Check {
    let d = field(run, "dimensions")?
        .as_u64()
        .ok_or("no dimensions field")? as usize;
    ensure(vectors(run)?.iter().all(|x| x.len() == d), || {
        format!("a vector's length differs from dimensions {d}")
    })
}

pub(in crate::retrieval) fn vectors_from_wire(run: &Run<'_>) -> Check {
    let (got, want) = (vectors(run)?, oracle::vectors(run)?);
    ensure(got == want, || {
        format!("vectors {got:?}, the wire's input order gives {want:?}")
    })
}

/// The vector at `i` is the wire's vector for input `i`.
pub(in crate::retrieval) fn vector_at(run: &Run<'_>, i: usize) -> Check {
    let (got, want) = (vectors(run)?, oracle::vectors(run)?);
    ensure(got.get(i).is_some() && got.get(i) == want.get(i), || {
        format!(
            "vector {i} is {:?}, the wire's input {i} gives {:?}",
            got.get(i),
            want.get(i)
        )
    })
}

pub(in crate::retrieval) fn model_is_bound(run: &Run<'_>) -> Check {
    let m = field(run, "model")?;
    ensure(m == run.bound.model.as_str(), || {
        format!("model {m}, bound `{}`", run.bound.model)
    })
}

pub(in crate::retrieval) fn response_id_null(run: &Run<'_>) -> Check {
    let id = field(run, "response_id")?;
    ensure(id.is_null(), || format!("response_id {id}, expected null"))
}

pub(in crate::retrieval) fn response_id_from_first(run: &Run<'_>) -> Check {
    let (got, want) = (field(run, "response_id")?, oracle::response_id(run));
    ensure(!want.is_null() && *got == want, || {
        format!("response_id {got}, the first answer's id is {want}")
    })
}

pub(in crate::retrieval) fn usage_null(run: &Run<'_>) -> Check {
    let u = field(run, "usage")?;
    ensure(u.is_null(), || format!("usage {u}, expected null"))
}

pub(in crate::retrieval) fn usage_present(run: &Run<'_>) -> Check {
    ensure(!field(run, "usage")?.is_null(), || "usage is null".into())
}

pub(in crate::retrieval) fn usage_from_wire(run: &Run<'_>) -> Check {
    let (got, want) = (field(run, "usage")?, oracle::usage(run));
    ensure(*got == want, || {
        format!("usage {got}, the wire's figures give {want}")
    })
}

fn usage_figure(run: &Run<'_>, key: &str) -> Check<Value> {
    Ok(field(run, "usage")?
        .get(key)
        .cloned()
        .unwrap_or(Value::Null))
}

pub(in crate::retrieval) fn search_units_from_wire(run: &Run<'_>) -> Check {
    let got = usage_figure(run, "search_units")?;
    ensure(!got.is_null(), || "search_units is null".into())?;
    usage_from_wire(run)
}

pub(in crate::retrieval) fn search_units_null_unreported(run: &Run<'_>) -> Check {
    let got = usage_figure(run, "search_units")?;
    ensure(got.is_null(), || format!("search_units {got}"))?;
    usage_from_wire(run)
}

pub(in crate::retrieval) fn rerank_input_tokens_from_wire(run: &Run<'_>) -> Check {
    let got = usage_figure(run, "input_tokens")?;
    ensure(!got.is_null(), || "input_tokens is null".into())?;
    usage_from_wire(run)
}

pub(in crate::retrieval) fn rerank_input_tokens_null_unreported(run: &Run<'_>) -> Check {
    let got = usage_figure(run, "input_tokens")?;
    ensure(got.is_null(), || format!("input_tokens {got}"))?;
    usage_from_wire(run)
}

/// `raw` is the served body (one request) or the list of the served bodies.
pub(in crate::retrieval) fn raw_verbatim(run: &Run<'_>) -> Check {
    let bodies = oracle::ok_bodies(run);
    let want = match bodies.as_slice() {
        [one] => (*one).clone(),
        many => Value::Array(many.iter().map(|b| (*b).clone()).collect()),
    };
    let got = field(run, "raw")?;
    ensure(*got == want, || format!("raw {got}, served {want}"))
}

pub(in crate::retrieval) fn raw_is_object(run: &Run<'_>) -> Check {
    ensure(field(run, "raw")?.is_object(), || {
        "raw is not an object".into()
    })
}

pub(in crate::retrieval) fn raw_list_of_objects(run: &Run<'_>) -> Check {
    let raw = field(run, "raw")?;
    let ok = raw
        .as_array()
        .is_some_and(|l| l.len() > 1 && l.iter().all(Value::is_object));
    ensure(ok, || {
        format!("raw is not a list of response objects: {raw}")
    })
}

pub(in crate::retrieval) fn raw_has_extra_precisions(run: &Run<'_>) -> Check {
    let embeddings = field(run, "raw")?
        .get("embeddings")
        .and_then(Value::as_object)
        .ok_or("raw has no embeddings")?;
    ensure(embeddings.keys().any(|k| k != "float"), || {
        "raw keeps no extra precision".into()
    })
}

pub(in crate::retrieval) fn nothing_stored(run: &Run<'_>) -> Check {
    let stores = match run.call {
        Call::Embed(c) => c.stores_response_in.as_deref(),
        Call::Rerank(c) => c.stores_response_in.as_deref(),
    }
    .ok_or("the call stores its response nowhere")?;
    let state = match &run.graph {
        Ok(state) => state,
        Err(failure) => &failure.state,
    };
    let v = state.get(stores).unwrap_or(&Value::Null);
    ensure(v.is_null(), || format!("`{stores}` holds {v}"))
}

pub(in crate::retrieval) fn sorted(run: &Run<'_>) -> Check {
    let scores: Vec<f64> = results(run)?
        .iter()
        .filter_map(|r| r.get("relevance_score")?.as_f64())
        .collect();
    ensure(scores.windows(2).all(|w| w[0] >= w[1]), || {
        format!("scores {scores:?} are not descending")
    })
}

pub(in crate::retrieval) fn indices_valid(run: &Run<'_>) -> Check {
    let n = oracle::call_list(run).len() as u64;
    ensure(indices(run)?.iter().all(|i| *i < n), || {
        format!("an index is outside 0..{n}")
    })
}

pub(in crate::retrieval) fn indices_distinct(run: &Run<'_>) -> Check {
    let mut i = indices(run)?;
    let n = i.len();
    i.sort_unstable();
    i.dedup();
    ensure(i.len() == n, || "an index repeats".into())
}

pub(in crate::retrieval) fn results_from_wire(run: &Run<'_>) -> Check {
    let (got, want) = (results(run)?, oracle::results(run)?);
    ensure(*got == want, || {
        format!("results {got:?}, the wire gives {want:?}")
    })
}

pub(in crate::retrieval) fn some_index_beyond_first_chunk(run: &Run<'_>) -> Check {
    let first = run
        .bodies()
        .first()
        .map(|b| wire_list(b, run).map(Vec::len))
        .transpose()?
        .unwrap_or(0) as u64;
    ensure(indices(run)?.iter().any(|i| *i >= first), || {
        "no result comes from a later chunk".into()
    })
}

pub(in crate::retrieval) fn echoes_from_wire(run: &Run<'_>) -> Check {
    let docs = |list: &[Value]| -> Vec<(Value, Value)> {
        list.iter()
            .map(|r| {
                (
                    r.get("index").cloned().unwrap_or(Value::Null),
                    r.get("document").cloned().unwrap_or(Value::Null),
                )
            })
            .collect()
    };
    let (got, want) = (docs(results(run)?), docs(&oracle::results(run)?));
    ensure(got == want, || {
        format!("documents {got:?}, the §6 echo rule gives {want:?}")
    })
}

pub(in crate::retrieval) fn some_string_echo(run: &Run<'_>) -> Check {
    ensure(echo_shapes(run)?.contains(&"string"), || {
        "no served echo is a string".into()
    })?;
    echoes_from_wire(run)
}

pub(in crate::retrieval) fn omitted_echoes_null(run: &Run<'_>) -> Check {
    let omitted: Vec<u64> = served_entries(run)?
        .into_iter()
        .filter(|(_, _, e)| e.as_ref().is_none_or(Value::is_null))
        .map(|(i, _, _)| i)
        .collect();
    ensure(!omitted.is_empty(), || "the answer omits no echo".into())?;
    for r in results(run)? {
        let i = r.get("index").and_then(Value::as_u64);
        if i.is_some_and(|i| omitted.contains(&i)) {
            let d = r.get("document").unwrap_or(&Value::Null);
            ensure(d.is_null(), || {
                format!("result {i:?} has document {d}, the provider echoed none")
            })?;
        }
    }
    Ok(())
}

pub(in crate::retrieval) fn all_documents_null(run: &Run<'_>) -> Check {
    let all = results(run)?
        .iter()
        .all(|r| r.get("document").is_none_or(Value::is_null));
    ensure(all, || "a result carries a document".into())
}

pub(in crate::retrieval) fn empty_echo_kept(run: &Run<'_>) -> Check {
    let served: Vec<u64> = served_entries(run)?
        .into_iter()
        .filter(|(_, _, e)| e.as_ref() == Some(&Value::from("")))
        .map(|(i, _, _)| i)
        .collect();
    ensure(!served.is_empty(), || {
        "no served echo is the empty string".into()
    })?;
    let kept = results(run)?
        .iter()
        .filter(|r| {
            r.get("index")
                .and_then(Value::as_u64)
                .is_some_and(|i| served.contains(&i))
        })
        .all(|r| r.get("document") == Some(&Value::from("")));
    ensure(kept, || "an empty echo was not surfaced as \"\"".into())
}

fn count(run: &Run<'_>) -> Check<usize> {
    Ok(results(run)?.len())
}

pub(in crate::retrieval) fn count_le_documents(run: &Run<'_>) -> Check {
    let (n, d) = (count(run)?, oracle::call_list(run).len());
    ensure(n <= d, || format!("{n} results for {d} documents"))
}

pub(in crate::retrieval) fn count_le_top_k(run: &Run<'_>) -> Check {
    let (n, k) = (count(run)?, top_k(run)? as usize);
    ensure(n <= k, || format!("{n} results for top_k {k}"))
}

pub(in crate::retrieval) fn count_below_top_k(run: &Run<'_>) -> Check {
    let (n, k) = (count(run)?, top_k(run)? as usize);
    ensure(n < k && n == served_entries(run)?.len(), || {
        format!("{n} results for top_k {k}")
    })
}

pub(in crate::retrieval) fn count_eq_top_k(run: &Run<'_>) -> Check {
    let (n, k) = (count(run)?, top_k(run)? as usize);
    ensure(n == k, || format!("{n} results for top_k {k}"))
}

pub(in crate::retrieval) fn count_matches_served(run: &Run<'_>) -> Check {
    let (n, s) = (count(run)?, served_entries(run)?.len());
    ensure(n == s, || format!("{n} results, the answer carries {s}"))
}
