//! Spec: prompt-management §3–§11, conformance-adapter §5.13 — a call's `expected`
//! block, checked right after the call.
//!
//! Keys are looked up in [`CALL_CHECKS`]; `<backend>_backend_call_count: <n>` (008)
//! names a declared backend's fetch count during the call (register P2). Any other key
//! is `fixture_directive_unknown`. A call that raises without an `expected.raises`
//! fails the case.
//!
//! `raises.carries` keys follow §5.13: a bare field name is exact equality, `_present`
//! asserts presence, `_mentions` a substring; the field must be one the raised error
//! exposes (§11: a render error's `name`, `version`, `label`, `variables`,
//! `description`).

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use super::loc::Loc;
use super::model::{typed, RaisesExpect, RecordExpect};
use super::record::{error_view, Captured};
use super::step::Outcome;
use super::world::World;
use crate::failure::{ensure, Check, Failure};
use crate::matchers::{self, Bindings};

/// What a per-call check sees.
struct CallCtx<'a> {
    outcome: &'a Outcome,
    /// Fetches each backend received during the call.
    fetches: &'a HashMap<String, usize>,
    loc: Loc,
}

type CallCheck = fn(&Json, &CallCtx<'_>) -> Check;

/// Per-call assertions by key.
const CALL_CHECKS: &[(&str, CallCheck)] = &[
    ("prompt", |v, c| record(v, c, "prompt")),
    ("prompt_result", |v, c| record(v, c, "prompt_result")),
    ("raises", raises),
    ("backend_call_counts", call_counts),
];

/// `<backend>_backend_call_count`.
const CALL_COUNT_SUFFIX: &str = "_backend_call_count";

/// Checks `expected` against a call's `outcome`.
pub(super) fn check_call(
    expected: &Map<String, Json>,
    outcome: &Outcome,
    fetches: &HashMap<String, usize>,
    world: &World,
    loc: &Loc,
) -> Check {
    if let Outcome::Raised(e) = outcome {
        ensure(expected.contains_key("raises"), || {
            format!("{}: the call raised {}: {e}", loc.path(), e.category())
        })?;
    }
    for (key, value) in expected {
        let ctx = CallCtx {
            outcome,
            fetches,
            loc: loc.join(key),
        };
        if let Some((_, check)) = CALL_CHECKS.iter().find(|(name, _)| name == key) {
            check(value, &ctx)?;
        } else if let Some(backend) = key
            .strip_suffix(CALL_COUNT_SUFFIX)
            .filter(|b| world.backend(b).is_some())
        {
            let want: usize = typed(value, &ctx.loc)?;
            count(backend, want, &ctx)?;
        } else {
            return Err(loc.unknown(key).into());
        }
    }
    Ok(())
}

fn record(value: &Json, ctx: &CallCtx<'_>, kind: &str) -> Check {
    let want: RecordExpect = typed(value, &ctx.loc)?;
    match ctx.outcome {
        Outcome::Value(c) if c.kind() == kind => want.check(c, ctx.loc.path()),
        Outcome::Value(c) => Err(Failure::mismatch(format!(
            "{}: expected a {kind}, the call produced a {}",
            ctx.loc.path(),
            c.kind()
        ))),
        Outcome::Raised(e) => Err(Failure::mismatch(format!(
            "{}: expected a {kind}, the call raised {}: {e}",
            ctx.loc.path(),
            e.category()
        ))),
        Outcome::Done => Err(ctx
            .loc
            .invalid("this call produces nothing to check")
            .into()),
    }
}

fn raises(value: &Json, ctx: &CallCtx<'_>) -> Check {
    let want: RaisesExpect = typed(value, &ctx.loc)?;
    let error = match ctx.outcome {
        Outcome::Raised(e) => e,
        Outcome::Value(c) => {
            return Err(Failure::mismatch(format!(
                "{}: expected {}, the call returned a {}",
                ctx.loc.path(),
                want.category,
                c.kind()
            )))
        }
        Outcome::Done => return Err(ctx.loc.invalid("this call cannot raise").into()),
    };
    let category = error.category().to_string();
    ensure(category == want.category, || {
        format!(
            "{}: expected {}, got {category}: {error}",
            ctx.loc.path(),
            want.category
        )
    })?;
    let fields = error_view(error);
    let carries = ctx.loc.join("carries");
    for (key, expected) in &want.carries {
        carry(key, expected, &fields, &carries)?;
    }
    Ok(())
}

type Flavor = fn(&Json, &Json, &str) -> Check;

/// The §5.13 assertion flavors by key suffix (a bare key is exact equality).
const FLAVORS: &[(&str, Flavor)] = &[("_present", present), ("_mentions", mentions)];

fn carry(key: &str, expected: &Json, fields: &Map<String, Json>, loc: &Loc) -> Check {
    let (field, flavor) = FLAVORS
        .iter()
        .find_map(|(suffix, f)| key.strip_suffix(suffix).map(|field| (field, *f)))
        .unwrap_or((key, exact));
    let actual = fields.get(field).ok_or_else(|| loc.unknown(key))?;
    flavor(expected, actual, loc.join(key).path())
}

fn exact(expected: &Json, actual: &Json, at: &str) -> Check {
    matchers::check(expected, actual, &mut Bindings::default(), at)
}

fn present(expected: &Json, actual: &Json, at: &str) -> Check {
    let want = expected
        .as_bool()
        .ok_or_else(|| Failure::mismatch(format!("{at}: a `_present` value is a boolean")))?;
    ensure(actual.is_null() != want, || {
        format!("{at}: expected present = {want}, got {actual}")
    })
}

fn mentions(expected: &Json, actual: &Json, at: &str) -> Check {
    let needle = expected
        .as_str()
        .ok_or_else(|| Failure::mismatch(format!("{at}: a `_mentions` value is a string")))?;
    ensure(actual.as_str().is_some_and(|s| s.contains(needle)), || {
        format!("{at}: {actual} does not mention {needle:?}")
    })
}

fn call_counts(value: &Json, ctx: &CallCtx<'_>) -> Check {
    let want: HashMap<String, usize> = typed(value, &ctx.loc)?;
    for (backend, n) in want {
        if !ctx.fetches.contains_key(&backend) {
            return Err(ctx
                .loc
                .invalid(format!("no backend named `{backend}`"))
                .into());
        }
        count(&backend, n, ctx)?;
    }
    Ok(())
}

fn count(backend: &str, want: usize, ctx: &CallCtx<'_>) -> Check {
    let got = ctx.fetches.get(backend).copied().unwrap_or(0);
    ensure(got == want, || {
        format!(
            "{}: backend `{backend}` was fetched {got} time(s) during the call, expected {want}",
            ctx.loc.path()
        )
    })
}

/// A captured value kind check for fixture-level expectations.
pub(super) fn expect_record(captured: &Captured, value: &Json, loc: &Loc) -> Check {
    let want: RecordExpect = typed(value, loc)?;
    want.check(captured, loc.path())
}
