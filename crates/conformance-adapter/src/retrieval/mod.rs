//! Spec: retrieval-provider §3–§8 / §10 and conformance-adapter §5.14 / §5.15 — the
//! retrieval-provider runner.
//!
//! A fixture file is parsed into the typed model of [`model`] (any key it does not
//! declare is a `fixture_directive_unknown` error). Each case runs on its own
//! **unpaused** current-thread runtime in a dedicated thread (real sockets and
//! reqwest timers do not mix with the graph runner's paused clock): the case's graph
//! is built, its calling node binds the provider of the fixture's `mapping:`
//! ([`providers`]) against a 127.0.0.1 mock replaying `mock_embedding` /
//! `mock_rerank` ([`crate::http_mock`]), and the invocation runs ([`exec`]). The
//! outcome, the stored record, the wire requests and the typed events are then
//! asserted: `expected_error` / `final_state` / the wire directives / `observers`
//! ([`expect`]) and the named invariants, a table ([`invariants`]) over the
//! observations of [`facts`] and the wire oracles of [`oracle`].
//!
//! Register of fixture-shaped conventions (the retrieval-provider part of the
//! adapter register, V1–V5): V1 host resolution and `https` dialled as `http`
//! ([`providers`]); V2 the stand-in mappings of the pre-wire-mapping fixtures
//! ([`providers`], [`standin`]); V3 the calling node and its stored record
//! ([`exec`]); V4 `expected_error.category` is the carried §7 category and V5 the
//! `final_state` record assertions ([`expect`]).

mod exec;
mod expect;
mod facts;
mod invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
mod model;
mod oracle;
mod providers;
mod standin;

use std::path::{Path, PathBuf};

use self::model::{Case, Fixture};
use self::providers::Mapping;
use crate::failure::Check;
use crate::shared::on_own_runtime;
use crate::AdapterError;

/// The event types `contains_event` can name.
const EVENT_TYPES: &[&str] = &[
    "EmbeddingEvent",
    "EmbeddingFailedEvent",
    "RerankEvent",
    "RerankFailedEvent",
];

/// Rejects directive values the runner does not implement, before anything runs.
fn check_case(case: &Case, file: &Path, at: &str) -> Result<(), AdapterError> {
    let unknown = |directive: String, location: String| AdapterError::DirectiveUnknown {
        file: file.to_path_buf(),
        directive,
        location,
    };
    for name in case.expected.invariants.keys() {
        if crate::table::lookup(invariants::TABLE, name).is_none() {
            return Err(unknown(name.clone(), format!("{at}.expected.invariants")));
        }
    }
    for (i, o) in case.typed_observers.iter().enumerate() {
        if o.kind != "typed_event_collector" {
            return Err(unknown(
                format!("kind: {}", o.kind),
                format!("{at}.typed_observers[{i}]"),
            ));
        }
    }
    for (name, o) in &case.expected.observers {
        if let Some(c) = &o.contains_event {
            if !EVENT_TYPES.contains(&c.event_type.as_str()) {
                return Err(unknown(
                    format!("event_type: {}", c.event_type),
                    format!("{at}.expected.observers.{name}.contains_event"),
                ));
            }
        }
    }
    Ok(())
}

/// Parses and checks the file, and finds the case.
fn prepare<'f>(
    fixture: &'f Fixture,
    file: &Path,
    name: Option<&str>,
) -> Result<(Mapping, &'f Case), AdapterError> {
    fixture.check(file)?;
    let mapping = Mapping::parse(fixture.mapping.as_deref()).ok_or_else(|| {
        AdapterError::DirectiveUnknown {
            file: file.to_path_buf(),
            directive: format!("mapping: {}", fixture.mapping.as_deref().unwrap_or("")),
            location: "document".into(),
        }
    })?;
    let index = match name {
        Some(n) => fixture.cases.iter().position(|c| c.name == n),
        None if fixture.cases.len() == 1 => Some(0),
        None => None,
    }
    .ok_or_else(|| AdapterError::SchemaInvalid {
        file: file.to_path_buf(),
        location: "cases".into(),
        message: format!("no case named {name:?}"),
    })?;
    let case = &fixture.cases[index];
    check_case(case, file, &format!("cases[{index}]"))?;
    Ok((mapping, case))
}

async fn run(doc: &serde_norway::Value, file: &Path, name: Option<&str>) -> Check {
    let fixture = Fixture::parse(doc, file)?;
    let (mapping, case) = prepare(&fixture, file, name)?;
    let mut run = exec::run(&fixture, mapping, case, file).await?;
    if !run.overruns.is_empty() {
        return Err(format!("mock provider exhausted: {}", run.overruns.join("; ")).into());
    }
    if invariants::needs_probe(case.expected.invariants.keys()) {
        run.probe = Some(exec::probe_body(&fixture, mapping, case, run.call).await);
    }
    expect::outcome(&run)?;
    expect::final_state(&run)?;
    expect::wire(&run)?;
    expect::observers(&run)?;
    invariants::all(&run)
}

/// Runs one retrieval-provider case on a fresh unpaused runtime in its own thread.
pub(crate) async fn run_case(file: &Path, doc: &serde_norway::Value, case: Option<&str>) -> Check {
    let file: PathBuf = file.to_path_buf();
    let doc = doc.clone();
    let case = case.map(str::to_owned);
    on_own_runtime("retrieval-provider-case", move || async move {
        run(&doc, &file, case.as_deref()).await
    })
    .await
}
