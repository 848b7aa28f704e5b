//! Spec: sessions §6.2 (explicit mid-invoke save) and §11.1 (log correlation) — the
//! node directives the sessions fixtures add to the graph-engine vocabulary, as a
//! `ge/build.rs` [`Extension`].
//!
//! - `explicit_save_session: true` — after the node's scripted update is computed, the
//!   body merges it into its input state and calls [`NodeCtx::save_session`] with the
//!   result (006: "after B's `update_pure` merges"), then returns the update.
//! - `emits_log: {message, level}` — before its other work the node makes one log
//!   record through the case's [`OtelObserver::log`] (012).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_graph::{
    CompileError, CompileWarning, DynState, GraphBuilder, Node, NodeConfig, NodeCtx, NodeFuture,
    State,
};
use openarmature_observability::OtelObserver;
use opentelemetry::logs::Severity;

use crate::ge::build::Extension;
use crate::yaml::Y;
use crate::AdapterError;

const SAVE: &str = "explicit_save_session";
const LOG: &str = "emits_log";

/// The sessions node directives, wired to the case's observer.
pub(super) struct SessionNodes {
    /// The case's OTel observer, when the case exports telemetry.
    pub(super) otel: Option<OtelObserver>,
    /// Explicit saves that wrote a record.
    pub(super) saves: Arc<AtomicUsize>,
}

impl Extension for SessionNodes {
    fn node_keys(&self) -> &'static [&'static str] {
        &[SAVE, LOG]
    }

    fn wrap_node(
        &self,
        _name: &str,
        spec: &Y<'_>,
        node: Arc<dyn Node<DynState>>,
    ) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
        let save = match spec.get(SAVE) {
            Some(flag) => flag.bool()?,
            None => false,
        };
        let log = match spec.get(LOG) {
            Some(l) => {
                l.check_keys(&["message", "level"])?;
                let level = match l.get("level") {
                    Some(level) => crate::shared::severity(&level)?,
                    None => Severity::Info,
                };
                let otel = self
                    .otel
                    .clone()
                    .ok_or_else(|| l.invalid("emits_log needs the case's OTel observer"))?;
                Some((otel, level, l.req("message")?.str()?.to_owned()))
            }
            None => None,
        };
        if !save && log.is_none() {
            return Ok(node);
        }
        Ok(Arc::new(SessionNode {
            inner: node,
            save: save.then(|| Arc::clone(&self.saves)),
            log,
        }))
    }

    fn edges<'y>(
        &self,
        builder: GraphBuilder<DynState>,
        edges: Vec<Y<'y>>,
    ) -> Result<(GraphBuilder<DynState>, Vec<Y<'y>>), AdapterError> {
        Ok((builder, edges))
    }
}

/// A node with the sessions directives around it.
struct SessionNode {
    inner: Arc<dyn Node<DynState>>,
    /// `explicit_save_session`: the counter of saves that wrote a record.
    save: Option<Arc<AtomicUsize>>,
    log: Option<(OtelObserver, Severity, String)>,
}

impl Node<DynState> for SessionNode {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(async move {
            if let Some((otel, level, message)) = &self.log {
                otel.log(&ctx, *level, message.clone());
            }
            let update = self.inner.run(Arc::clone(&state), ctx.clone()).await?;
            if let Some(saves) = &self.save {
                let merged = state.merge(update.clone())?;
                if ctx.save_session(&merged).await?.is_some() {
                    saves.fetch_add(1, Ordering::SeqCst);
                }
            }
            Ok(update)
        })
    }

    fn emits_node_events(&self) -> bool {
        self.inner.emits_node_events()
    }

    fn event_config(&self, name: &str, state: &DynState) -> Option<NodeConfig> {
        self.inner.event_config(name, state)
    }

    fn check(&self, name: &str, parent: &DynState) -> Result<Vec<CompileWarning>, CompileError> {
        self.inner.check(name, parent)
    }
}
