//! Spec: conformance-adapter §5.6 / §6.2 — the checkpoint harness primitives: the
//! recording Checkpointer (with `crash_injection`), seeded records, and the
//! state-migration mocks of pipeline-utilities §10.12 fixtures.
//!
//! This module holds the recording Checkpointer and its crash / abort boundaries;
//! [`records`] holds the fixture view of a record and `seeded_record`, [`mocks`] the
//! migration mocks and the resume-aware flaky node.

mod mocks;
mod records;

pub(crate) use self::mocks::{flaky_resume_aware, migration, KeyError, MigrationLog};
pub(crate) use self::records::{positions_json, record_json, seeded_record};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer, InMemoryCheckpointer,
    InstanceState,
};
use openarmature_graph::BoxError;
use serde_json::Value;

use crate::failure::{Check, Failure};
use crate::ge::harness::lock;

/// The id a `seeded_record` is stored under (and resumed from).
pub(crate) const SEEDED_ID: &str = "seeded-invocation";
/// The correlation id of a `seeded_record`.
pub(crate) const SEEDED_CORRELATION: &str = "seeded-correlation";

/// Where a run is cut short (register R12 / R13).
pub(crate) enum Boundary {
    /// `crash_injection: {after_node}`: the save first appending a position of it.
    AfterNode(String),
    /// `crash_injection: {after_fan_out_instance: {node, index}}` or a fan-out's
    /// `abort_after_instance: index`: the save first recording that instance of that
    /// fan-out `completed`.
    AfterInstance(String, usize),
}

impl Boundary {
    fn hit(&self, record: &CheckpointRecord) -> bool {
        match self {
            Boundary::AfterNode(node) => record
                .completed_positions
                .last()
                .is_some_and(|p| p.node_name == *node),
            Boundary::AfterInstance(node, index) => record.fan_out_progress.iter().any(|e| {
                e.fan_out_node_name == *node
                    && e.instances
                        .get(*index)
                        .is_some_and(|i| i.state == InstanceState::Completed)
            }),
        }
    }
}

/// The boundary's save is stored, then never returns; the runner abandons the run
/// (`abort`: and reports it as a `node_exception` raised by the boundary's node).
pub(crate) struct Crash {
    pub(crate) boundary: Boundary,
    pub(crate) abort: bool,
    fired: AtomicBool,
    notify: tokio::sync::Notify,
    invocation: Mutex<Option<String>>,
}

impl Crash {
    pub(crate) fn new(boundary: Boundary, abort: bool) -> Self {
        Crash {
            boundary,
            abort,
            fired: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
            invocation: Mutex::new(None),
        }
    }
}

/// `in_memory_batched` (§10.11.4): fan-out internal saves are buffered and the latest
/// one is stored at every `flush_every`-th; an instance-failure save is buffered without
/// counting; any other save drops the buffer (it supersedes it). A run that ends with a
/// buffer loses it, like a crash would.
#[derive(Default)]
struct Batch {
    flush_every: usize,
    buffered: Mutex<(usize, Option<CheckpointRecord>)>,
}

/// The fixture's Checkpointer: the engine's in-memory backend, recording every save.
pub(crate) struct Store {
    /// The engine's in-memory backend, or the one [`crate::backends`] selected.
    inner: Arc<dyn Checkpointer>,
    saves: Mutex<Vec<CheckpointRecord>>,
    crash: Option<Crash>,
    batch: Option<Batch>,
}

impl Store {
    pub(crate) fn new(crash: Option<Crash>, flush_every: Option<usize>) -> Check<Self> {
        let inner = crate::backends::checkpointer()
            .transpose()?
            .unwrap_or_else(|| Arc::new(InMemoryCheckpointer::new()));
        Ok(Store {
            inner,
            saves: Mutex::new(Vec::new()),
            crash,
            batch: flush_every.map(|flush_every| Batch {
                flush_every: flush_every.max(1),
                ..Batch::default()
            }),
        })
    }

    /// The abort boundary's fan-out node, when the boundary is an abort.
    pub(crate) fn abort_node(&self) -> Option<&str> {
        match &self.crash {
            Some(Crash {
                abort: true,
                boundary: Boundary::AfterInstance(node, _),
                ..
            }) => Some(node),
            _ => None,
        }
    }

