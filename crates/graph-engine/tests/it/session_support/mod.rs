//! Shared fixtures of the sessions tests: a typed state, a counting store and
//! graph helpers.
#![allow(
    dead_code,
    unused_imports,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

pub use std::sync::atomic::{AtomicUsize, Ordering};
pub use std::sync::{Arc, Mutex};

pub use futures::future::BoxFuture;
pub use openarmature_graph::session::{
    InMemorySessionStore, SessionConfig, SessionError, SessionFilter, SessionRecord, SessionStore,
    SessionSummary,
};
pub use openarmature_graph::{
    category_of, cause_chain, state, BoxError, CompileError, CompiledGraph, Completed,
    GraphBuilder, GraphError, InvokeOptions, NodeCtx, NodeError, RuntimeCategory, State,
    SubgraphNode, END,
};
pub use serde_json::{json, Value};

state! {
    /// One accumulating list and two scalars.
    #[derive(Default, PartialEq)]
    pub struct Chat => ChatUpdate {
        /// Durable across invokes (append reducer).
        pub history: Vec<String> => append,
        /// Durable summary.
        pub summary: String,
        /// Per-invoke scratch.
        pub scratch: String,
        /// A counter.
        pub value: i64,
    }
}

/// An in-memory store that counts calls (to prove the store is not touched).
#[derive(Default, Clone)]
pub struct Counting {
    pub inner: InMemorySessionStore,
    pub loads: Arc<AtomicUsize>,
    pub saves: Arc<AtomicUsize>,
    pub fail_saves: bool,
    pub fail_loads: bool,
}

impl SessionStore for Counting {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if self.fail_loads {
            return Box::pin(async { Err("disk gone".into()) });
        }
        self.inner.load(id)
    }
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: SessionRecord,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        if self.fail_saves {
            return Box::pin(async { Err("disk full".into()) });
        }
        self.inner.save(id, record, expected)
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.inner.delete(id)
    }
    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        self.inner.list(filter)
    }
}

pub fn one_node(
    update: impl Fn(&Chat) -> ChatUpdate + Send + Sync + 'static,
) -> GraphBuilder<Chat> {
    let update = Arc::new(update);
    GraphBuilder::new(Chat::default())
        .add_node("turn", move |s: Arc<Chat>, _c: NodeCtx| {
            let u = update(&s);
            async move { Ok::<_, NodeError>(u) }
        })
        .add_edge("turn", END)
        .entry("turn")
}

pub fn sid(id: &str) -> InvokeOptions {
    InvokeOptions::default().session_id(id)
}

pub async fn stored(store: &InMemorySessionStore, id: &str) -> Option<SessionRecord> {
    store.load(id).await.unwrap()
}

pub fn seed(store: &InMemorySessionStore, id: &str, version: &str, state: Value) {
    let store = store.clone();
    let (id, version) = (id.to_owned(), version.to_owned());
    futures::executor::block_on(async move {
        store
            .save(&id, SessionRecord::new(&id, version, state), None)
            .await
            .unwrap();
    });
}

pub fn counted_noop(calls: Arc<AtomicUsize>) -> GraphBuilder<Chat> {
    GraphBuilder::new(Chat::default())
        .add_node("noop", move |_s: Arc<Chat>, _c: NodeCtx| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, NodeError>(ChatUpdate::default()) }
        })
        .add_edge("noop", END)
        .entry("noop")
        .schema_version("v2")
}

/// [`counted_noop`] with `config`, compiled.
pub fn counted(calls: &Arc<AtomicUsize>, config: SessionConfig) -> CompiledGraph<Chat> {
    counted_noop(Arc::clone(calls))
        .sessions(config)
        .compile()
        .unwrap()
}

/// Runs `graph` from the default state in session `id`; it must complete.
pub async fn in_session(graph: &CompiledGraph<Chat>, id: &str) -> Completed<Chat> {
    graph.invoke_with(Chat::default(), sid(id)).await.unwrap()
}

/// Runs `graph` from the default state in session `id`; it must fail.
pub async fn session_err(graph: &CompiledGraph<Chat>, id: &str) -> GraphError<Chat> {
    graph
        .invoke_with(Chat::default(), sid(id))
        .await
        .unwrap_err()
}
