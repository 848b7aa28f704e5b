//! Spec: prompt-management §4 (`rendered_hash`), §6 (`get` ≡ fetch + render), §10
//! (`PromptGroup`), §13 (determinism, cross-variable substring stability);
//! conformance-adapter §6.8 (`source_read_count`) — the assertions checked after every
//! call of a scenario.
//!
//! [`SCENARIO_CHECKS`] maps each scenario-level block to its check. Inside `expected`,
//! a key is an assertion of [`EXPECTED_CHECKS`] or the name of a capture, whose fields
//! are matched like a call's `expected.prompt` / `expected.prompt_result`; anything else
//! is `fixture_directive_unknown`.

use openarmature_prompt::PromptResult;
use serde_json::Value as Json;

use super::expect::expect_record;
use super::loc::Loc;
use super::model::{typed, Equivalence, GroupExpect, Scenario};
use super::record::{message_at, Captured};
use super::world::World;

use crate::failure::{ensure, Check};

type ScenarioCheck = fn(&Scenario, &World, &Loc) -> Check;

/// Scenario-level blocks, checked in this order.
pub(super) const SCENARIO_CHECKS: &[(&str, ScenarioCheck)] = &[
    ("expected", expected),
    ("expected_backend_state", backend_state),
    ("expected_shared_prefix", shared_prefix),
    ("expected_message_equal", message_equal),
];

type ExpectedCheck = fn(&Json, &World, &Loc) -> Check;

/// Named assertions inside `expected`.
const EXPECTED_CHECKS: &[(&str, ExpectedCheck)] = &[
    ("result_equivalence", result_equivalence),
    ("prompt_group", prompt_group),
    ("rendered_hash_equal", |v, w, l| hash_pairs(v, w, l, true)),
    ("rendered_hash_different", |v, w, l| {
        hash_pairs(v, w, l, false)
    }),
];

fn expected(s: &Scenario, world: &World, loc: &Loc) -> Check {
    for (key, value) in &s.expected {
        let at = loc.join(key);
        if let Some((_, check)) = EXPECTED_CHECKS.iter().find(|(name, _)| name == key) {
            check(value, world, &at)?;
        } else if let Some(captured) = world.capture(key) {
            expect_record(captured, value, &at)?;
        } else {
            return Err(loc.unknown(key).into());
        }
    }
    Ok(())
}

/// The captured record `name`.
fn captured<'w>(world: &'w World, name: &str, loc: &Loc) -> Check<&'w Captured> {
    world
        .capture(name)
        .ok_or_else(|| loc.invalid(format!("`{name}` names no capture")).into())
}

/// The captured prompt result `name`.
fn result<'w>(world: &'w World, name: &str, loc: &Loc) -> Check<&'w PromptResult> {
    captured(world, name, loc)?.result().ok_or_else(|| {
        loc.invalid(format!("`{name}` is not a prompt result"))
            .into()
    })
}

/// At least two capture names.
fn pair_or_more<'a>(names: &'a [String], loc: &Loc) -> Check<&'a [String]> {
    if names.len() < 2 {
        return Err(loc.invalid("name at least two captures").into());
    }
    Ok(names)
}

fn result_equivalence(value: &Json, world: &World, loc: &Loc) -> Check {
    let want: Equivalence = typed(value, loc)?;
    let names = pair_or_more(&want.of, &loc.join("of"))?;
    let views = names
        .iter()
        .map(|n| {
            captured(world, n, loc)?
                .view()
                .ok_or_else(|| loc.invalid(format!("`{n}` is not a record")).into())
        })
        .collect::<Check<Vec<_>>>()?;
    let (first, rest) = views
        .split_first()
        .ok_or_else(|| loc.invalid("nothing to compare"))?;
    for field in want.fields_may_differ.iter().chain(&want.fields_must_match) {
        if views.iter().any(|v| !v.contains_key(field)) {
            return Err(loc
                .invalid(format!("`{field}` is not a field of every capture"))
                .into());
        }
    }
    for field in &want.fields_must_match {
        for (name, view) in names.iter().skip(1).zip(rest) {
            ensure(view.get(field) == first.get(field), || {
                format!(
                    "{}: `{field}` differs between `{}` ({:?}) and `{name}` ({:?})",
                    loc.path(),
                    names[0],
                    first.get(field),
                    view.get(field)
                )
            })?;
        }
    }
    Ok(())
}