    /// Replaces fields of the latest record's outermost state (`resume_with_modified_items`).
    pub(crate) async fn modify_latest(
        &self,
        invocation_id: &str,
        fields: &serde_json::Map<String, Value>,
    ) -> Check {
        let mut record = self
            .latest(invocation_id)
            .await
            .ok_or("resume_with_modified_items: no record")?;
        let outer = match record.parent_states.first_mut() {
            Some(p) => p,
            None => &mut record.state,
        };
        if let Value::Object(m) = outer {
            for (k, v) in fields {
                m.insert(k.clone(), v.clone());
            }
        }
        self.inner
            .save(invocation_id, record)
            .await
            .map_err(Failure::mismatch)
    }

    /// Stores `record` and, at the boundary, never returns.
    fn store<'a>(
        &'a self,
        invocation_id: &'a str,
        record: Option<CheckpointRecord>,
        crash: Option<&'a Crash>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if let Some(record) = record {
                self.inner.save(invocation_id, record).await?;
            }
            if let Some(c) = crash {
                *lock(&c.invocation) = Some(invocation_id.to_owned());
                c.notify.notify_one();
                futures::future::pending::<()>().await;
            }
            Ok(())
        })
    }

    /// With batching, logs `record` as a save and gives the batch; without, `None`
    /// (the caller saves it as a regular save, which logs it).
    fn logged_batch(&self, record: &CheckpointRecord) -> Option<&Batch> {
        let b = self.batch.as_ref()?;
        lock(&self.saves).push(record.clone());
        Some(b)
    }

    fn crash_at(&self, record: &CheckpointRecord) -> Option<&Crash> {
        self.crash
            .as_ref()
            .filter(|c| c.boundary.hit(record) && !c.fired.swap(true, Ordering::SeqCst))
    }

    /// Every record the engine saved for `invocation_id`, in save order.
    pub(crate) fn saves_for(&self, invocation_id: &str) -> Vec<CheckpointRecord> {
        lock(&self.saves)
            .iter()
            .filter(|r| r.invocation_id == invocation_id)
            .cloned()
            .collect()
    }

    /// The latest record of `invocation_id`.
    pub(crate) async fn latest(&self, invocation_id: &str) -> Option<CheckpointRecord> {
        self.inner.load(invocation_id).await.ok().flatten()
    }

    /// Stores a record without going through the engine (`seeded_record`).
    pub(crate) async fn seed(&self, record: CheckpointRecord) -> Check {
        let id = record.invocation_id.clone();
        self.inner
            .save(&id, record)
            .await
            .map_err(Failure::mismatch)
    }

    /// Resolves once the crash boundary's save has been stored (never without one).
    pub(crate) async fn crashed(&self) {
        match &self.crash {
            Some(c) => c.notify.notified().await,
            None => futures::future::pending().await,
        }
    }

    /// The invocation the crash boundary ended.
    pub(crate) fn crashed_invocation(&self) -> Option<String> {
        self.crash
            .as_ref()
            .and_then(|c| lock(&c.invocation).clone())
    }

    /// The `after_node` crash boundary, if any.
    pub(crate) fn crash_node(&self) -> Option<&str> {
        match &self.crash {
            Some(Crash {
                abort: false,
                boundary: Boundary::AfterNode(node),
                ..
            }) => Some(node),
            _ => None,
        }
    }

    /// Whether a crash (not an abort) boundary is set.
    pub(crate) fn crashes(&self) -> bool {
        self.crash.as_ref().is_some_and(|c| !c.abort)
    }
}

impl Checkpointer for Store {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let crash = self.crash_at(&record);
        lock(&self.saves).push(record.clone());
        if let Some(b) = &self.batch {
            *lock(&b.buffered) = (0, None);
        }
        self.store(invocation_id, Some(record), crash)
    }

    fn save_fan_out_internal<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let Some(b) = self.logged_batch(&record) else {
            return self.save(invocation_id, record);
        };
        let flushed = {
            let mut buffered = lock(&b.buffered);
            buffered.0 += 1;
            buffered.1 = Some(record);
            if buffered.0 >= b.flush_every {
                buffered.0 = 0;
                buffered.1.take()
            } else {
                None
            }
        };
        // The boundary applies to what reaches the store.
        let crash = flushed.as_ref().and_then(|r| self.crash_at(r));
        self.store(invocation_id, flushed, crash)
    }

    fn save_fan_out_failure<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let Some(b) = self.logged_batch(&record) else {
            return self.save(invocation_id, record);
        };
        lock(&b.buffered).1 = Some(record);
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        self.inner.load(invocation_id)
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        self.inner.list(filter)
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.inner.delete(invocation_id)
    }
}
