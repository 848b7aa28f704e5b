//! Spec: conformance-adapter §5 (named invariants), §8.2 (unknown names fail loudly) —
//! name → check dispatch as data.
//!
//! A runner keeps the invariant (or directive) names it understands in a `const`
//! `Table`: each name a fixture may write, with the check it runs. `lookup` is
//! the one way a runner finds a name's check; a name in no table is the runner's
//! `Unsupported` failure. [`registry`] lists every table with the fixture key its
//! names appear under, so a test can hold the tables and the fixtures to each other
//! (every name a fixture uses has a check, every check is used).

use serde_json::Value;

use crate::failure::{Check, Failure};

/// Each name a fixture may write, with the check (or the check's description) it
/// maps to. Aliases are separate entries mapping to the same check.
pub(crate) type Table<F> = [(&'static str, F)];

/// The check `name` maps to in `table`, if any.
pub(crate) fn lookup<F: Copy>(table: &Table<F>, name: &str) -> Option<F> {
    table.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The check the invariant `name` maps to in `table`, or the `Unsupported`
/// failure naming it (§8.2: an unknown name fails loudly).
///
/// # Errors
/// `name` is not in `table`.
pub(crate) fn invariant<F: Copy>(table: &Table<F>, name: &str) -> Check<F> {
    lookup(table, name).ok_or_else(|| {
        Failure::unsupported(format!("fixture_directive_unknown: invariant `{name}`"))
    })
}

/// The check `name` maps to in `table`, for an invariant whose value must be `true`:
/// `None` when `name` is not in `table`, the mismatch "expected `true`, got …" when the
/// value is not `true`.
pub(crate) fn flag<F: Copy>(table: &Table<F>, name: &str, v: &Value) -> Option<Check<F>> {
    let check = lookup(table, name)?;
    Some(match v {
        Value::Bool(true) => Ok(check),
        other => Err(Failure::mismatch(format!("expected `true`, got {other}"))),
    })
}

/// The names of `table`, in table order.
pub(crate) fn names<F>(table: &'static Table<F>) -> Vec<&'static str> {
    table.iter().map(|(n, _)| *n).collect()
}

/// One table of named checks and where fixtures write its names.
#[derive(Debug, Clone, Copy)]
pub struct NamedChecks {
    /// The table (a module path, for messages).
    pub table: &'static str,
    /// The capability directory whose fixtures use these names.
    pub capability: &'static str,
    /// The mapping keys under which fixtures list the names (at any depth; the
    /// names are that mapping's keys).
    pub keys: &'static [&'static str],
    /// The names the table knows.
    pub names: fn() -> Vec<&'static str>,
    /// Whether the tables of this capability and key know every name its runner
    /// accepts. `false` while some of the names are still dispatched elsewhere (then
    /// only "every entry is used" can be judged).
    pub complete: bool,
}

/// Every name → check table of the adapter. Tables sharing a capability and key
/// are consulted together (a name is known when any of them has it).
pub fn registry() -> &'static [NamedChecks] {
    REGISTRY
}

const REGISTRY: &[NamedChecks] = &[
    NamedChecks {
        table: "llm::invariants",
        capability: "llm-provider",
        keys: &["invariants"],
        complete: true,
        names: crate::llm::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "llm::stream_checks",
        capability: "llm-provider",
        keys: &["invariants"],
        complete: true,
        names: crate::llm::STREAM_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "harness::invariants",
        capability: "harness",
        keys: &["invariants"],
        complete: true,
        names: crate::harness::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "chat::invariants",
        capability: "harness-chat",
        keys: &["invariants"],
        complete: true,
        names: crate::chat::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "suspension::invariants",
        capability: "suspension",
        keys: &["invariants", "observer_event_invariants"],
        complete: true,
        names: crate::suspension::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "sessions::invariants",
        capability: "sessions",
        keys: &["invariants"],
        complete: true,
        names: crate::sessions::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "retrieval::invariants",
        capability: "retrieval-provider",
        keys: &["invariants"],
        complete: true,
        names: crate::retrieval::INVARIANT_NAMES,
    },
    // Only the whole-stream predicates: the `<scope>_inner_…` and `<node>_…`
    // families are matched by their endings, so the names a fixture writes there are
    // in no table (and node_accumulator_snapshot_invariants nests them below a node
    // and an observer).
    NamedChecks {
        table: "ge::event_invariants",
        capability: "graph-engine",
        keys: &["observer_event_invariants"],
        complete: false,
        names: crate::ge::EVENT_INVARIANT_NAMES,
    },
    // The failure-isolation, branch and drain invariants; the drain and edge ones of
    // ge::assert are still match arms (async checks), so not complete.
    NamedChecks {
        table: "ge::pu_assert",
        capability: "pipeline-utilities",
        keys: &["invariants"],
        complete: false,
        names: crate::ge::PU_INVARIANT_NAMES,
    },
    // The same table: graph-engine 032/033 write its drain-coverage names.
    NamedChecks {
        table: "ge::pu_assert",
        capability: "graph-engine",
        keys: &["invariants"],
        complete: false,
        names: crate::ge::PU_INVARIANT_NAMES,
    },
    // The same table: pipeline-utilities cases run on the graph-engine runner.
    NamedChecks {
        table: "ge::event_invariants",
        capability: "pipeline-utilities",
        keys: &["observer_event_invariants"],
        complete: false,
        names: crate::ge::EVENT_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::usage_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::USAGE_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::tool_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::TOOL_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::metric_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::METRIC_INVARIANT_NAMES,
    },
    // obs::invariants is the hub: the retrieval and Langfuse checks, its own table,
    // then the tool, LLM, prompt, metadata, metric, usage, lineage (then orphan) and
    // attempt checks, in that order. Every name under `invariants` is in one of these
    // tables (complete); the `observer_event_invariants` families below are not.
    NamedChecks {
        table: "obs::invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::lineage_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LINEAGE_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::orphan_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::ORPHAN_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::attempts",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::ATTEMPT_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::meta::checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::META_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::meta::query_checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::QUERY_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::meta::expect::DIRECT_CALL",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::DIRECT_CALL_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::resume",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::RESUME_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::prompts",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::PROMPT_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::llm_invariants::span_checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LLM_SPAN_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::llm_invariants::event_checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LLM_EVENT_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::llm_invariants::call_checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LLM_CALL_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::llm_invariants::stream_checks",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LLM_STREAM_INVARIANT_NAMES,
    },
    // The `<node>_node_attempt_indices_seen` / `<branch>_callable_branch_attempt_indices_seen`
    // families are matched by suffix, not listed.
    NamedChecks {
        table: "obs::attempts::observer_event_invariants",
        capability: "observability",
        keys: &["observer_event_invariants"],
        complete: false,
        names: crate::obs::OBSERVER_EVENT_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::retrieval_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::RETRIEVAL_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::langfuse::invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LANGFUSE_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::langfuse::stream_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LANGFUSE_STREAM_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::langfuse::session_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LANGFUSE_SESSION_INVARIANT_NAMES,
    },
    NamedChecks {
        table: "obs::langfuse::nested_invariants",
        capability: "observability",
        keys: &["invariants"],
        complete: true,
        names: crate::obs::LANGFUSE_NESTED_INVARIANT_NAMES,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_a_name_and_only_that_name() {
        const T: &Table<u8> = &[("a", 1), ("b", 2), ("alias_of_b", 2)];
        assert_eq!(lookup(T, "b"), Some(2));
        assert_eq!(lookup(T, "alias_of_b"), Some(2));
        assert_eq!(lookup(T, "c"), None);
        assert_eq!(names(T), ["a", "b", "alias_of_b"]);
    }

    #[test]
    fn no_table_lists_a_name_twice() {
        for t in registry() {
            let names = (t.names)();
            for (i, n) in names.iter().enumerate() {
                assert!(!names[i + 1..].contains(n), "{}: `{n}` twice", t.table);
            }
        }
    }
}
