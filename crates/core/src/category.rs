//! Spec: graph-engine §2 / §4, pipeline-utilities §6.1 / §9 / §10 / §11, llm-provider §7,
//! retrieval-provider §7, prompt-management §10, sessions §10, suspension §9, harness §7,
//! harness-chat §10 — every error category identifier, as one typed value.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// An error category: the specification's identifier (e.g. `provider_rate_limit`) and
/// whether errors of the category are transient by default (pipeline-utilities §6.1:
/// the default classifier retries the transient ones).
///
/// `Copy` and cheap to compare. Two categories are equal when their names are. The set is
/// open: [`Category::new`] declares another one (an application's own), and
/// [`Category::from_name`] finds the constant for a name read at run time.
///
/// # Examples
/// ```
/// use openarmature_core::Category;
/// assert_eq!(Category::PROVIDER_RATE_LIMIT.as_str(), "provider_rate_limit");
/// assert!(Category::PROVIDER_RATE_LIMIT.is_transient());
/// assert!(!Category::PROVIDER_AUTHENTICATION.is_transient());
/// assert_eq!(Category::from_name("provider_rate_limit"), Category::PROVIDER_RATE_LIMIT);
/// const MINE: Category = Category::new("inventory_locked");
/// assert_eq!(Category::from_name("inventory_locked").as_str(), MINE.as_str());
/// ```
#[derive(Clone, Copy)]
pub struct Category {
    name: &'static str,
    transient: bool,
}

impl Category {
    /// A non-transient category named `name`.
    pub const fn new(name: &'static str) -> Category {
        Category {
            name,
            transient: false,
        }
    }

    /// A category whose errors are transient by default.
    pub const fn transient(name: &'static str) -> Category {
        Category {
            name,
            transient: true,
        }
    }

    /// The identifier, e.g. `provider_rate_limit`.
    pub const fn as_str(self) -> &'static str {
        self.name
    }

    /// Whether errors of this category are transient by default.
    pub const fn is_transient(self) -> bool {
        self.transient
    }

    /// The category named `name`: the constant of that name when the specification
    /// defines one (with its transience), else a non-transient category of that name.
    /// Unknown names are interned once per process (the set of names a program reads is
    /// small and bounded: it comes from configuration or fixtures, not from traffic).
    pub fn from_name(name: &str) -> Category {
        if let Some(known) = Category::ALL.iter().find(|c| c.name == name) {
            return *known;
        }
        static INTERNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
        let mut interned = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = interned.iter().find(|n| **n == name) {
            return Category::new(existing);
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        interned.push(leaked);
        Category::new(leaked)
    }
}

