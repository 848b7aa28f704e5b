//! Typed state declared with `state!`: every canonical reducer through `merge`,
//! reducer configuration checks, JSON projection helpers, immutability.

use std::collections::BTreeMap;
use std::sync::Arc;

use openarmature_graph::reducers::ReducerFailure;
use openarmature_graph::{state, GraphBuilder, MergeError, NodeCtx, State, END};
use serde_json::json;

fn no_negative(prior: &i64, update: i64) -> Result<i64, ReducerFailure> {
    if update < 0 {
        Err(ReducerFailure(format!("negative update {update}")))
    } else {
        Ok(prior + update)
    }
}

state! {
    /// One field per canonical reducer.
    #[derive(Default, PartialEq)]
    pub struct All => AllUpdate {
        /// last_write_wins (default).
        pub name: String,
        /// append.
        pub log: Vec<String> => append,
        /// merge.
        pub meta: BTreeMap<String, i64> => merge,
        /// concat_flatten.
        pub flat: Vec<i64> => concat_flatten,
        /// merge_all.
        pub merged: BTreeMap<String, i64> => merge_all,
        /// bounded_append(3).
        pub recent: Vec<i64> => bounded_append(3),
        /// dedupe_append without key.
        pub tags: Vec<String> => dedupe_append,
        /// dedupe_append keyed on the first tuple element.
        pub users: Vec<(u32, String)> => dedupe_append(|u: &(u32, String)| u.0),
        /// merge_by_key keyed on the first tuple element.
        pub records: Vec<(u32, String)> => merge_by_key(|r: &(u32, String)| r.0),
        /// A custom summing reducer that rejects negatives.
        pub total: i64 => custom(no_negative),
    }
}

