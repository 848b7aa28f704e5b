//! Spec: retrieval-provider §4–§10 — facts about the caller's request (its config and extras).

use super::*;

use crate::failure::{ensure, Check};

pub(in crate::retrieval) fn input_type_set(run: &Run<'_>) -> Check {
    ensure(input_type(run).is_some(), || {
        "the call sets no input_type".into()
    })
}

pub(in crate::retrieval) fn return_documents_true(run: &Run<'_>) -> Check {
    let set = matches!(run.call, Call::Rerank(c) if c.config.return_documents == Some(true));
    ensure(set, || {
        "the call does not set return_documents: true".into()
    })
}

pub(in crate::retrieval) fn return_documents_unset(run: &Run<'_>) -> Check {
    let unset = matches!(run.call, Call::Rerank(c) if c.config.return_documents.is_none());
    ensure(unset, || "the call sets return_documents".into())
}

pub(in crate::retrieval) fn no_dimensions(run: &Run<'_>) -> Check {
    let none = matches!(run.call, Call::Embed(c) if c.config.dimensions.is_none());
    ensure(none, || "the call sets dimensions".into())
}

pub(in crate::retrieval) fn no_top_k(run: &Run<'_>) -> Check {
    ensure(
        top_k(run).is_err() && run.call.kind() == Kind::Rerank,
        || "the call passes top_k".into(),
    )
}

pub(in crate::retrieval) fn dimensions_conflict(run: &Run<'_>) -> Check {
    let declared = match run.call {
        Call::Embed(c) => c.config.dimensions,
        Call::Rerank(_) => None,
    };
    let extra = extras(run).get("dimensions");
    let conflict =
        declared.is_some_and(|d| extra.is_some_and(|e| e.as_u64() != Some(u64::from(d))));
    ensure(conflict, || {
        "the call's extras dimensions does not conflict with the declared one".into()
    })
}

pub(in crate::retrieval) fn extras_dimensions_match(run: &Run<'_>) -> Check {
    let declared = match run.call {
        Call::Embed(c) => c.config.dimensions,
        Call::Rerank(_) => None,
    };
    let extra = extras(run).get("dimensions").and_then(Value::as_u64);
    ensure(
        declared.is_some() && extra == declared.map(u64::from),
        || "the call's extras dimensions does not equal the declared one".into(),
    )
}

pub(in crate::retrieval) fn top_k_exceeds_documents(run: &Run<'_>) -> Check {
    let k = top_k(run)?;
    ensure(k as usize > oracle::call_list(run).len(), || {
        "top_k does not exceed the document count".into()
    })
}

pub(in crate::retrieval) fn extras_types_given(run: &Run<'_>) -> Check {
    ensure(extras_types(run).is_some(), || {
        "the call's extras carry no embedding_types".into()
    })
}

pub(in crate::retrieval) fn extras_types_name_float(run: &Run<'_>) -> Check {
    let names = extras_types(run)
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|p| p == "float"));
    ensure(names, || {
        "the caller's embedding_types does not name float".into()
    })
}

/// Not a list, or a list with a non-string element (§8.4's malformed rule).
pub(in crate::retrieval) fn extras_types_malformed(run: &Run<'_>) -> Check {
    let malformed = extras_types(run).is_some_and(|v| {
        v.as_array()
            .is_none_or(|l| l.iter().any(|p| !p.is_string()))
    });
    ensure(malformed, || {
        "the caller's embedding_types is not malformed".into()
    })
}

pub(in crate::retrieval) fn extras_types_partly_valid(run: &Run<'_>) -> Check {
    extras_types_malformed(run)?;
    let some_valid = extras_types(run)
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|p| p.is_string() && p != "float"));
    ensure(some_valid, || {
        "the malformed list holds no well-formed precision".into()
    })
}
