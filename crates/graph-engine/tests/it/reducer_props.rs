//! Property tests of the canonical reducers, typed and JSON forms.

use std::collections::HashSet;

use openarmature_graph::reducers::json::field_key;
use openarmature_graph::reducers::{typed, Reducer};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

fn to_json_list(items: &[i32]) -> Value {
    Value::Array(items.iter().map(|i| json!(i)).collect())
}

fn records_json(items: &[(u8, i32)]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(k, v)| json!({"id": k, "v": v}))
            .collect(),
    )
}

fn first_seen<T: Clone + Eq + std::hash::Hash>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|x| seen.insert(x.clone()))
        .collect()
}

/// The expected key sequence of merge_by_key: prior's keys (duplicates kept), then
/// update keys not in prior, first-seen order.
fn expected_keys(prior: &[(u8, i32)], update: &[(u8, i32)]) -> Vec<u8> {
    let prior_keys: Vec<u8> = prior.iter().map(|r| r.0).collect();
    let prior_set: HashSet<u8> = prior_keys.iter().copied().collect();
    let novel = first_seen(
        update
            .iter()
            .map(|r| r.0)
            .filter(|k| !prior_set.contains(k)),
    );
    prior_keys.into_iter().chain(novel).collect()
}

proptest! {
    #[test]
    fn typed_bounded_append_keeps_the_suffix(
        prior in vec(any::<i32>(), 0..20),
        update in vec(any::<i32>(), 0..20),
        max_len in 1usize..30,
    ) {
        let out = typed::bounded_append(&prior, update.clone(), max_len).unwrap();
        if update.is_empty() {
            prop_assert_eq!(out, prior);
        } else {
            let all: Vec<i32> = prior.iter().chain(&update).copied().collect();
            let expected_len = max_len.min(all.len());
            prop_assert_eq!(out.len(), expected_len);
            prop_assert_eq!(&out[..], &all[all.len() - expected_len..]);
        }
    }

    #[test]
    fn json_bounded_append_keeps_the_suffix(
        prior in vec(any::<i32>(), 0..20),
        update in vec(any::<i32>(), 0..20),
        max_len in 1i64..30,
    ) {
        let reducer = Reducer::bounded_append(max_len).unwrap();
        let out = reducer.apply(&to_json_list(&prior), to_json_list(&update)).unwrap();
        let out = out.as_array().unwrap().clone();
        if update.is_empty() {
            prop_assert_eq!(Value::Array(out), to_json_list(&prior));
        } else {
            let all: Vec<i32> = prior.iter().chain(&update).copied().collect();
            let expected_len = usize::try_from(max_len).unwrap().min(all.len());
            prop_assert_eq!(out.len(), expected_len);
            prop_assert_eq!(Value::Array(out), to_json_list(&all[all.len() - expected_len..]));
        }
    }

    #[test]
    fn bounded_append_typed_and_json_agree(
        prior in vec(any::<i32>(), 0..10),
        update in vec(any::<i32>(), 0..10),
        max_len in 1usize..12,
    ) {
        let typed_out = typed::bounded_append(&prior, update.clone(), max_len).unwrap();
        let json_out = Reducer::bounded_append(i64::try_from(max_len).unwrap())
            .unwrap()
            .apply(&to_json_list(&prior), to_json_list(&update))
            .unwrap();
        prop_assert_eq!(to_json_list(&typed_out), json_out);
    }

    #[test]
    fn typed_merge_by_key_keys_are_the_first_seen_union(
        prior in vec((0u8..6, any::<i32>()), 0..12),
        update in vec((0u8..6, any::<i32>()), 0..12),
    ) {
        let out = typed::merge_by_key(&prior, update.clone(), |r: &(u8, i32)| r.0).unwrap();
        let keys: Vec<u8> = out.iter().map(|r| r.0).collect();
        prop_assert_eq!(&keys, &expected_keys(&prior, &update));
        // Deduplicated: prior keys ∪ update keys in first-seen order.
        prop_assert_eq!(
            first_seen(keys.iter().copied()),
            first_seen(prior.iter().chain(&update).map(|r| r.0))
        );
        // The last update for a key sits at that key's last position.
        for k in first_seen(update.iter().map(|r| r.0)) {
            let last_update = update.iter().rev().find(|r| r.0 == k).unwrap();
            let last_out = out.iter().rev().find(|r| r.0 == k).unwrap();
            prop_assert_eq!(last_update, last_out);
        }
        // Keys untouched by the update keep their prior items verbatim.
        let touched: HashSet<u8> = update.iter().map(|r| r.0).collect();
        let untouched_out: Vec<_> = out.iter().filter(|r| !touched.contains(&r.0)).collect();
        let untouched_prior: Vec<_> = prior.iter().filter(|r| !touched.contains(&r.0)).collect();
        prop_assert_eq!(untouched_out, untouched_prior);
    }

    #[test]
    fn json_merge_by_key_matches_typed(
        prior in vec((0u8..6, any::<i32>()), 0..12),
        update in vec((0u8..6, any::<i32>()), 0..12),
    ) {
        let typed_out = typed::merge_by_key(&prior, update.clone(), |r: &(u8, i32)| r.0).unwrap();
        let json_out = Reducer::merge_by_key(Some(field_key("id")))
            .unwrap()
            .apply(&records_json(&prior), records_json(&update))
            .unwrap();
        prop_assert_eq!(json_out, records_json(&typed_out));
    }

    #[test]
    fn dedupe_append_never_duplicates_new_keys(
        prior in vec(0u8..8, 0..10),
        update in vec(0u8..8, 0..10),
    ) {
        let out = typed::dedupe_append_items(&prior, update.clone()).unwrap();
        prop_assert_eq!(&out[..prior.len()], &prior[..]);
        let prior_set: HashSet<u8> = prior.iter().copied().collect();
        let expected_tail = first_seen(update.iter().copied().filter(|x| !prior_set.contains(x)));
        prop_assert_eq!(&out[prior.len()..], &expected_tail[..]);

        let json_out = Reducer::DedupeAppend { key: None }
            .apply(
                &Value::Array(prior.iter().map(|x| json!(x)).collect()),
                Value::Array(update.iter().map(|x| json!(x)).collect()),
            )
            .unwrap();
        prop_assert_eq!(json_out, Value::Array(out.iter().map(|x| json!(x)).collect()));
    }

    #[test]
    fn append_and_concat_flatten_are_concatenation(
        prior in vec(any::<i32>(), 0..10),
        chunks in vec(vec(any::<i32>(), 0..4), 0..5),
    ) {
        let flat: Vec<i32> = chunks.iter().flatten().copied().collect();
        let all: Vec<i32> = prior.iter().chain(&flat).copied().collect();
        prop_assert_eq!(typed::append(&prior, flat.clone()).unwrap(), all.clone());
        prop_assert_eq!(typed::concat_flatten(&prior, chunks.clone()).unwrap(), all.clone());
        let json_chunks = Value::Array(chunks.iter().map(|c| to_json_list(c)).collect());
        prop_assert_eq!(
            Reducer::ConcatFlatten.apply(&to_json_list(&prior), json_chunks).unwrap(),
            to_json_list(&all)
        );
        prop_assert_eq!(
            Reducer::Append.apply(&to_json_list(&prior), to_json_list(&flat)).unwrap(),
            to_json_list(&all)
        );
    }
}

