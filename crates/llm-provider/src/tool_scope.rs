//! Spec: graph-engine §6 *Tool-call instrumentation scope* (observability §5.5.12,
//! proposal 0063): the scope a node body runs one tool execution in.
//!
//! The caller runs the tool; the framework only observes it. A node body wraps one
//! execution in [`ToolScopeExt::instrument_tool`] (inline form), or enters a
//! [`ToolScope`] with [`ToolScopeExt::start_tool`] and reports the outcome later
//! (start/complete form). Exactly one terminal event is dispatched per execution,
//! when its outcome is known: a [`ToolCallEvent`] for a result, a
//! [`ToolCallFailedEvent`] for a failure, never both. A failure is passed back to
//! the caller unchanged. The events carry the identity captured when the scope was
//! entered, whatever context the outcome is reported from.
//!
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::{state, BoxError, GraphBuilder, NodeError, NodeCtx, END};
//! use openarmature_llm::{ToolExecution, ToolScopeExt};
//! use serde_json::json;
//!
//! state! {
//!     #[derive(Default)]
//!     pub struct Turn => TurnUpdate { pub weather: String }
//! }
//!
//! async fn get_weather(city: &str) -> Result<serde_json::Value, std::io::Error> {
//!     Ok(json!({"city": city, "temperature_c": 21}))
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let graph = GraphBuilder::new(Turn::default())
//!     .add_node("act", |_s: Arc<Turn>, ctx: NodeCtx| async move {
//!         // The model asked for get_weather(city = "Paris") with tool-call id call_1.
//!         let call = ToolExecution::new("get_weather")
//!             .tool_call_id("call_1")
//!             .arguments(json!({"city": "Paris"}));
//!         let result = ctx.instrument_tool(call, get_weather("Paris")).await?;
//!         Ok::<_, NodeError>(TurnUpdate::default().weather(result.to_string()))
//!     })
//!     .add_edge("act", END)
//!     .entry("act")
//!     .compile()?;
//! let out = graph.invoke(Turn::default()).await?;
//! assert!(out.weather.contains("21"));
//! # Ok::<_, BoxError>(())
//! # }).unwrap();
//! ```

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use openarmature_core::vocab::tool::{
    ToolCallEvent, ToolCallFailedEvent, ToolCallRecord, ToolExecution,
};
use openarmature_graph::{category_of, BoxError, NodeCtx, NodeError, ObserverEvent};
use serde::Serialize;
use serde_json::Value;

/// An entered tool-call scope (the start/complete form): report the outcome once
/// with [`ToolScope::complete`] or [`ToolScope::fail`]. Dropping it unreported
/// dispatches nothing (no outcome is known). Reporting after the invocation ended
/// dispatches nothing either: the invocation's queue is closed.
#[must_use = "a tool scope reports nothing until completed or failed"]
pub struct ToolScope {
    ctx: NodeCtx,
    record: ToolCallRecord,
    started: Instant,
    /// The `openarmature.tool.call` span (feature `tracing-spans`).
    #[cfg(feature = "tracing-spans")]
    span: tracing::Span,
}

impl std::fmt::Debug for ToolScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolScope")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

impl ToolScope {
    /// Enters a tool-call scope for one execution in the node attempt `ctx`
    /// describes: captures its identity now and mints the execution's `call_id`.
    pub fn start(ctx: &NodeCtx, execution: ToolExecution) -> ToolScope {
        let call_id = Arc::from(uuid::Uuid::new_v4().to_string());
        let record = ToolCallRecord::new(ctx.call_site(), call_id, execution);
        ToolScope {
            ctx: ctx.clone(),
            #[cfg(feature = "tracing-spans")]
            span: crate::spans::tool_call(&record),
            record,
            started: Instant::now(),
        }
    }

    /// This execution's `call_id`.
    pub fn call_id(&self) -> &str {
        &self.record.call_id
    }

    /// Reports a result: dispatches the [`ToolCallEvent`]. A result that cannot be
    /// represented as JSON is recorded as a string describing why.
    pub fn complete<T: Serialize + ?Sized>(self, result: &T) {
        let result = serde_json::to_value(result)
            .unwrap_or_else(|e| Value::String(format!("<result not representable as JSON: {e}>")));
        #[cfg(feature = "tracing-spans")]
        crate::spans::tool_outcome(&self.span, None);
        let call = self.finish();
        self.ctx
            .dispatch_event(ObserverEvent::ToolCall(ToolCallEvent::new(call, result)));
    }

