//! Spec: suspension §3 / §5 / §7 / §8.6 — the engine side: how a level stops on a
//! `suspend()` on its path, how the outermost level persists the paused record (and
//! the session with it, atomically), and how a signal resume is prepared.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use serde_json::Value;

pub(crate) use super::pending::Interrupt;
use super::pending::PausePoint;
use super::signal::Suspending;
use super::{OnResume, PausedRecord, PausedStatus, Suspended, SuspensionError};
use crate::checkpoint::engine::{parent_json, Prepared};
use crate::checkpoint::runtime::{state_from_json, CheckpointRuntime, ResumeCursor, ResumePoint};
use crate::checkpoint::NodePosition;
use crate::compiled::{emit_with, AttemptTerminal, Inner, OpenAttempt};
use crate::error::{BoxError, GraphError, RuntimeCategory};
use crate::node::{Invocation, Scope};
use crate::observer::{EventError, Phase};
use crate::state::State;

/// Polls `chain` until it completes, or until its terminal recorded a suspension (the
/// terminal's future then never completes): `None` means the chain was abandoned.
pub(crate) async fn unless_suspended<F: Future>(
    chain: F,
    suspended: &AtomicBool,
) -> Option<F::Output> {
    let mut chain = std::pin::pin!(chain);
    std::future::poll_fn(|cx| match chain.as_mut().poll(cx) {
        Poll::Ready(out) => Poll::Ready(Some(out)),
        Poll::Pending if suspended.load(Ordering::SeqCst) => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    })
    .await
}

/// A loaded paused record with the signal payload merged, not yet claimed.
pub(crate) struct SignalResume {
    pub(crate) record: PausedRecord,
}

fn invalid(description: String) -> SuspensionError {
    SuspensionError::RecordInvalid { description }
}

fn payload_invalid(description: String) -> SuspensionError {
    SuspensionError::ResumePayloadInvalid { description }
}

/// The default of the paused-record methods of a Checkpointer that does not store them.
pub(crate) fn unsupported_backend() -> BoxError {
    "this Checkpointer does not store paused-invocation records (implement save_paused / load_paused / claim_paused / list_paused / delete_paused)".into()
}

impl<S: State> Inner<S> {
    fn schema_version(&self) -> String {
        self.checkpoint.as_ref().map_or_else(
            || crate::checkpoint::UNVERSIONED.to_owned(),
            |c| c.schema_version.clone(),
        )
    }

    /// A level's node on the path of a pending `suspend()` returned: the attempt ends
    /// `suspended` (or, for a refused call, with the error), the owner level records
    /// where the paused record resumes, and the level stops.
    pub(crate) fn interrupted(
        &self,
        interrupt: Interrupt,
        scope: &Scope,
        node: &Arc<str>,
        state: &Arc<S>,
        open: Option<OpenAttempt<S>>,
        position: NodePosition,
    ) -> GraphError<S> {
        let namespace: Vec<String> = scope
            .namespace_prefix
            .iter()
            .cloned()
            .chain([node.to_string()])
            .collect();
        let (category, source): (RuntimeCategory, BoxError) = match interrupt {
            Interrupt::Suspend {
                descriptor,
                owner_depth,
            } => {
                if let Some(open) = open {
                    let descriptor = Some(Arc::new(descriptor));
                    emit_with(
                        &open.ctx,
                        Phase::Suspended,
                        &open.pre,
                        None,
                        None,
                        descriptor,
                    );
                }
                if scope.namespace_prefix.len() == owner_depth {
                    let mut states = parent_json(scope);
                    states.push(state.to_json());
                    scope.inv.pending.set_point(PausePoint {
                        prefix: scope.namespace_prefix.to_vec(),
                        node: node.to_string(),
                        states,
                        position,
                    });
                }
                (RuntimeCategory::InvocationSuspended, Box::new(Suspending))
            }
            Interrupt::Reject { reason } => {
                let error = SuspensionError::UnsupportedContext { reason };
                let category = error.runtime_category();
                if let Some(open) = open {
                    let event = EventError::capture(category.as_str(), &error);
                    AttemptTerminal::flush(open, Some(event));
                }
                (category, Box::new(error))
            }
        };
        GraphError {
            category,
            node: node.to_string(),
            namespace,
            state: (**state).clone(),
            invocation_id: scope.inv.id.to_string(),
            source,
        }
    }

