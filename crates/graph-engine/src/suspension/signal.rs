//! Spec: suspension §3 (`suspend`, `mark_node_completed`), §4 (signal descriptors).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::pending::{PathInfo, Pending, PendingSuspend};
use super::SuspensionError;
use crate::error::NodeError;

/// What the invocation awaits (suspension §4): a caller-chosen `signal_id` the runtime
/// routes the signal back by, and optional application metadata the engine only
/// round-trips.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalDescriptor {
    /// The correlation token of the awaited signal.
    pub signal_id: String,
    /// Application-defined metadata (opaque to the engine), as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl SignalDescriptor {
    /// A descriptor awaiting `signal_id`, without metadata.
    pub fn new(signal_id: impl Into<String>) -> Self {
        SignalDescriptor {
            signal_id: signal_id.into(),
            metadata: None,
        }
    }

    /// Attaches typed metadata (any `Serialize` type the application owns).
    ///
    /// # Errors
    /// The serializer's error when `metadata` cannot be represented as JSON (e.g. a map
    /// with non-string keys).
    pub fn with_metadata<T: Serialize>(mut self, metadata: &T) -> Result<Self, serde_json::Error> {
        self.metadata = Some(serde_json::to_value(metadata)?);
        Ok(self)
    }

    /// Attaches metadata already in JSON form.
    pub fn with_metadata_value(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The metadata read back as the application's type (`None` when absent).
    ///
    /// # Errors
    /// The deserializer's error when the metadata does not fit `T`.
    pub fn metadata_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<T, serde_json::Error>> {
        self.metadata.clone().map(serde_json::from_value)
    }

    /// Adds `key: value` to object metadata (creating it when absent) unless the key
    /// is already set; non-object metadata is left as is.
    pub(crate) fn annotate(&mut self, key: &str, value: Value) {
        let metadata = self
            .metadata
            .get_or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = metadata {
            map.entry(key.to_owned()).or_insert(value);
        }
    }
}

/// Where a resumed invocation re-enters (suspension §3 `mark_node_completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnResume {
    /// `mark_node_completed = true` (the default): the suspending node counts as
    /// completed; the resumed run continues with the node after it.
    #[default]
    ContinueAfter,
    /// `mark_node_completed = false`: the resumed run runs the suspending node's body
    /// again, on the state with the signal payload merged (the body must be
    /// re-entrant). Not a retry: the attempt index is unchanged.
    RerunNode,
}

impl OnResume {
    /// The spec's `mark_node_completed` flag.
    pub fn marks_node_completed(self) -> bool {
        self == OnResume::ContinueAfter
    }
}

/// Suspends the running invocation (suspension §3, `mark_node_completed = true`):
/// return its result from the node body — `return suspend(descriptor);`. See the
/// [module documentation](crate::suspension) for the exact mechanism: the call is the
/// node's terminal action, its update is ignored, and no middleware can intercept it.
///
/// # Errors
/// Always an error value: the suspension (for the node body to return), or
/// `suspension_in_unsupported_context` outside a node body, from middleware, or inside
/// a collecting fan-out instance or branch.
pub fn suspend<T>(descriptor: SignalDescriptor) -> Result<T, NodeError> {
    suspend_with(descriptor, OnResume::ContinueAfter)
}

/// [`suspend`] choosing where the resumed invocation re-enters.
///
/// # Errors
/// As [`suspend`].
pub fn suspend_with<T>(
    mut descriptor: SignalDescriptor,
    on_resume: OnResume,
) -> Result<T, NodeError> {
    let Some((ctx, in_body)) = crate::metadata::ambient_node() else {
        return Err(unsupported(
            "suspend() was called outside a node body of a running invocation",
        ));
    };
    let scope = &ctx.scope;
    let path = PathInfo::of(&ctx);
    let forbidden = if in_body {
        scope.suspension_forbidden.as_deref()
    } else {
        Some("suspend() was called from middleware; suspend from a node body instead (suspension §8.4)")
    };
    if let Some(reason) = forbidden {
        scope.inv.pending.set(Pending::Rejected {
            reason: reason.to_owned(),
            path,
        });
        return Err(unsupported(reason));
    }
    if let Some(index) = ctx.fan_out_index() {
        descriptor.annotate("fan_out_index", Value::from(index));
    }
    if let Some(branch) = ctx.branch_name() {
        descriptor.annotate("branch_name", Value::from(branch));
    }
    // The level the paused record resumes at: the outermost fan-out or branches node on
    // the path (it suspends as a whole, §8.2 / §8.3), else the suspending node's own.
    let depth = scope.namespace_prefix.len();
    let owner_depth = (0..depth)
        .find(|&j| scope.fan_out_chain[j].is_some() || scope.branch_chain[j].is_some())
        .unwrap_or(depth);
    scope
        .inv
        .pending
        .set(Pending::Suspend(Box::new(PendingSuspend {
            descriptor,
            on_resume,
            node_name: ctx.node_name.to_string(),
            owner_depth,
            path,
            point: None,
        })));
    Err(NodeError::from(Suspending))
}

fn unsupported(reason: &str) -> NodeError {
    NodeError::from(SuspensionError::UnsupportedContext {
        reason: reason.to_owned(),
    })
}

/// The value [`suspend`] returns for the node body to pass back. The engine acts on
/// the recorded suspension, not on this value.
#[derive(Debug, thiserror::Error)]
#[error("the node suspended (suspend() was called): return this value from the node body")]
pub(crate) struct Suspending;

impl crate::Categorized for Suspending {
    fn category(&self) -> Option<crate::Category> {
        None
    }
}
