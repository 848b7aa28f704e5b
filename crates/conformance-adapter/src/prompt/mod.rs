//! Spec: prompt-management §3–§13, conformance-adapter §3.2 and §6.8 — the
//! prompt-management runner.
//!
//! A case is a *scenario*: the fixture root (minus `cases`, `conformance_version`,
//! `description`) overlaid key by key by the case (minus `name`, `description`), read
//! into the typed [`model::Scenario`]. Running it:
//!
//! 1. [`world::World::build`] preloads one [`backend::HarnessBackend`] per
//!    `backends[]` entry and builds the declared managers (`manager`,
//!    `secondary_manager`, `tertiary_manager`) over them;
//! 2. `calls`, then `secondary_calls`, then `tertiary_calls` run in order: each entry
//!    is validated into a [`step::Step`], run through the crate's public API, checked
//!    against its own `expected` ([`expect`]) and captured under `capture_as`;
//! 3. the scenario-level blocks are checked ([`checks::SCENARIO_CHECKS`]).
//!
//! The runner uses the crate's `PromptManager`, `PromptGroup`, renderer and in-memory
//! store; only the fixture conventions (fetch counting, the §6.8 caching backend and
//! clock, simulated outages) live here, in register P1–P4 (REGISTER.md).

mod backend;
mod checks;
mod expect;
mod loc;
mod model;
mod record;
mod step;
mod world;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value as Json};

use crate::failure::Check;
use crate::yaml::Y;
use crate::AdapterError;
use loc::Loc;
use model::{typed, CallDecl, Scenario};
use step::{Outcome, Step};
use world::World;

/// Root keys that describe the file rather than the scenario.
const ROOT_META: &[&str] = &["conformance_version", "cases", "description"];
/// Case keys that describe the case rather than the scenario.
const CASE_META: &[&str] = &["name", "description"];

/// Runs one prompt-management case (`case` is `root` for a fixture without `cases`).
pub(crate) async fn run_case(root: &Y<'_>, case: &Y<'_>) -> Check {
    run(root, case).await
}

async fn run(root: &Y<'_>, case: &Y<'_>) -> Check {
    let is_root = std::ptr::eq(root.value, case.value);
    let loc = Loc::new(root.file, if is_root { "" } else { case.location() });
    let scenario: Scenario = typed(&scenario_json(root, case, is_root)?, &loc)?;
    let mut world = World::build(&scenario, &loc)?;
    let lists = [
        ("calls", &scenario.calls),
        ("secondary_calls", &scenario.secondary_calls),
        ("tertiary_calls", &scenario.tertiary_calls),
    ];
    for (list, calls) in lists {
        for (i, raw) in calls.iter().enumerate() {
            run_call(raw, &loc.join(&format!("{list}.{i}")), &mut world).await?;
        }
    }
    for (block, check) in checks::SCENARIO_CHECKS {
        check(&scenario, &world, &loc.join(block))?;
    }
    Ok(())
}

/// The root's scenario keys overlaid by the case's.
fn scenario_json(root: &Y<'_>, case: &Y<'_>, is_root: bool) -> Result<Json, AdapterError> {
    let mut merged = Map::new();
    let mut layers = vec![(root, ROOT_META)];
    if !is_root {
        layers.push((case, CASE_META));
    }
    for (layer, meta) in layers {
        for (key, value) in layer.entries()? {
            if !meta.contains(&key.as_str()) {
                merged.insert(key, value.json()?);
            }
        }
    }
    Ok(Json::Object(merged))
}

async fn run_call(raw: &Json, loc: &Loc, world: &mut World) -> Check {
    let decl: CallDecl = typed(raw, loc)?;
    let step = Step::from_decl(&decl, loc)?;
    let before = world.fetch_counts();
    let outcome = step.run(world, loc).await?;
    let fetches = world
        .fetch_counts()
        .into_iter()
        .map(|(name, n)| {
            let was = before.get(&name).copied().unwrap_or(0);
            (name, n.saturating_sub(was))
        })
        .collect();
    expect::check_call(
        &decl.expected,
        &outcome,
        &fetches,
        world,
        &loc.join("expected"),
    )?;
    if let (Some(name), Outcome::Value(captured)) = (decl.capture_as, outcome) {
        world.set_capture(name, *captured);
    }
    Ok(())
}