    /// The outermost level stopped on a suspension: persist the paused record, then
    /// the session with it (§8.6: if the session save fails the record is deleted and
    /// the invocation errors), and build the outcome.
    pub(crate) async fn persist_suspension(
        &self,
        inv: &Invocation,
        stopped: GraphError<S>,
    ) -> Result<Result<Arc<S>, Suspended<S>>, GraphError<S>> {
        let failure = |stopped: GraphError<S>, what: &'static str, source: BoxError| GraphError {
            category: RuntimeCategory::SuspensionPersistenceFailed,
            source: Box::new(SuspensionError::PersistenceFailed { what, source }),
            ..stopped
        };
        let Some((pending, point)) = inv
            .pending
            .take_suspension()
            .and_then(|p| p.point.clone().map(|point| (p, point)))
        else {
            return Err(failure(
                stopped,
                "the paused-invocation record",
                "the suspension point was not recorded".into(),
            ));
        };
        let mut positions = inv
            .checkpoint
            .as_ref()
            .map(|rt| rt.positions())
            .unwrap_or_default();
        if pending.on_resume.marks_node_completed() {
            positions.push(point.position);
        }
        let record = PausedRecord {
            invocation_id: inv.id.to_string(),
            correlation_id: inv.correlation_id.as_deref().unwrap_or_default().to_owned(),
            session_id: inv.session_id.as_deref().map(str::to_owned),
            status: PausedStatus::Suspended,
            descriptor: pending.descriptor,
            node_name: pending.node_name,
            namespace: pending.path.namespace().to_vec(),
            on_resume: pending.on_resume,
            resume_prefix: point.prefix,
            resume_node: point.node,
            states: point.states,
            completed_positions: positions,
            next_step: inv.peek_step(),
            schema_version: self.schema_version(),
            suspended_at: std::time::SystemTime::now(),
        };
        let outer = record.state().clone();
        let outcome = Suspended {
            invocation_id: record.invocation_id.clone(),
            correlation_id: record.correlation_id.clone(),
            state: stopped.state.clone(),
            descriptor: record.descriptor.clone(),
            node_name: record.node_name.clone(),
            namespace: record.namespace.clone(),
        };
        if let Err(source) = self.paused.save_paused(record).await {
            return Err(failure(stopped, "the paused-invocation record", source));
        }
        if let Some(session) = &inv.session {
            if let Err(e) = session.save_at_suspend(outer).await {
                // Roll back: no paused record without its session (§8.6).
                let _ = self.paused.delete_paused(&inv.id).await;
                return Err(failure(
                    stopped,
                    "the session saved with the paused record",
                    Box::new(e),
                ));
            }
        }
        Ok(Err(outcome))
    }

    /// Loads the paused record of `invocation_id` and merges `payload` into its state
    /// (§6: a direct field overwrite, then schema validation). Nothing is claimed yet,
    /// so a bad payload leaves the record resumable.
    pub(crate) async fn prepare_signal_resume(
        &self,
        invocation_id: &str,
        payload: &Value,
    ) -> Result<SignalResume, SuspensionError> {
        let mut record = self
            .paused
            .load_paused(invocation_id)
            .await
            .map_err(|e| invalid(format!("loading the paused record of `{invocation_id}` failed: {e}")))?
            .ok_or_else(|| {
                invalid(format!(
                    "invocation `{invocation_id}` has no paused record (it never suspended, or it completed)"
                ))
            })?;
        if record.status != PausedStatus::Suspended {
            return Err(invalid(format!(
                "the paused record of `{invocation_id}` is `{}`: a suspended invocation resumes once",
                record.status.as_str()
            )));
        }
        self.migrate_paused(&mut record)?;
        let Some(first) = record.states.first_mut() else {
            return Err(invalid(format!(
                "the paused record of `{invocation_id}` holds no state"
            )));
        };
        let mut state =
            state_from_json(&self.defaults, first.clone()).map_err(|e| invalid(e.to_string()))?;
        let Value::Object(fields) = payload else {
            return Err(payload_invalid(format!(
                "the signal payload must be an object of state fields, got {payload}"
            )));
        };
        for (field, value) in fields {
            state = state
                .with_field_json(field, value.clone())
                .map_err(|e| payload_invalid(e.to_string()))?;
        }
        state
            .validate()
            .map_err(|e| payload_invalid(e.to_string()))?;
        *first = state.to_json();
        Ok(SignalResume { record })
    }

    /// Migrates the record's states to the declared schema version (pipeline-utilities
    /// §10.12, through the registered migrations).
    fn migrate_paused(&self, record: &mut PausedRecord) -> Result<(), SuspensionError> {
        let declared = self.schema_version();
        if record.schema_version == declared {
            return Ok(());
        }
        let Some(config) = &self.checkpoint else {
            return Err(invalid(format!(
                "the paused record has schema version `{}`, the graph `{declared}`",
                record.schema_version
            )));
        };
        let registry = &config.migrations;
        registry
            .resolve(&record.schema_version, &declared)
            .map_err(|e| invalid(e.to_string()))?;
        for state in &mut record.states {
            let (migrated, _) = registry
                .migrate(&record.schema_version, &declared, state.clone())
                .map_err(|e| invalid(e.to_string()))?;
            *state = migrated;
        }
        record.schema_version = declared;
        Ok(())
    }

    /// Claims the record and prepares the resumed run: the suspended invocation's id,
    /// correlation and step numbering; with a Checkpointer, the merged state is
    /// checkpointed first, so a resumed run dropped before its next node completes can
    /// still be continued with a checkpoint resume (§10.4).
    pub(crate) async fn signal_prepared(
        &self,
        resume: SignalResume,
    ) -> Result<Prepared, (RuntimeCategory, BoxError)> {
        let record = resume.record;
        let id = record.invocation_id.as_str();
        let checkpoint = match &self.checkpoint {
            Some(config) => {
                let runtime = CheckpointRuntime::continuing(
                    Arc::clone(config),
                    &record.correlation_id,
                    record.completed_positions.clone(),
                );
                let mut parents = record.states.clone();
                let level = parents.pop().unwrap_or(Value::Null);
                runtime
                    .failed(id, None, level, parents)
                    .await
                    .map_err(|e| (e.runtime_category(), Box::new(e) as BoxError))?;
                Some(Arc::new(runtime))
            }
            None => None,
        };
        let claimed = self.paused.claim_paused(id).await.map_err(|e| {
            let e = invalid(format!("claiming the paused record of `{id}` failed: {e}"));
            (e.runtime_category(), Box::new(e) as BoxError)
        })?;
        if claimed.is_none() {
            let e = invalid(format!(
                "the paused record of `{id}` was resumed concurrently"
            ));
            return Err((e.runtime_category(), Box::new(e)));
        }
        let point = ResumePoint::paused(
            record.resume_prefix.clone(),
            record.resume_node.clone(),
            record.states.clone(),
            record.on_resume == OnResume::RerunNode,
        );
        Ok(Prepared {
            checkpoint,
            cursor: Some(ResumeCursor::new(point)),
            correlation: Arc::from(record.correlation_id.as_str()),
            first_step: record.next_step,
        })
    }
}
