//! Spec: prompt-management §3, §6, §7, §9 — the objects a scenario declares (backends
//! preloaded with prompts, managers over them, label resolvers) and what its calls
//! captured.
//!
//! Preloaded prompts are built through the crate's public API, taken verbatim
//! (register P1): a pinned `template_hash` replaces the computed one, `chat_template`
//! is read by [`ChatSegment::list_from_json`], `sampling` by
//! [`RuntimeConfig::from_json`], and the raw `token_budget` config by
//! [`token_budget_from_config`] (the §5 rule: unrecognized keys ignored).

use std::collections::HashMap;
use std::sync::Arc;

use openarmature_llm::RuntimeConfig;
use openarmature_prompt::{
    token_budget_from_config, ChatSegment, LabelResolver, Prompt, PromptBackend, PromptManager,
    Template,
};

use super::backend::HarnessBackend;
use super::loc::Loc;
use super::model::{ManagerDecl, PromptDecl, ResolverDecl, Scenario};
use super::record::Captured;
use crate::AdapterError;

/// Reads one declaration slot of a scenario.
type Slot<T> = (&'static str, fn(&Scenario) -> Option<&T>);

/// The manager slots a call can target, with the scenario field declaring each.
const MANAGER_SLOTS: &[Slot<ManagerDecl>] = &[
    ("manager", |s| s.manager.as_ref()),
    ("secondary_manager", |s| s.secondary_manager.as_ref()),
    ("tertiary_manager", |s| s.tertiary_manager.as_ref()),
];

/// The resolvers a manager can name by `label_resolver_ref`.
const RESOLVER_SLOTS: &[Slot<ResolverDecl>] = &[
    ("label_resolver", |s| s.label_resolver.as_ref()),
    ("tertiary_label_resolver", |s| {
        s.tertiary_label_resolver.as_ref()
    }),
];

/// Whether `name` is a manager slot a call may target.
pub(super) fn is_manager_slot(name: &str) -> bool {
    MANAGER_SLOTS.iter().any(|(slot, _)| *slot == name)
}

/// A scenario's live objects and captures.
pub(super) struct World {
    backends: Vec<Arc<HarnessBackend>>,
    managers: HashMap<&'static str, PromptManager>,
    captures: HashMap<String, Captured>,
}

impl World {
    /// Builds the backends and managers `scenario` declares.
    pub(super) fn build(scenario: &Scenario, loc: &Loc) -> Result<World, AdapterError> {
        let mut backends: Vec<Arc<HarnessBackend>> = Vec::new();
        for (i, decl) in scenario.backends.iter().enumerate() {
            let at = loc.join(&format!("backends.{i}"));
            if backends.iter().any(|b| b.name() == decl.name) {
                return Err(at.invalid(format!("duplicate backend name `{}`", decl.name)));
            }
            let prompts = decl
                .prompts
                .iter()
                .enumerate()
                .map(|(j, p)| prompt(p, &at.join(&format!("prompts.{j}"))))
                .collect::<Result<Vec<_>, _>>()?;
            backends.push(Arc::new(HarnessBackend::new(
                &decl.name,
                prompts,
                decl.simulate_unavailable,
                decl.caching,
            )));
        }
        let mut world = World {
            backends,
            managers: HashMap::new(),
            captures: HashMap::new(),
        };
        for (slot, field) in MANAGER_SLOTS {
            if let Some(decl) = field(scenario) {
                let manager = world.manager_from(decl, scenario, &loc.join(slot))?;
                world.managers.insert(slot, manager);
            }
        }
        Ok(world)
    }

    fn manager_from(
        &self,
        decl: &ManagerDecl,
        scenario: &Scenario,
        loc: &Loc,
    ) -> Result<PromptManager, AdapterError> {
        let backends: Vec<Arc<dyn PromptBackend>> = match &decl.backends {
            None => self
                .backends
                .iter()
                .map(|b| Arc::clone(b) as Arc<dyn PromptBackend>)
                .collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.backend(n)
                        .map(|b| Arc::clone(b) as Arc<dyn PromptBackend>)
                        .ok_or_else(|| {
                            loc.join("backends")
                                .invalid(format!("no backend named `{n}`"))
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        let mut manager = PromptManager::new(backends).map_err(|e| loc.invalid(e.to_string()))?;
        if let Some(name) = &decl.label_resolver_ref {
            let at = loc.join("label_resolver_ref");
            let resolver = RESOLVER_SLOTS
                .iter()
                .find(|(slot, _)| slot == name)
                .and_then(|(_, field)| field(scenario))
                .ok_or_else(|| at.invalid(format!("no label resolver named `{name}`")))?;
            let resolver = LabelResolver::from_json(&resolver.mapping)
                .map_err(|e| at.invalid(e.to_string()))?;
            manager = manager.with_label_resolver(resolver);
        }
        if let Some(ttl) = decl.default_cache_ttl_seconds {
            manager = manager.with_default_cache_ttl_seconds(ttl);
        }
        Ok(manager)
    }

    /// The backend the fixture names `name`.
    pub(super) fn backend(&self, name: &str) -> Option<&Arc<HarnessBackend>> {
        self.backends.iter().find(|b| b.name() == name)
    }

    /// The manager in `slot`.
    pub(super) fn manager(&self, slot: &str) -> Option<&PromptManager> {
        self.managers.get(slot)
    }

    /// Every backend's fetch count so far.
    pub(super) fn fetch_counts(&self) -> HashMap<String, usize> {
        self.backends
            .iter()
            .map(|b| (b.name().to_owned(), b.fetches()))
            .collect()
    }

    /// What the call `capture_as: name` produced.
    pub(super) fn capture(&self, name: &str) -> Option<&Captured> {
        self.captures.get(name)
    }

    /// Records a call's product under `name`.
    pub(super) fn set_capture(&mut self, name: String, captured: Captured) {
        self.captures.insert(name, captured);
    }
}

/// A preloaded prompt (register P1: identity and hash verbatim).
fn prompt(decl: &PromptDecl, loc: &Loc) -> Result<Prompt, AdapterError> {
    let template = match (&decl.template, &decl.chat_template) {
        (Some(text), None) => Template::Text(text.clone()),
        (None, Some(chat)) => Template::Chat(
            ChatSegment::list_from_json(chat)
                .map_err(|e| loc.join("chat_template").invalid(e.to_string()))?,
        ),
        _ => return Err(loc.invalid("a prompt has exactly one of `template` and `chat_template`")),
    };
    let mut p = Prompt::new(&decl.name, &decl.version, &decl.label, template);
    if let Some(hash) = &decl.template_hash {
        p = p.with_template_hash(hash);
    }
    if let Some(sampling) = &decl.sampling {
        let config = RuntimeConfig::from_json(sampling)
            .map_err(|e| loc.join("sampling").invalid(e.to_string()))?;
        p = p.with_sampling(config);
    }
    if let Some(budget) = decl
        .token_budget
        .as_ref()
        .and_then(token_budget_from_config)
    {
        p = p.with_token_budget(budget);
    }
    if let Some(entities) = &decl.observability_entities {
        p = p.with_observability_entities(entities.clone());
    }
    Ok(p)
}
