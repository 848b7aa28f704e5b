//! Spec: pipeline-utilities §10.12 (state migrations): registration, shortest-path chain
//! resolution with ambiguity detection, chain application.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::CheckpointError;
use crate::BoxError;

/// A migration function: a state at `from_version`, as JSON, to one at `to_version`.
/// Must be pure (no I/O, deterministic).
pub type MigrationFn = Arc<dyn Fn(Value) -> Result<Value, BoxError> + Send + Sync>;

/// One registered migration.
#[derive(Clone)]
pub struct StateMigration {
    /// The version it accepts.
    pub from_version: String,
    /// The version it produces.
    pub to_version: String,
    migrate: MigrationFn,
}

impl fmt::Debug for StateMigration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.from_version, self.to_version)
    }
}

/// The migrations a compiled graph consults when a loaded record's `schema_version`
/// differs from the declared one.
#[derive(Clone, Default, Debug)]
pub struct MigrationRegistry {
    migrations: Vec<StateMigration>,
}

impl MigrationRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a migration; a second one for the same `(from, to)` pair is
    /// `checkpoint_state_migration_chain_ambiguous` (§10.12.1).
    pub fn register(
        &mut self,
        from_version: impl Into<String>,
        to_version: impl Into<String>,
        migrate: MigrationFn,
    ) -> Result<(), CheckpointError> {
        let (from_version, to_version) = (from_version.into(), to_version.into());
        if self
            .migrations
            .iter()
            .any(|m| m.from_version == from_version && m.to_version == to_version)
        {
            return Err(CheckpointError::ChainAmbiguous {
                from_version: Some(from_version),
                to_version: Some(to_version),
            });
        }
        self.migrations.push(StateMigration {
            from_version,
            to_version,
            migrate,
        });
        Ok(())
    }

    /// How many migrations are registered.
    pub fn len(&self) -> usize {
        self.migrations.len()
    }

    /// Whether none are registered.
    pub fn is_empty(&self) -> bool {
        self.migrations.is_empty()
    }

    /// The registered set, sorted by version pair: `[v1 -> v2, v2 -> v3]`.
    pub fn describe(&self) -> String {
        let mut pairs: Vec<String> = self.migrations.iter().map(|m| format!("{m:?}")).collect();
        pairs.sort();
        format!("[{}]", pairs.join(", "))
    }

    /// The chain from `from` to `to` (empty when equal): the unique shortest path, or
    /// `chain_ambiguous` when several exist, or `migration_missing` when none does.
    pub fn resolve(&self, from: &str, to: &str) -> Result<Vec<&StateMigration>, CheckpointError> {
        if from == to {
            return Ok(Vec::new());
        }
        // BFS counting shortest paths (saturating at 2) and remembering a predecessor.
        let mut dist: HashMap<&str, usize> = HashMap::from([(from, 0)]);
        let mut paths: HashMap<&str, u8> = HashMap::from([(from, 1)]);
        let mut via: HashMap<&str, &StateMigration> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            let (d, n) = (dist[v], paths[v]);
            for m in self.migrations.iter().filter(|m| m.from_version == v) {
                let w = m.to_version.as_str();
                match dist.get(w) {
                    None => {
                        dist.insert(w, d + 1);
                        paths.insert(w, n);
                        via.insert(w, m);
                        queue.push_back(w);
                    }
                    Some(&dw) if dw == d + 1 => {
                        let p = paths.entry(w).or_insert(0);
                        *p = p.saturating_add(n).min(2);
                    }
                    Some(_) => {}
                }
            }
        }
        match paths.get(to) {
            None => Err(CheckpointError::MigrationMissing {
                from_version: from.to_owned(),
                to_version: to.to_owned(),
                registered_migrations_count: self.len(),
                registry_description: self.describe(),
            }),
            Some(&n) if n > 1 => Err(CheckpointError::ChainAmbiguous {
                from_version: Some(from.to_owned()),
                to_version: Some(to.to_owned()),
            }),
            Some(_) => {
                let mut chain = Vec::new();
                let mut at = to;
                while at != from {
                    let Some(m) = via.get(at) else { break };
                    chain.push(*m);
                    at = m.from_version.as_str();
                }
                chain.reverse();
                Ok(chain)
            }
        }
    }

    /// Compile-time scan (§10.12.2): every registered version that reaches `target`
    /// must do so along a unique shortest path.
    pub fn check_unambiguous(&self, target: &str) -> Result<(), CheckpointError> {
        for m in &self.migrations {
            match self.resolve(&m.from_version, target) {
                Err(e @ CheckpointError::ChainAmbiguous { .. }) => return Err(e),
                _ => continue,
            }
        }
        Ok(())
    }

    /// Migrates `state` from `from` to `to`; returns it with the number of migrations
    /// applied. A raising migration is `checkpoint_state_migration_failed` and stops the
    /// chain.
    pub fn migrate(
        &self,
        from: &str,
        to: &str,
        state: Value,
    ) -> Result<(Value, usize), CheckpointError> {
        let chain = self.resolve(from, to)?;
        let mut state = state;
        for m in &chain {
            state = (m.migrate)(state).map_err(|source| CheckpointError::MigrationFailed {
                from_version: m.from_version.clone(),
                to_version: m.to_version.clone(),
                source,
            })?;
        }
        Ok((state, chain.len()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn add(field: &'static str) -> MigrationFn {
        Arc::new(move |mut v: Value| {
            v[field] = json!(true);
            Ok(v)
        })
    }

    #[test]
    fn chains_resolve_by_shortest_path() {
        let mut r = MigrationRegistry::new();
        r.register("1", "2", add("a")).unwrap();
        r.register("2", "3", add("b")).unwrap();
        let (v, n) = r.migrate("1", "3", json!({})).unwrap();
        assert_eq!((v, n), (json!({"a": true, "b": true}), 2));
        assert_eq!(r.migrate("3", "3", json!({"x": 1})).unwrap().1, 0);
        // A shortcut wins over the two-step chain.
        r.register("1", "3", add("c")).unwrap();
        assert_eq!(
            r.migrate("1", "3", json!({})).unwrap().0,
            json!({"c": true})
        );
    }

    #[test]
    fn duplicates_diamonds_gaps_and_failures_are_typed() {
        let mut r = MigrationRegistry::new();
        r.register("1", "2", add("a")).unwrap();
        let dup = r.register("1", "2", add("a")).unwrap_err();
        assert_eq!(dup.category(), "checkpoint_state_migration_chain_ambiguous");
        r.register("1", "2b", add("b")).unwrap();
        r.register("2", "3", add("c")).unwrap();
        r.register("2b", "3", add("d")).unwrap();
        let diamond = r.resolve("1", "3").unwrap_err();
        assert_eq!(
            diamond.category(),
            "checkpoint_state_migration_chain_ambiguous"
        );
        assert!(r.check_unambiguous("3").is_err());
        let missing = r.resolve("0", "3").unwrap_err();
        assert_eq!(missing.category(), "checkpoint_state_migration_missing");
        assert!(missing.to_string().contains("4 registered"));
        let mut f = MigrationRegistry::new();
        f.register("1", "2", Arc::new(|_| Err("boom".into())))
            .unwrap();
        f.register("2", "3", add("never")).unwrap();
        let failed = f.migrate("1", "3", json!({})).unwrap_err();
        assert_eq!(failed.category(), "checkpoint_state_migration_failed");
        assert!(std::error::Error::source(&failed).is_some());
    }
}