impl PartialEq for Category {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Category {}

impl Hash for Category {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl PartialEq<str> for Category {
    fn eq(&self, other: &str) -> bool {
        self.name == other
    }
}

impl PartialEq<&str> for Category {
    fn eq(&self, other: &&str) -> bool {
        self.name == *other
    }
}

impl fmt::Debug for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl From<Category> for &'static str {
    fn from(category: Category) -> Self {
        category.name
    }
}

/// graph-engine §4 runtime categories and the engine-boundary categories of
/// pipeline-utilities §10, observability §3.4 and sessions §10.
impl Category {
    /// A node raised.
    pub const NODE_EXCEPTION: Category = Category::new("node_exception");
    /// An edge function raised.
    pub const EDGE_EXCEPTION: Category = Category::new("edge_exception");
    /// A reducer raised while merging a partial update.
    pub const REDUCER_ERROR: Category = Category::new("reducer_error");
    /// A conditional edge returned an undeclared destination.
    pub const ROUTING_ERROR: Category = Category::new("routing_error");
    /// State failed schema validation at a boundary.
    pub const STATE_VALIDATION_ERROR: Category = Category::new("state_validation_error");
    /// `resume_invocation` named an invocation with no checkpoint.
    pub const CHECKPOINT_NOT_FOUND: Category = Category::new("checkpoint_not_found");
    /// The checkpointer's `save` raised.
    pub const CHECKPOINT_SAVE_FAILED: Category = Category::new("checkpoint_save_failed");
    /// A loaded checkpoint does not fit the graph.
    pub const CHECKPOINT_RECORD_INVALID: Category = Category::new("checkpoint_record_invalid");
    /// No migration chain bridges a loaded checkpoint's schema version.
    pub const CHECKPOINT_STATE_MIGRATION_MISSING: Category =
        Category::new("checkpoint_state_migration_missing");
    /// A checkpoint state migration raised.
    pub const CHECKPOINT_STATE_MIGRATION_FAILED: Category =
        Category::new("checkpoint_state_migration_failed");
    /// The registered state migrations are ambiguous.
    pub const CHECKPOINT_STATE_MIGRATION_CHAIN_AMBIGUOUS: Category =
        Category::new("checkpoint_state_migration_chain_ambiguous");
    /// Caller invocation metadata breaks observability §3.4.
    pub const INVOCATION_METADATA_INVALID: Category = Category::new("invocation_metadata_invalid");
    /// The session store's `load` raised, or the stored session does not fit.
    pub const SESSION_LOAD_FAILED: Category = Category::new("session_load_failed");
    /// The session store's `save` raised.
    pub const SESSION_SAVE_FAILED: Category = Category::new("session_save_failed");
    /// No migration chain bridges a loaded session's schema version.
    pub const SESSION_STATE_MIGRATION_MISSING: Category =
        Category::new("session_state_migration_missing");
    /// A session migration raised.
    pub const SESSION_STATE_MIGRATION_FAILED: Category =
        Category::new("session_state_migration_failed");
    /// The session migrations are ambiguous.
    pub const SESSION_STATE_MIGRATION_CHAIN_AMBIGUOUS: Category =
        Category::new("session_state_migration_chain_ambiguous");
    /// An optimistic-concurrency session save conflicted.
    pub const SESSION_WRITE_CONFLICT: Category = Category::new("session_write_conflict");
}

/// pipeline-utilities §9 / §11 composite-node categories.
impl Category {
    /// A fan-out's items field is not a list.
    pub const FAN_OUT_FIELD_NOT_LIST: Category = Category::new("fan_out_field_not_list");
    /// A fan-out had no items and `on_empty` is `raise`.
    pub const FAN_OUT_EMPTY: Category = Category::new("fan_out_empty");
    /// A fan-out's resolved count is invalid.
    pub const FAN_OUT_INVALID_COUNT: Category = Category::new("fan_out_invalid_count");
    /// A fan-out's resolved concurrency is invalid.
    pub const FAN_OUT_INVALID_CONCURRENCY: Category = Category::new("fan_out_invalid_concurrency");
    /// A fan-out declares both `count` and an items field.
    pub const FAN_OUT_COUNT_MODE_AMBIGUOUS: Category =
        Category::new("fan_out_count_mode_ambiguous");
    /// A degraded fan-out update lacks the collect field.
    pub const FAN_OUT_DEGRADED_UPDATE_MISSING_COLLECT_FIELD: Category =
        Category::new("fan_out_degraded_update_missing_collect_field");
    /// A parallel-branches node declares no branches.
    pub const PARALLEL_BRANCHES_NO_BRANCHES: Category =
        Category::new("parallel_branches_no_branches");
    /// A parallel-branches branch spec is invalid.
    pub const PARALLEL_BRANCHES_INVALID_BRANCH_SPEC: Category =
        Category::new("parallel_branches_invalid_branch_spec");
    /// A parallel branch failed (a `node_exception` carrier naming the branch).
    pub const PARALLEL_BRANCHES_BRANCH_FAILED: Category =
        Category::new("parallel_branches_branch_failed");
}

/// llm-provider §7 provider categories (shared with retrieval-provider §7) and the
/// categories of the project's resilience extensions (spec/extensions/0002–0004).
impl Category {
    /// Authentication failed.
    pub const PROVIDER_AUTHENTICATION: Category = Category::new("provider_authentication");
    /// The provider is unreachable (network failure, 5xx, timeout). Transient.
    pub const PROVIDER_UNAVAILABLE: Category = Category::transient("provider_unavailable");
    /// The bound model does not exist on this provider.
    pub const PROVIDER_INVALID_MODEL: Category = Category::new("provider_invalid_model");
    /// The bound model is known but not currently serving. Transient.
    pub const PROVIDER_MODEL_NOT_LOADED: Category =
        Category::transient("provider_model_not_loaded");
    /// The provider rate-limited the request. Transient.
    pub const PROVIDER_RATE_LIMIT: Category = Category::transient("provider_rate_limit");
    /// A successful response could not be parsed into the normalized shape.
    pub const PROVIDER_INVALID_RESPONSE: Category = Category::new("provider_invalid_response");
    /// The request was malformed (pre-send validation, or a 400).
    pub const PROVIDER_INVALID_REQUEST: Category = Category::new("provider_invalid_request");
    /// The bound model does not support a content block used in the request.
    pub const PROVIDER_UNSUPPORTED_CONTENT_BLOCK: Category =
        Category::new("provider_unsupported_content_block");
    /// Structured output did not parse or validate.
    pub const STRUCTURED_OUTPUT_INVALID: Category = Category::new("structured_output_invalid");
    /// Extension 0004: the endpoint's circuit breaker is open; nothing was sent.
    pub const PROVIDER_CIRCUIT_OPEN: Category = Category::new("provider_circuit_open");
    /// Extension 0003: a retry was refused because the retry budget is empty.
    pub const RETRY_BUDGET_EXHAUSTED: Category = Category::new("retry_budget_exhausted");
    /// Extension 0002: the provider asked for a wait above the backoff's cap.
    pub const RETRY_AFTER_EXCEEDED: Category = Category::new("retry_after_exceeded");
}

/// prompt-management §10 categories.
impl Category {
    /// No prompt of that name / label / version.
    pub const PROMPT_NOT_FOUND: Category = Category::new("prompt_not_found");
    /// A template failed to render.
    pub const PROMPT_RENDER_ERROR: Category = Category::new("prompt_render_error");
    /// The prompt backend could not be reached. Transient.
    pub const PROMPT_STORE_UNAVAILABLE: Category = Category::transient("prompt_store_unavailable");
    /// A prompt group was built from invalid members.
    pub const PROMPT_GROUP_INVALID: Category = Category::new("prompt_group_invalid");
}

/// suspension §9, harness §7 and harness-chat §10 categories.
impl Category {
    /// `suspend()` was called outside a node body.
    pub const SUSPENSION_IN_UNSUPPORTED_CONTEXT: Category =
        Category::new("suspension_in_unsupported_context");
    /// The paused-invocation record could not be persisted.
    pub const SUSPENSION_PERSISTENCE_FAILED: Category =
        Category::new("suspension_persistence_failed");
    /// A resume named an unknown or already resumed record.
    pub const SUSPENSION_RECORD_INVALID: Category = Category::new("suspension_record_invalid");
    /// A resume's signal payload does not fit the state.
    pub const SUSPENSION_RESUME_PAYLOAD_INVALID: Category =
        Category::new("suspension_resume_payload_invalid");
    /// A harness could not correlate a signal with a paused invocation.
    pub const HARNESS_SIGNAL_CORRELATION_FAILED: Category =
        Category::new("harness_signal_correlation_failed");
    /// A harness could not subscribe to signals.
    pub const HARNESS_SIGNAL_SUBSCRIPTION_FAILED: Category =
        Category::new("harness_signal_subscription_failed");
    /// A harness could not resolve the session id of a sessioned transmission.
    pub const HARNESS_SESSION_ID_UNRESOLVED: Category =
        Category::new("harness_session_id_unresolved");
    /// A harness could not classify a transmission into exactly one dispatch path.
    pub const HARNESS_PATH_CLASSIFICATION_AMBIGUOUS: Category =
        Category::new("harness_path_classification_ambiguous");
    /// A chat message failed validation at the harness boundary.
    pub const CHAT_MESSAGE_SHAPE_INVALID: Category = Category::new("chat_message_shape_invalid");
}

impl Category {
    /// Every category this crate names, for [`Category::from_name`].
    pub const ALL: &'static [Category] = &[
        Category::NODE_EXCEPTION,
        Category::EDGE_EXCEPTION,
        Category::REDUCER_ERROR,
        Category::ROUTING_ERROR,
        Category::STATE_VALIDATION_ERROR,
        Category::CHECKPOINT_NOT_FOUND,
        Category::CHECKPOINT_SAVE_FAILED,
        Category::CHECKPOINT_RECORD_INVALID,
        Category::CHECKPOINT_STATE_MIGRATION_MISSING,
        Category::CHECKPOINT_STATE_MIGRATION_FAILED,
        Category::CHECKPOINT_STATE_MIGRATION_CHAIN_AMBIGUOUS,
        Category::INVOCATION_METADATA_INVALID,
        Category::SESSION_LOAD_FAILED,
        Category::SESSION_SAVE_FAILED,
        Category::SESSION_STATE_MIGRATION_MISSING,
        Category::SESSION_STATE_MIGRATION_FAILED,
        Category::SESSION_STATE_MIGRATION_CHAIN_AMBIGUOUS,
        Category::SESSION_WRITE_CONFLICT,
        Category::FAN_OUT_FIELD_NOT_LIST,
        Category::FAN_OUT_EMPTY,
        Category::FAN_OUT_INVALID_COUNT,
        Category::FAN_OUT_INVALID_CONCURRENCY,
        Category::FAN_OUT_COUNT_MODE_AMBIGUOUS,
        Category::FAN_OUT_DEGRADED_UPDATE_MISSING_COLLECT_FIELD,
        Category::PARALLEL_BRANCHES_NO_BRANCHES,
        Category::PARALLEL_BRANCHES_INVALID_BRANCH_SPEC,
        Category::PARALLEL_BRANCHES_BRANCH_FAILED,
        Category::PROVIDER_AUTHENTICATION,
        Category::PROVIDER_UNAVAILABLE,
        Category::PROVIDER_INVALID_MODEL,
        Category::PROVIDER_MODEL_NOT_LOADED,
        Category::PROVIDER_RATE_LIMIT,
        Category::PROVIDER_INVALID_RESPONSE,
        Category::PROVIDER_INVALID_REQUEST,
        Category::PROVIDER_UNSUPPORTED_CONTENT_BLOCK,
        Category::STRUCTURED_OUTPUT_INVALID,
        Category::PROVIDER_CIRCUIT_OPEN,
        Category::RETRY_BUDGET_EXHAUSTED,
        Category::RETRY_AFTER_EXCEEDED,
        Category::PROMPT_NOT_FOUND,
        Category::PROMPT_RENDER_ERROR,
        Category::PROMPT_STORE_UNAVAILABLE,
        Category::PROMPT_GROUP_INVALID,
        Category::SUSPENSION_IN_UNSUPPORTED_CONTEXT,
        Category::SUSPENSION_PERSISTENCE_FAILED,
        Category::SUSPENSION_RECORD_INVALID,
        Category::SUSPENSION_RESUME_PAYLOAD_INVALID,
        Category::HARNESS_SIGNAL_CORRELATION_FAILED,
        Category::HARNESS_SIGNAL_SUBSCRIPTION_FAILED,
        Category::HARNESS_SESSION_ID_UNRESOLVED,
        Category::HARNESS_PATH_CLASSIFICATION_AMBIGUOUS,
        Category::CHAT_MESSAGE_SHAPE_INVALID,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_transient_set_is_the_spec_one() {
        let transient: Vec<&str> = Category::ALL
            .iter()
            .filter(|c| c.is_transient())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            transient,
            [
                "provider_unavailable",
                "provider_model_not_loaded",
                "provider_rate_limit",
                "prompt_store_unavailable"
            ]
        );
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, c) in Category::ALL.iter().enumerate() {
            assert!(!Category::ALL[..i].contains(c), "duplicate {c}");
            assert_eq!(Category::from_name(c.as_str()), *c);
            assert_eq!(
                Category::from_name(c.as_str()).is_transient(),
                c.is_transient()
            );
        }
    }

    #[test]
    fn unknown_names_are_interned_once() {
        let a = Category::from_name("made_up_category");
        let b = Category::from_name(&String::from("made_up_category"));
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert!(!a.is_transient());
        assert_eq!(a, "made_up_category");
    }
}