fn prompt_group(value: &Json, world: &World, loc: &Loc) -> Check {
    let want: GroupExpect = typed(value, loc)?;
    let Captured::Group { group, members } = captured(world, &want.of, loc)? else {
        return Err(loc
            .invalid(format!("`{}` is not a prompt group", want.of))
            .into());
    };
    if let Some(name) = &want.group_name {
        ensure(group.group_name() == name, || {
            format!(
                "{}: group_name is {:?}, expected {name:?}",
                loc.path(),
                group.group_name()
            )
        })?;
    }
    if let Some(n) = want.member_count {
        ensure(group.len() == n, || {
            format!("{}: {} members, expected {n}", loc.path(), group.len())
        })?;
    }
    if let Some(preserved) = want.member_order_preserved {
        let inputs = members
            .iter()
            .map(|m| result(world, m, loc))
            .collect::<Result<Vec<_>, _>>()?;
        let same = group.members().iter().eq(inputs);
        ensure(same == preserved, || {
            format!(
                "{}: members in construction order = {same}, expected {preserved}",
                loc.path()
            )
        })?;
    }
    if let Some(names) = &want.member_names {
        let got: Vec<&str> = group.members().iter().map(PromptResult::name).collect();
        ensure(got == *names, || {
            format!("{}: member names {got:?}, expected {names:?}", loc.path())
        })?;
    }
    Ok(())
}

fn hash_pairs(value: &Json, world: &World, loc: &Loc, equal: bool) -> Check {
    let pairs: Vec<Vec<String>> = typed(value, loc)?;
    for (i, pair) in pairs.iter().enumerate() {
        let at = loc.join(&i.to_string());
        let names = pair_or_more(pair, &at)?;
        let first = result(world, &names[0], &at)?;
        for name in &names[1..] {
            let other = result(world, name, &at)?;
            let same = first.rendered_hash() == other.rendered_hash();
            ensure(same == equal, || {
                format!(
                    "{}: rendered_hash of `{}` ({}) and `{name}` ({}) are {}",
                    at.path(),
                    names[0],
                    first.rendered_hash(),
                    other.rendered_hash(),
                    if same { "equal" } else { "different" }
                )
            })?;
        }
    }
    Ok(())
}

fn backend_state(s: &Scenario, world: &World, loc: &Loc) -> Check {
    let Some(state) = &s.expected_backend_state else {
        return Ok(());
    };
    for (name, want) in state {
        let backend = world
            .backend(name)
            .ok_or_else(|| loc.join(name).invalid(format!("no backend named `{name}`")))?;
        ensure(backend.source_reads() == want.source_read_count, || {
            format!(
                "{}: backend `{name}` read its source {} time(s), expected {}",
                loc.path(),
                backend.source_reads(),
                want.source_read_count
            )
        })?;
    }
    Ok(())
}

fn shared_prefix(s: &Scenario, world: &World, loc: &Loc) -> Check {
    let Some(want) = &s.expected_shared_prefix else {
        return Ok(());
    };
    for name in pair_or_more(&want.between, &loc.join("between"))? {
        let message = message_at(result(world, name, loc)?, want.message_index);
        let text = message.get("content").and_then(Json::as_str);
        ensure(text.is_some_and(|t| t.starts_with(&want.prefix)), || {
            format!(
                "{}: `{name}` message {} is {message}, which does not start with {:?}",
                loc.path(),
                want.message_index,
                want.prefix
            )
        })?;
    }
    Ok(())
}

fn message_equal(s: &Scenario, world: &World, loc: &Loc) -> Check {
    let Some(want) = &s.expected_message_equal else {
        return Ok(());
    };
    let names = pair_or_more(&want.between, &loc.join("between"))?;
    let results = names
        .iter()
        .map(|n| result(world, n, loc))
        .collect::<Result<Vec<_>, _>>()?;
    for &index in &want.message_indices {
        let first = message_at(results[0], index);
        ensure(!first.is_null(), || {
            format!("{}: `{}` has no message {index}", loc.path(), names[0])
        })?;
        for (name, r) in names.iter().zip(&results).skip(1) {
            let other = message_at(r, index);
            ensure(other == first, || {
                format!(
                    "{}: message {index} of `{}` is {first}, of `{name}` {other}",
                    loc.path(),
                    names[0]
                )
            })?;
        }
    }
    Ok(())
}
