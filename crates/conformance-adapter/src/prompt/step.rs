//! Spec: prompt-management §5 (`fetch`), §6 (`fetch` / `render` / `get`), §10
//! (`PromptGroup` construction); conformance-adapter §6.8 (`advance_clock`) — one
//! `calls` entry, validated into a [`Step`] and run.
//!
//! Targets: `{backend: <name>}` (fetch, advance_clock), a manager slot (`manager`,
//! `{manager: true}`, `secondary_manager`, `tertiary_manager`: fetch, render, get) and
//! `construct_prompt_group`. A field that does not apply to the call's operation is
//! `fixture_schema_invalid`; an unknown target or operation is
//! `fixture_directive_unknown`.
//!
//! A backend fetch without `label` uses the §5 default `"production"`. A render names
//! its prompt by `fetched_prompt_ref` (a captured fetch) or by `fetched_prompt: {name,
//! label}`, fetched through the target manager first (register P3).

use std::collections::HashMap;

use openarmature_llm::Message;
use openarmature_prompt::{
    FetchOptions, PromptBackend, PromptError, PromptGroup, PromptManager, DEFAULT_LABEL,
};
use serde_json::{Map, Value as Json};

use super::loc::Loc;
use super::model::{CallDecl, Operation, TargetDecl};
use super::record::Captured;
use super::world::{is_manager_slot, World};
use crate::failure::Check;
use crate::AdapterError;

/// The fields each operation accepts (besides `target`, `operation`, `capture_as`,
/// `expected`).
const FIELDS: &[(&str, &[&str])] = &[
    ("fetch", &["name", "label", "cache_ttl_seconds"]),
    (
        "render",
        &[
            "fetched_prompt",
            "fetched_prompt_ref",
            "variables",
            "placeholders",
        ],
    ),
    ("get", &["name", "label", "variables", "cache_ttl_seconds"]),
    ("advance_clock", &["seconds"]),
    ("construct_prompt_group", &["group_name", "members_refs"]),
];

/// Where a fetch goes.
#[derive(Debug)]
pub(super) enum Via {
    /// Straight to a backend (§5).
    Backend(String),
    /// Through a manager slot (§6, §9).
    Manager(String),
}

/// Which prompt a render renders.
#[derive(Debug)]
pub(super) enum Source {
    /// `fetched_prompt: {name, label}`.
    Fetch { name: String, label: Option<String> },
    /// `fetched_prompt_ref: <capture>`.
    Capture(String),
}

/// A validated call.
#[derive(Debug)]
pub(super) enum Step {
    Fetch {
        via: Via,
        name: String,
        label: Option<String>,
        ttl: Option<u64>,
    },
    Render {
        manager: String,
        source: Source,
        variables: Map<String, Json>,
        placeholders: Option<HashMap<String, Vec<Message>>>,
    },
    Get {
        manager: String,
        name: String,
        label: Option<String>,
        variables: Map<String, Json>,
        ttl: Option<u64>,
    },
    AdvanceClock {
        backend: String,
        seconds: u64,
    },
    ConstructGroup {
        group_name: String,
        members: Vec<String>,
    },
}

/// What running a step produced.
#[derive(Debug)]
pub(super) enum Outcome {
    /// A prompt, a result or a group.
    Value(Box<Captured>),
    /// The implementation raised.
    Raised(PromptError),
    /// Nothing to capture (`advance_clock`).
    Done,
}

/// The fields `decl` sets, by name.
fn present(decl: &CallDecl) -> Vec<&'static str> {
    [
        ("name", decl.name.is_some()),
        ("label", decl.label.is_some()),
        ("cache_ttl_seconds", decl.cache_ttl_seconds.is_some()),
        ("fetched_prompt", decl.fetched_prompt.is_some()),
        ("fetched_prompt_ref", decl.fetched_prompt_ref.is_some()),
        ("variables", decl.variables.is_some()),
        ("placeholders", decl.placeholders.is_some()),
        ("seconds", decl.seconds.is_some()),
        ("group_name", decl.group_name.is_some()),
        ("members_refs", decl.members_refs.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, set)| set.then_some(field))
    .collect()
}