    /// Reports a failure: dispatches the [`ToolCallFailedEvent`].
    pub fn fail(self, error_type: Option<&str>, error_message: impl Into<String>) {
        let error_message = error_message.into();
        #[cfg(feature = "tracing-spans")]
        crate::spans::tool_outcome(&self.span, Some((error_type, &error_message)));
        let call = self.finish();
        self.ctx
            .dispatch_event(ObserverEvent::ToolCallFailed(ToolCallFailedEvent::new(
                call,
                error_type.map(str::to_owned),
                error_message,
            )));
    }

    fn finish(&self) -> ToolCallRecord {
        let mut call = self.record.clone();
        call.latency_ms = Some(self.started.elapsed().as_secs_f64() * 1000.0);
        call.at = SystemTime::now();
        call
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for openarmature_graph::NodeCtx {}
}

/// The tool-call scope on the node context: `use openarmature_llm::ToolScopeExt` and
/// call `ctx.instrument_tool(..)` / `ctx.start_tool(..)` in a node body.
pub trait ToolScopeExt: sealed::Sealed {
    /// Enters a tool-call scope for one execution the caller runs itself (the
    /// start/complete form, for outcomes that arrive later). Captures this node's
    /// identity now and mints the execution's `call_id`.
    fn start_tool(&self, execution: ToolExecution) -> ToolScope;

    /// Runs `tool` (the caller's execution) inside a tool-call scope and returns its
    /// outcome unchanged, after dispatching a [`ToolCallEvent`] (on `Ok`) or a
    /// [`ToolCallFailedEvent`] (on `Err`).
    ///
    /// The failure's `error_type` is the error type's name (`TimeoutError` for a
    /// `my_tools::TimeoutError`); for a [`BoxError`] or a [`NodeError`] it is the
    /// error's category when it has one, else `None`. Use
    /// [`ToolScopeExt::start_tool`] to name it explicitly.
    fn instrument_tool<T, E, F>(
        &self,
        execution: ToolExecution,
        tool: F,
    ) -> impl Future<Output = Result<T, E>>
    where
        F: Future<Output = Result<T, E>>,
        T: Serialize,
        E: Display + 'static;
}

impl ToolScopeExt for NodeCtx {
    fn start_tool(&self, execution: ToolExecution) -> ToolScope {
        ToolScope::start(self, execution)
    }

    async fn instrument_tool<T, E, F>(&self, execution: ToolExecution, tool: F) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
        T: Serialize,
        E: Display + 'static,
    {
        let scope = self.start_tool(execution);
        #[cfg(feature = "tracing-spans")]
        let tool = tracing::Instrument::instrument(tool, scope.span.clone());
        let outcome = tool.await;
        match &outcome {
            Ok(result) => scope.complete(result),
            Err(err) => {
                let error_type = error_type_of(err);
                scope.fail(error_type.as_deref(), err.to_string());
            }
        }
        outcome
    }
}

/// The name a failure event gives an error of type `E`.
fn error_type_of<E: Display + 'static>(err: &E) -> Option<String> {
    if let Some(boxed) = (err as &dyn Any).downcast_ref::<BoxError>() {
        return category_of(boxed.as_ref()).map(|c| c.as_str().to_owned());
    }
    if let Some(node_error) = (err as &dyn Any).downcast_ref::<NodeError>() {
        return category_of(node_error).map(|c| c.as_str().to_owned());
    }
    short_type_name(std::any::type_name::<E>())
}

/// `a::b::Name<c::D>` → `Name`; `None` for names with nothing left.
fn short_type_name(full: &str) -> Option<String> {
    let base = full.split('<').next().unwrap_or(full);
    let name = base.rsplit("::").next().unwrap_or(base).trim();
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_type_names_drop_paths_and_generics() {
        assert_eq!(
            short_type_name("std::io::error::Error").as_deref(),
            Some("Error")
        );
        assert_eq!(
            short_type_name("my_tools::TimeoutError<u8>").as_deref(),
            Some("TimeoutError")
        );
        assert_eq!(short_type_name("Plain").as_deref(), Some("Plain"));
        assert_eq!(short_type_name("").as_deref(), None);
    }

    #[derive(Debug)]
    struct TimeoutError;

    impl Display for TimeoutError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("timed out")
        }
    }

    #[test]
    fn error_types_come_from_the_type_or_a_boxed_errors_category() {
        assert_eq!(
            error_type_of(&TimeoutError).as_deref(),
            Some("TimeoutError")
        );
        let plain: BoxError = "no category".into();
        assert_eq!(error_type_of(&plain), None);
        assert_eq!(error_type_of(&String::from("x")).as_deref(), Some("String"));
    }
}
