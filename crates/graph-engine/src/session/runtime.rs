//! Spec: sessions §3 (steps 2–3), §6 (lifecycle), §7 (migration at load) — what the
//! engine does with a registered SessionStore during one invocation.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::{SessionConfig, SessionError, SessionRecord};
use crate::compiled::{CompiledGraph, Inner};
use crate::error::{BoxError, GraphError};
use crate::node::{Invocation, NodeCtx};
use crate::state::{State, StateView};

/// One session-bound invocation's handle on its session.
pub(crate) struct SessionRuntime {
    config: Arc<SessionConfig>,
    session_id: Arc<str>,
    /// The stored version this invocation last saw (loaded or wrote); `None` when no
    /// record existed. The expected version of optimistic saves (§8.2).
    known_version: Mutex<Option<u64>>,
}

impl SessionRuntime {
    /// The save alongside a paused record (suspension §8.6): what the auto-save at
    /// `END` would write, now. `None` when auto-save is off (nothing written).
    pub(crate) async fn save_at_suspend(&self, state: Value) -> Result<Option<u64>, SessionError> {
        if !self.config.auto_save {
            return Ok(None);
        }
        self.save(state).await.map(Some)
    }

    /// Writes the projection of `state` (a JSON snapshot of the outermost state).
    async fn save(&self, state: Value) -> Result<u64, SessionError> {
        let record = SessionRecord::new(
            &*self.session_id,
            self.config.version(),
            project_out(self.config.projection.as_deref(), state),
        );
        let expected = self.config.optimistic.then(|| self.known().unwrap_or(0));
        let version = self
            .config
            .store
            .save(&self.session_id, record, expected)
            .await
            .map_err(|e| SessionError::backend(&self.session_id, e, true))?;
        *self
            .known_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(version);
        Ok(version)
    }