fn required<T: Clone>(value: &Option<T>, field: &str, loc: &Loc) -> Result<T, AdapterError> {
    value
        .clone()
        .ok_or_else(|| loc.invalid(format!("missing required directive `{field}`")))
}

impl Step {
    /// Validates a call declaration.
    pub(super) fn from_decl(decl: &CallDecl, loc: &Loc) -> Result<Step, AdapterError> {
        enum Target {
            Backend(String),
            Manager(String),
            Group,
        }
        let target = match &decl.target {
            TargetDecl::Named(n) if n == "construct_prompt_group" => Target::Group,
            TargetDecl::Named(n) if is_manager_slot(n) => Target::Manager(n.clone()),
            TargetDecl::Named(n) => return Err(loc.join("target").unknown_value(n)),
            TargetDecl::Manager(m) if m.manager => Target::Manager("manager".to_owned()),
            TargetDecl::Manager(_) => {
                return Err(loc
                    .join("target")
                    .invalid("`{manager: false}` targets nothing"))
            }
            TargetDecl::Backend(b) => Target::Backend(b.backend.clone()),
        };
        let op_name = match (&target, decl.operation) {
            (Target::Group, None) => "construct_prompt_group",
            (Target::Group, Some(_)) => {
                return Err(loc.invalid("construct_prompt_group takes no `operation`"))
            }
            (_, None) => return Err(loc.invalid("missing required directive `operation`")),
            (Target::Backend(_), Some(Operation::Fetch))
            | (Target::Manager(_), Some(Operation::Fetch)) => "fetch",
            (Target::Backend(_), Some(Operation::AdvanceClock)) => "advance_clock",
            (Target::Manager(_), Some(Operation::Render)) => "render",
            (Target::Manager(_), Some(Operation::Get)) => "get",
            (_, Some(op)) => {
                return Err(loc.invalid(format!("operation {op:?} does not apply to this target")))
            }
        };
        let allowed = FIELDS
            .iter()
            .find(|(op, _)| *op == op_name)
            .map_or(&[][..], |(_, fields)| *fields);
        if let Some(extra) = present(decl).into_iter().find(|f| !allowed.contains(f)) {
            return Err(loc
                .join(extra)
                .invalid(format!("`{extra}` does not apply to {op_name}")));
        }
        let variables = decl.variables.clone().unwrap_or_default();
        Ok(match target {
            Target::Group => Step::ConstructGroup {
                group_name: required(&decl.group_name, "group_name", loc)?,
                members: required(&decl.members_refs, "members_refs", loc)?,
            },
            Target::Backend(backend) if op_name == "advance_clock" => Step::AdvanceClock {
                backend,
                seconds: required(&decl.seconds, "seconds", loc)?,
            },
            Target::Backend(backend) => Step::Fetch {
                via: Via::Backend(backend),
                name: required(&decl.name, "name", loc)?,
                label: decl.label.clone(),
                ttl: decl.cache_ttl_seconds,
            },
            Target::Manager(manager) => match op_name {
                "fetch" => Step::Fetch {
                    via: Via::Manager(manager),
                    name: required(&decl.name, "name", loc)?,
                    label: decl.label.clone(),
                    ttl: decl.cache_ttl_seconds,
                },
                "get" => Step::Get {
                    manager,
                    name: required(&decl.name, "name", loc)?,
                    label: decl.label.clone(),
                    variables,
                    ttl: decl.cache_ttl_seconds,
                },
                _ => Step::Render {
                    manager,
                    source: match (&decl.fetched_prompt, &decl.fetched_prompt_ref) {
                        (Some(p), None) => Source::Fetch {
                            name: p.name.clone(),
                            label: p.label.clone(),
                        },
                        (None, Some(r)) => Source::Capture(r.clone()),
                        _ => {
                            return Err(loc.invalid(
                                "a render names exactly one of `fetched_prompt` and `fetched_prompt_ref`",
                            ))
                        }
                    },
                    variables,
                    placeholders: decl.placeholders.clone(),
                },
            },
        })
    }

