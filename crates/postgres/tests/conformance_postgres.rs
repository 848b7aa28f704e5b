//! The conformance cases that exercise checkpointing, sessions and paused records
//! (every fixture naming a `checkpointer:` or a `session_store:`: pipeline-utilities,
//! sessions, suspension, harness, observability), with the PostgreSQL backends
//! selected in the adapter (`openarmature_conformance::backends`): every case's
//! Checkpointer and SessionStore is a fresh schema on the test server
//! (`OPENARMATURE_TEST_POSTGRES_URL`; skipped without it unless
//! `OPENARMATURE_REQUIRE_SERVICES=1`). Cases deferred in `conformance.toml` are
//! ignored as in the main suite.
//!
//! The adapter runs each case on its own paused-clock runtime; the pool lives on a
//! runtime of its own here, and every store call is forwarded to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use libtest_mimic::{Arguments, Failed, Trial};
use openarmature_conformance::backends::{self, Backends};
use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{discover, workspace_root};
use openarmature_conformance::{runner, CaseOutcome};
use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer,
};
use openarmature_graph::session::{SessionFilter, SessionRecord, SessionStore, SessionSummary};
use openarmature_graph::suspension::PausedRecord;
use openarmature_graph::BoxError;
use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_testkit::services::{unique_name, url, Service};
use tokio::runtime::Handle;
use tokio::sync::OnceCell;

/// Every schema a case may have made (dropped at the end).
static SCHEMAS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// One case's stores: a schema made on first use, every call run on the pool's
/// runtime.
#[derive(Clone)]
struct Bridge {
    rt: Handle,
    base: PgBackend,
    schema: String,
    backend: Arc<OnceCell<PgBackend>>,
}

impl Bridge {
    fn new(rt: Handle, base: PgBackend) -> Self {
        let schema = unique_name("oa_conf");
        SCHEMAS.lock().unwrap().push(schema.clone());
        Bridge {
            rt,
            base,
            schema,
            backend: Arc::new(OnceCell::new()),
        }
    }

    fn run<T, F, Fut>(&self, f: F) -> BoxFuture<'static, Result<T, BoxError>>
    where
        T: Send + 'static,
        F: FnOnce(PgBackend) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, BoxError>> + Send + 'static,
    {
        let this = self.clone();
        let task = self.rt.spawn(async move {
            let backend = this
                .backend
                .get_or_try_init(|| this.base.with_schema(&this.schema))
                .await
                .map_err(|e| Box::new(e) as BoxError)?
                .clone();
            f(backend).await
        });
        Box::pin(async move { task.await.map_err(|e| Box::new(e) as BoxError)? })
    }
}

impl Checkpointer for Bridge {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().save(&id, record).await })
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().load(&id).await })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        let filter = filter.cloned();
        self.run(move |b| async move { b.checkpointer().list(filter.as_ref()).await })
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().delete(&id).await })
    }

    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        self.run(move |b| async move { b.checkpointer().save_paused(record).await })
    }

    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().load_paused(&id).await })
    }

    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().claim_paused(&id).await })
    }

    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        let signal = signal_id.map(str::to_owned);
        self.run(move |b| async move { b.checkpointer().list_paused(signal.as_deref()).await })
    }

    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = invocation_id.to_owned();
        self.run(move |b| async move { b.checkpointer().delete_paused(&id).await })
    }
}

impl SessionStore for Bridge {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        let id = session_id.to_owned();
        self.run(move |b| async move { b.session_store().load(&id).await })
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        let id = session_id.to_owned();
        self.run(
            move |b| async move { b.session_store().save(&id, record, expected_version).await },
        )
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        let id = session_id.to_owned();
        self.run(move |b| async move { b.session_store().delete(&id).await })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        let filter = filter.cloned();
        self.run(move |b| async move { b.session_store().list(filter.as_ref()).await })
    }
}

/// Whether a fixture file configures a Checkpointer or a SessionStore.
fn uses_a_store(path: &std::path::Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| {
        text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("checkpointer:") || l.starts_with("session_store:")
        })
    })
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let Some(url) = url(Service::Postgres, "conformance_postgres") else {
        return libtest_mimic::run(&args, Vec::new()).exit_code();
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let base = rt
        .block_on(PgBackend::connect(PgConfig::new(&url).max_connections(8)))
        .unwrap();
    let (handle, ckpt_base, sess_base) = (rt.handle().clone(), base.clone(), base.clone());
    let sess_handle = handle.clone();
    backends::select(Backends {
        name: "postgres".into(),
        checkpointer: Arc::new(move || {
            Ok(Arc::new(Bridge::new(handle.clone(), ckpt_base.clone())) as Arc<dyn Checkpointer>)
        }),
        session_store: Arc::new(move || {
            Ok(
                Arc::new(Bridge::new(sess_handle.clone(), sess_base.clone()))
                    as Arc<dyn SessionStore>,
            )
        }),
    })
    .unwrap();

    let root = workspace_root();
    let deferrals = Deferrals::load(&root.join(CONFIG_FILE)).unwrap();
    let found = discover(&root, None);
    let mut trials = Vec::new();
    for file in found.files.into_iter().filter(|f| uses_a_store(&f.path)) {
        let Ok(cases) = runner::list_cases(&file.capability, &file.path) else {
            continue; // the main suite reports unusable fixtures
        };
        for id in cases {
            let deferred = deferrals.reason_for(&id).is_some();
            let path = file.path.clone();
            let case = id.clone();
            let trial = Trial::test(format!("postgres/{id}"), move || {
                match runner::run_case(&path, &case) {
                    CaseOutcome::Passed => Ok(()),
                    CaseOutcome::Failed(message) => Err(Failed::from(message)),
                }
            });
            trials.push(trial.with_ignored_flag(deferred));
        }
    }
    assert!(
        !trials.is_empty(),
        "no checkpoint or session fixture found (is OPENARMATURE_SPEC_DIR set?)"
    );
    let conclusion = libtest_mimic::run(&args, trials);
    let schemas = std::mem::take(&mut *SCHEMAS.lock().unwrap());
    rt.block_on(async {
        let client = base.pool().get().await.unwrap();
        for schema in schemas {
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .unwrap();
        }
    });
    drop(rt);
    conclusion.exit_code()
}