#[test]
fn json_reducers_reject_ill_shaped_updates() {
    let cases: Vec<(Reducer, Value, Value)> = vec![
        (Reducer::Append, json!([]), json!("x")),
        (Reducer::Merge, json!({}), json!([1])),
        (Reducer::ConcatFlatten, json!([]), json!([["a"], "b"])),
        (Reducer::MergeAll, json!({}), json!({"a": 1})),
        (Reducer::MergeAll, json!({}), json!([{"a": 1}, 2])),
        (Reducer::bounded_append(2).unwrap(), json!([]), json!(3)),
        (Reducer::DedupeAppend { key: None }, json!([]), json!([[1]])),
        (
            Reducer::merge_by_key(Some(field_key("id"))).unwrap(),
            json!([]),
            json!([{"no_id": 1}]),
        ),
        (
            Reducer::merge_by_key(Some(field_key("id"))).unwrap(),
            json!([]),
            json!([{"id": [1, 2]}]),
        ),
    ];
    for (reducer, prior, update) in cases {
        let name = reducer.name();
        assert!(
            reducer.apply(&prior, update.clone()).is_err(),
            "{name} accepted {update}"
        );
    }
}

#[test]
fn json_reducer_names_and_round_trip_classes() {
    let idempotent = [
        Reducer::LastWriteWins,
        Reducer::Merge,
        Reducer::DedupeAppend { key: None },
        Reducer::merge_by_key(Some(field_key("id"))).unwrap(),
    ];
    for r in idempotent {
        assert_eq!(r.round_trip_idempotent(), Some(true), "{}", r.name());
    }
    let growing = [
        Reducer::Append,
        Reducer::ConcatFlatten,
        Reducer::MergeAll,
        Reducer::bounded_append(3).unwrap(),
    ];
    for r in growing {
        assert_eq!(r.round_trip_idempotent(), Some(false), "{}", r.name());
    }
    for name in [
        "last_write_wins",
        "append",
        "merge",
        "concat_flatten",
        "merge_all",
        "dedupe_append",
    ] {
        assert_eq!(Reducer::by_name(name).unwrap().name(), name);
    }
    assert!(Reducer::by_name("bounded_append").is_none());
}