    /// Runs the step against `world`.
    pub(super) async fn run(&self, world: &World, loc: &Loc) -> Check<Outcome> {
        let raised = |r: Result<Captured, PromptError>| match r {
            Ok(c) => Outcome::Value(Box::new(c)),
            Err(e) => Outcome::Raised(e),
        };
        Ok(match self {
            Step::Fetch {
                via: Via::Backend(b),
                name,
                label,
                ttl,
            } => {
                let backend = world.backend(b).ok_or_else(|| {
                    loc.join("target")
                        .invalid(format!("no backend named `{b}`"))
                })?;
                let label = label.as_deref().unwrap_or(DEFAULT_LABEL);
                raised(backend.fetch(name, label, *ttl).await.map(Captured::Prompt))
            }
            Step::Fetch {
                via: Via::Manager(m),
                name,
                label,
                ttl,
            } => {
                let manager = manager(world, m, loc)?;
                let fetched = manager.fetch_with(name, &options(label, *ttl)).await;
                raised(fetched.map(Captured::Prompt))
            }
            Step::Render {
                manager: m,
                source,
                variables,
                placeholders,
            } => {
                let manager = manager(world, m, loc)?;
                let prompt = match source {
                    Source::Fetch { name, label } => {
                        match manager.fetch_with(name, &options(label, None)).await {
                            Ok(p) => p,
                            Err(e) => return Ok(Outcome::Raised(e)),
                        }
                    }
                    Source::Capture(c) => match world.capture(c) {
                        Some(Captured::Prompt(p)) => p.clone(),
                        _ => {
                            return Err(loc
                                .join("fetched_prompt_ref")
                                .invalid(format!("`{c}` names no captured prompt"))
                                .into())
                        }
                    },
                };
                let rendered = match placeholders {
                    Some(p) => manager.render_with_placeholders(&prompt, variables, p),
                    None => manager.render(&prompt, variables),
                };
                raised(rendered.map(Captured::Result))
            }
            Step::Get {
                manager: m,
                name,
                label,
                variables,
                ttl,
            } => {
                let manager = manager(world, m, loc)?;
                let got = manager
                    .get_with(name, options(label, *ttl), variables, None)
                    .await;
                raised(got.map(Captured::Result))
            }
            Step::AdvanceClock { backend, seconds } => {
                world
                    .backend(backend)
                    .and_then(|b| b.advance_clock(*seconds))
                    .ok_or_else(|| {
                        loc.join("target")
                            .invalid(format!("`{backend}` is not a caching backend (§6.8)"))
                    })?;
                Outcome::Done
            }
            Step::ConstructGroup {
                group_name,
                members,
            } => {
                let results = members
                    .iter()
                    .map(|m| {
                        world
                            .capture(m)
                            .and_then(Captured::result)
                            .cloned()
                            .ok_or_else(|| {
                                loc.join("members_refs")
                                    .invalid(format!("`{m}` names no captured prompt result"))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                raised(
                    PromptGroup::new(group_name.clone(), results).map(|group| Captured::Group {
                        group,
                        members: members.clone(),
                    }),
                )
            }
        })
    }
}

fn manager<'w>(world: &'w World, slot: &str, loc: &Loc) -> Result<&'w PromptManager, AdapterError> {
    world.manager(slot).ok_or_else(|| {
        loc.join("target")
            .invalid(format!("the fixture declares no `{slot}`"))
    })
}

fn options(label: &Option<String>, ttl: Option<u64>) -> FetchOptions {
    let mut options = FetchOptions::new();
    if let Some(label) = label {
        options = options.label(label.clone());
    }
    if let Some(ttl) = ttl {
        options = options.cache_ttl_seconds(ttl);
    }
    options
}