    fn known(&self) -> Option<u64> {
        *self
            .known_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// §4.2 outbound projection: the session fields read from the final state.
fn project_out(projection: Option<&[(String, String)]>, state: Value) -> Value {
    let Some(pairs) = projection else {
        return state;
    };
    let mut out = Map::new();
    for (session_field, state_field) in pairs {
        if let Some(v) = state.get(state_field) {
            out.insert(session_field.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// Loads and migrates the record: its version and the `(state field, value)` pairs
/// to merge (§4 inbound projection). `None` when no record exists.
async fn load(
    config: &SessionConfig,
    session_id: &str,
) -> Result<Option<(u64, Vec<(String, Value)>)>, SessionError> {
    let loaded = config
        .store
        .load(session_id)
        .await
        .map_err(|e| SessionError::backend(session_id, e, false))?;
    let Some(record) = loaded else {
        return Ok(None);
    };
    let (state, _) = config
        .migrations
        .migrate(&record.schema_version, config.version(), record.state)
        .map_err(SessionError::from_migration)?;
    let Value::Object(map) = state else {
        return Err(SessionError::LoadFailed {
            session_id: session_id.to_owned(),
            source: "the stored session state is not a JSON object".into(),
        });
    };
    let pairs = match &config.projection {
        None => map.into_iter().collect(),
        Some(pairs) => pairs
            .iter()
            .filter_map(|(sf, tf)| map.get(sf).map(|v| (tf.clone(), v.clone())))
            .collect(),
    };
    Ok(Some((record.version, pairs)))
}

impl<S: State> Inner<S> {
    /// Invoke entry (§6.1): when the graph registered sessions and the caller bound the
    /// invocation to `session_id`, loads, migrates and merges the session into
    /// `initial` through the reducers. On resume (`resuming`) the restored checkpoint
    /// already holds the loaded session, so only the stored version is read.
    pub(crate) async fn open_session(
        &self,
        initial: S,
        session_id: Option<&str>,
        resuming: bool,
        loaded: Option<&LoadedSession>,
        invocation_id: &str,
    ) -> Result<(S, Option<Arc<SessionRuntime>>), GraphError<S>> {
        let (Some(config), Some(id)) = (&self.sessions, session_id) else {
            return Ok((initial, None));
        };
        let runtime = |version| {
            Arc::new(SessionRuntime {
                config: Arc::clone(config),
                session_id: Arc::from(id),
                known_version: Mutex::new(version),
            })
        };
        if let Some(loaded) = loaded.filter(|l| l.session_id == id) {
            return Ok((initial, Some(runtime(loaded.version))));
        }
        if resuming {
            return match load(config, id).await {
                Ok(l) => Ok((initial, Some(runtime(l.map(|(v, _)| v))))),
                Err(e) => Err(session_failure(e, initial, invocation_id)),
            };
        }
        match load_merged(config, id, &initial).await {
            Ok((merged, version)) => Ok((merged.unwrap_or(initial), Some(runtime(version)))),
            Err(e) => Err(session_failure(e, initial, invocation_id)),
        }
    }

    /// Invoke exit (§6.1): the auto-save of the final state. A failure is reported
    /// after completion; the returned error carries the final state.
    pub(crate) async fn finish_session(
        &self,
        inv: &Invocation,
        state: Arc<S>,
    ) -> Result<Arc<S>, GraphError<S>> {
        let Some(rt) = inv.session.as_ref().filter(|rt| rt.config.auto_save) else {
            return Ok(state);
        };
        match rt.save(state.to_json()).await {
            Ok(_) => Ok(state),
            Err(e) => Err(session_failure(e, (*state).clone(), &inv.id)),
        }
    }
}

/// Loads, migrates and merges the session into `initial`: the merged state (`None`
/// when nothing was stored to merge) and the stored version.
async fn load_merged<S: State>(
    config: &SessionConfig,
    id: &str,
    initial: &S,
) -> Result<(Option<S>, Option<u64>), SessionError> {
    let Some((version, pairs)) = load(config, id).await? else {
        return Ok((None, None));
    };
    if pairs.is_empty() {
        return Ok((None, Some(version)));
    }
    match merge_into(initial, pairs) {
        Ok(merged) => Ok((Some(merged), Some(version))),
        Err(source) => Err(SessionError::LoadFailed {
            session_id: id.to_owned(),
            source,
        }),
    }
}

/// A session loaded ahead of an invocation by [`CompiledGraph::load_session`]; pass it
/// to [`crate::InvokeOptions::loaded_session`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSession {
    pub(crate) session_id: String,
    version: Option<u64>,
}

impl LoadedSession {
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The stored version loaded; `None` when no record existed (a new session).
    pub fn version(&self) -> Option<u64> {
        self.version
    }
}

impl<S: State> CompiledGraph<S> {
    /// Loads session `session_id` into `initial` exactly as invoke entry does (sessions
    /// §4.1: load, migrate, project, merge through the reducers), so a caller can add
    /// to the loaded state before invoking with
    /// [`crate::InvokeOptions::loaded_session`]. Without a registered SessionStore
    /// the state comes back unchanged and the session is new.
    ///
    /// # Errors
    /// [`SessionError::LoadFailed`] (or the migration's error) as invoke entry would
    /// report it.
    pub async fn load_session(
        &self,
        session_id: &str,
        initial: S,
    ) -> Result<(S, LoadedSession), SessionError> {
        let Some(config) = &self.inner.sessions else {
            let loaded = LoadedSession {
                session_id: session_id.to_owned(),
                version: None,
            };
            return Ok((initial, loaded));
        };
        let (merged, version) = load_merged(config, session_id, &initial).await?;
        let loaded = LoadedSession {
            session_id: session_id.to_owned(),
            version,
        };
        Ok((merged.unwrap_or(initial), loaded))
    }
}

fn merge_into<S: State>(initial: &S, pairs: Vec<(String, Value)>) -> Result<S, BoxError> {
    let update = initial.update_from_json(pairs)?;
    let merged = initial.merge(update)?;
    merged.validate()?;
    Ok(merged)
}

fn session_failure<S>(e: SessionError, state: S, invocation_id: &str) -> GraphError<S> {
    GraphError {
        category: e.runtime_category(),
        node: String::new(),
        namespace: Vec::new(),
        state,
        invocation_id: invocation_id.to_owned(),
        source: Box::new(e),
    }
}

impl NodeCtx {
    /// Saves the session now (sessions §6.2), from `state` — normally the state
    /// this node is producing: merge its update first to save it, as in the example.
    /// The record is the registered projection of `state`; a later save (another
    /// mid-invoke save, or the auto-save at `END`) overwrites it. Returns the stored
    /// version, or `None` when the invocation is not session-bound (no session id
    /// was given, or the graph registered no SessionStore): nothing is written then.
    ///
    /// Only nodes of the outermost graph hold the session state (§9.1); inside a
    /// subgraph, fan-out instance or branch this fails.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use openarmature_graph::{state, NodeCtx, State, BoxError};
    /// # state! { #[derive(Default)] pub struct Job => JobUpdate { pub step: String } }
    /// async fn step_b(s: Arc<Job>, ctx: NodeCtx) -> Result<JobUpdate, BoxError> {
    ///     let update = JobUpdate::default().step("B".to_string());
    ///     ctx.save_session(&s.merge(update.clone())?).await?;
    ///     Ok(update)
    /// }
    /// ```
    ///
    /// # Errors
    /// `session_save_failed` ([`SessionError::SaveFailed`]) when the store's save
    /// raised or the node is not in the outermost graph; `session_write_conflict`
    /// under optimistic concurrency. The node may handle it or return it (a
    /// `node_exception` whose cause keeps the session category).
    pub async fn save_session(&self, state: &dyn StateView) -> Result<Option<u64>, SessionError> {
        let Some(rt) = &self.scope.inv.session else {
            return Ok(None);
        };
        if !self.scope.namespace_prefix.is_empty() {
            return Err(SessionError::SaveFailed {
                session_id: rt.session_id.to_string(),
                source: "only nodes of the outermost graph may save the session (sessions §9.1)"
                    .into(),
            });
        }
        rt.save(state.to_json()).await.map(Some)
    }
}