state! {
    /// A state whose bounded_append bound is invalid.
    #[derive(Default)]
    pub struct BadBound => BadBoundUpdate {
        /// Fine.
        pub ok: i64,
        /// bounded_append(0): reducer_configuration_invalid.
        pub window: Vec<i64> => bounded_append(0),
    }
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn last_write_wins_is_the_default() {
    let a = All::default();
    let b = a.merge(AllUpdate::default().name(s("x"))).unwrap();
    let c = b.merge(AllUpdate::default().name(s("y"))).unwrap();
    assert_eq!(c.name, "y");
    assert_eq!(a.reducer_name("name").as_deref(), Some("last_write_wins"));
}

#[test]
fn append_concatenates_in_order() {
    let a = All {
        log: vec![s("s")],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().log(vec![s("a"), s("b")]))
        .unwrap();
    assert_eq!(b.log, vec![s("s"), s("a"), s("b")]);
    let c = b.merge(AllUpdate::default().log(vec![])).unwrap();
    assert_eq!(c.log, b.log);
}

#[test]
fn merge_is_a_shallow_map_merge_later_wins() {
    let a = All {
        meta: BTreeMap::from([(s("k"), 1), (s("keep"), 7)]),
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().meta(BTreeMap::from([(s("k"), 2), (s("new"), 3)])))
        .unwrap();
    assert_eq!(
        b.meta,
        BTreeMap::from([(s("k"), 2), (s("keep"), 7), (s("new"), 3)])
    );
}

#[test]
fn concat_flatten_flattens_one_level() {
    let a = All {
        flat: vec![1],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().flat(vec![vec![2, 3], vec![], vec![4]]))
        .unwrap();
    assert_eq!(b.flat, vec![1, 2, 3, 4]);
    let c = b.merge(AllUpdate::default().flat(vec![])).unwrap();
    assert_eq!(c.flat, vec![1, 2, 3, 4]);
}

#[test]
fn merge_all_folds_mappings_in_order() {
    let a = All {
        merged: BTreeMap::from([(s("k"), 1)]),
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().merged(vec![
            BTreeMap::from([(s("a"), 1)]),
            BTreeMap::from([(s("k"), 2), (s("a"), 3)]),
        ]))
        .unwrap();
    assert_eq!(b.merged, BTreeMap::from([(s("a"), 3), (s("k"), 2)]));
}

#[test]
fn bounded_append_drops_from_the_front() {
    let a = All {
        recent: vec![1, 2],
        ..All::default()
    };
    let b = a.merge(AllUpdate::default().recent(vec![3, 4])).unwrap();
    assert_eq!(b.recent, vec![2, 3, 4]);
    let c = b
        .merge(AllUpdate::default().recent(vec![5, 6, 7, 8]))
        .unwrap();
    assert_eq!(c.recent, vec![6, 7, 8]);
    assert_eq!(a.reducer_name("recent").as_deref(), Some("bounded_append"));
}

#[test]
fn bounded_append_empty_update_is_a_noop_even_over_the_bound() {
    let a = All {
        recent: vec![1, 2, 3, 4, 5],
        ..All::default()
    };
    let b = a.merge(AllUpdate::default().recent(vec![])).unwrap();
    assert_eq!(b.recent, vec![1, 2, 3, 4, 5]);
}

#[test]
fn dedupe_append_without_key_uses_the_item() {
    let a = All {
        tags: vec![s("s")],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().tags(vec![s("s"), s("a"), s("b"), s("a")]))
        .unwrap();
    assert_eq!(b.tags, vec![s("s"), s("a"), s("b")]);
}

#[test]
fn dedupe_append_with_key_keeps_first_occurrence() {
    let a = All {
        users: vec![(1, s("ann"))],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().users(vec![
            (1, s("ann-again")),
            (2, s("bob")),
            (2, s("bob-again")),
            (3, s("cy")),
        ]))
        .unwrap();
    assert_eq!(b.users, vec![(1, s("ann")), (2, s("bob")), (3, s("cy"))]);
}

#[test]
fn merge_by_key_replaces_in_place_and_appends_novel_keys() {
    let a = All {
        records: vec![(1, s("a")), (2, s("b"))],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().records(vec![(3, s("c")), (1, s("A")), (4, s("d"))]))
        .unwrap();
    assert_eq!(
        b.records,
        vec![(1, s("A")), (2, s("b")), (3, s("c")), (4, s("d"))]
    );
}

#[test]
fn merge_by_key_replaces_the_last_duplicate_and_last_update_wins() {
    let a = All {
        records: vec![(1, s("a")), (1, s("b")), (2, s("c"))],
        ..All::default()
    };
    let b = a
        .merge(AllUpdate::default().records(vec![
            (1, s("B")),
            (2, s("x")),
            (2, s("C")),
            (3, s("d")),
            (3, s("D")),
        ]))
        .unwrap();
    assert_eq!(
        b.records,
        vec![(1, s("a")), (1, s("B")), (2, s("C")), (3, s("D"))]
    );
}

#[test]
fn custom_reducer_applies_and_failures_name_field_and_reducer() {
    let a = All::default();
    let b = a.merge(AllUpdate::default().total(5)).unwrap();
    let c = b.merge(AllUpdate::default().total(2)).unwrap();
    assert_eq!(c.total, 7);
    let err: MergeError = c.merge(AllUpdate::default().total(-1)).unwrap_err();
    assert_eq!(err.field, "total");
    assert_eq!(err.reducer, "custom");
    assert!(err.to_string().contains("negative update -1"), "{err}");
}

#[test]
fn reducer_names_are_the_spec_names() {
    let a = All::default();
    let names: Vec<(String, String)> = a
        .field_names()
        .into_iter()
        .map(|f| {
            let r = a.reducer_name(&f).unwrap();
            (f, r)
        })
        .collect();
    let expected = [
        ("name", "last_write_wins"),
        ("log", "append"),
        ("meta", "merge"),
        ("flat", "concat_flatten"),
        ("merged", "merge_all"),
        ("recent", "bounded_append"),
        ("tags", "dedupe_append"),
        ("users", "dedupe_append"),
        ("records", "merge_by_key"),
        ("total", "custom"),
    ];
    assert_eq!(
        names,
        expected
            .iter()
            .map(|(f, r)| (s(f), s(r)))
            .collect::<Vec<_>>()
    );
    assert_eq!(a.reducer_name("nope"), None);
    assert_eq!(a.reducer_round_trip_idempotent("log"), Some(false));
    assert_eq!(a.reducer_round_trip_idempotent("records"), Some(true));
}

#[test]
fn merge_does_not_mutate_the_prior() {
    let a = All {
        name: s("n"),
        log: vec![s("x")],
        meta: BTreeMap::from([(s("k"), 1)]),
        recent: vec![1, 2, 3],
        records: vec![(1, s("a"))],
        ..All::default()
    };
    let snapshot = a.clone();
    let json_before = a.to_json();
    let b = a
        .merge(
            AllUpdate::default()
                .name(s("m"))
                .log(vec![s("y")])
                .meta(BTreeMap::from([(s("k"), 9)]))
                .recent(vec![4])
                .records(vec![(1, s("A"))]),
        )
        .unwrap();
    assert_eq!(a, snapshot);
    assert_eq!(a.to_json(), json_before);
    assert_ne!(a, b);
    assert_eq!(b.log, vec![s("x"), s("y")]);
}

#[test]
fn empty_update_leaves_state_equal() {
    let a = All {
        name: s("n"),
        log: vec![s("x")],
        ..All::default()
    };
    assert_eq!(a.merge(AllUpdate::default()).unwrap(), a);
}

#[test]
fn check_schema_accepts_valid_and_rejects_zero_bound() {
    assert!(All::default().check_schema().is_ok());
    let err = BadBound::default().check_schema().unwrap_err();
    assert_eq!(err.category(), "reducer_configuration_invalid");
    match &err {
        openarmature_graph::CompileError::ReducerConfigurationInvalid { field, .. } => {
            assert_eq!(field, "window");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn graph_compile_fails_with_zero_bound() {
    let result = GraphBuilder::new(BadBound::default())
        .add_node("a", |_s: Arc<BadBound>, _c: NodeCtx| async move {
            Ok(BadBoundUpdate::default().ok(1))
        })
        .add_edge("a", END)
        .entry("a")
        .compile();
    let err = result.err().expect("compile must fail");
    assert_eq!(err.category(), "reducer_configuration_invalid");
}

#[test]
fn to_json_and_field_json() {
    let a = All {
        name: s("n"),
        log: vec![s("x")],
        records: vec![(1, s("a"))],
        ..All::default()
    };
    let j = a.to_json();
    assert_eq!(j["name"], json!("n"));
    assert_eq!(j["log"], json!(["x"]));
    assert_eq!(a.field_json("log"), Some(json!(["x"])));
    assert_eq!(a.field_json("records"), Some(json!([[1, "a"]])));
    assert_eq!(a.field_json("meta"), Some(json!({})));
    assert_eq!(a.field_json("nope"), None);
}

#[test]
fn with_field_json_sets_or_rejects() {
    let a = All::default();
    let b = a.with_field_json("log", json!(["p", "q"])).unwrap();
    assert_eq!(b.log, vec![s("p"), s("q")]);
    assert!(a.log.is_empty(), "with_field_json must not mutate");
    // with_field_json replaces: it does not go through the reducer.
    let c = b.with_field_json("log", json!(["r"])).unwrap();
    assert_eq!(c.log, vec![s("r")]);

    let err = a.with_field_json("name", json!(5)).unwrap_err();
    assert_eq!(err.fields, vec![s("name")]);
    let err = a.with_field_json("nope", json!(1)).unwrap_err();
    assert_eq!(err.fields, vec![s("nope")]);
}

#[test]
fn update_from_json_builds_a_reducer_update() {
    let a = All {
        log: vec![s("x")],
        recent: vec![1, 2, 3],
        ..All::default()
    };
    let update = a
        .update_from_json(vec![
            (s("log"), json!(["y"])),
            (s("recent"), json!([4])),
            (s("name"), json!("nm")),
            (s("flat"), json!([[7], [8, 9]])),
        ])
        .unwrap();
    let b = a.merge(update).unwrap();
    assert_eq!(b.log, vec![s("x"), s("y")]);
    assert_eq!(b.recent, vec![2, 3, 4]);
    assert_eq!(b.name, "nm");
    assert_eq!(b.flat, vec![7, 8, 9]);

    let err = a
        .update_from_json(vec![(s("log"), json!("not a list"))])
        .unwrap_err();
    assert_eq!(err.fields, vec![s("log")]);
    let err = a
        .update_from_json(vec![(s("ghost"), json!(1))])
        .unwrap_err();
    assert_eq!(err.fields, vec![s("ghost")]);
}

#[test]
fn update_field_json_reads_one_written_field_as_update_json_maps_it() {
    let update = AllUpdate::default()
        .name("ann".into())
        .flat(vec![vec![1, 2], vec![3]]);
    let whole = All::update_json(&update);
    for field in ["name", "flat", "log", "undeclared"] {
        assert_eq!(
            All::update_field_json(&update, field),
            whole.get(field).cloned(),
            "{field}"
        );
    }
    assert_eq!(All::update_field_json(&update, "name"), Some(json!("ann")));
    assert_eq!(All::update_field_json(&update, "log"), None, "not written");

    use openarmature_graph::{DynState, DynUpdate};
    let mut dynamic = DynUpdate::new();
    dynamic.fields.push(("n".into(), json!(1)));
    dynamic.fields.push(("n".into(), json!(2)));
    assert_eq!(
        DynState::update_field_json(&dynamic, "n"),
        DynState::update_json(&dynamic).get("n").cloned(),
        "a repeated field reads its last write"
    );
    assert_eq!(DynState::update_field_json(&dynamic, "m"), None);
}
