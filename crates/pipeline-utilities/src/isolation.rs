//! Spec: pipeline-utilities §6.3 — failure isolation.

use std::error::Error as StdError;
use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::{
    CaughtException, FailureIsolationEvent, Middleware, Next, NodeCtx, NodeFuture, ObserverEvent,
    State, StateRef,
};

/// Fired when an error is caught (after the framework event is dispatched).
pub trait OnCaught: Send + Sync + 'static {
    /// Handles one caught error.
    fn on_caught(&self, error: Arc<dyn StdError + Send + Sync>) -> BoxFuture<'static, ()>;
}

impl<F, Fut> OnCaught for F
where
    F: Fn(Arc<dyn StdError + Send + Sync>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    fn on_caught(&self, error: Arc<dyn StdError + Send + Sync>) -> BoxFuture<'static, ()> {
        Box::pin(self(error))
    }
}

type DegradedFn<S> = Arc<dyn Fn(&S) -> <S as State>::Update + Send + Sync>;
type Predicate = Arc<dyn Fn(&(dyn StdError + 'static)) -> bool + Send + Sync>;

/// Catches errors escaping the wrapped chain and returns a degraded partial update
/// instead; the engine never sees the error and routing continues normally. Each
/// catch dispatches a [`FailureIsolationEvent`] on the observer queue.
///
/// # The three-piece pattern
///
/// For "retry transients, degrade gracefully on exhaustion or non-transient
/// errors", compose, outermost first:
///
/// 1. `FailureIsolationMiddleware` — catches what escapes retry;
/// 2. [`crate::RetryMiddleware`] — sees raw transients first and retries them;
/// 3. the node body — re-raises transients, handles what it knows how to.
///
/// The order is load-bearing: isolation inside retry would swallow transients
/// before retry could see them.
///
/// # Examples
/// ```
/// use openarmature_graph::{DynState, DynUpdate};
/// use openarmature_pipeline::FailureIsolationMiddleware;
/// let isolate = FailureIsolationMiddleware::<DynState>::with_update(
///     "extraction_failed",
///     DynUpdate::new().set("result", serde_json::json!("degraded")),
/// )
/// .catch(["provider_unavailable", "provider_rate_limit"]);
/// # let _ = isolate;
/// ```
pub struct FailureIsolationMiddleware<S: State> {
    event_name: String,
    degraded: DegradedFn<S>,
    catch: Option<Vec<String>>,
    predicate: Option<Predicate>,
    on_caught: Option<Arc<dyn OnCaught>>,
    /// The fields a static degraded update writes (`None` for the callable form).
    static_fields: Option<Vec<String>>,
}

impl<S: State> FailureIsolationMiddleware<S> {
    /// Degrades to `degraded(state)`, computed from the state the chain received.
    /// `event_name` names this catch site in telemetry (required: generic names hide
    /// which path degraded).
    pub fn new(
        event_name: impl Into<String>,
        degraded: impl Fn(&S) -> S::Update + Send + Sync + 'static,
    ) -> Self {
        FailureIsolationMiddleware {
            event_name: event_name.into(),
            degraded: Arc::new(degraded),
            catch: None,
            predicate: None,
            on_caught: None,
            static_fields: None,
        }
    }

    /// Degrades to a fixed update.
    pub fn with_update(event_name: impl Into<String>, update: S::Update) -> Self
    where
        S::Update: Clone + Send + Sync,
    {
        let fields = match S::update_json(&update) {
            serde_json::Value::Object(map) => map.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let mut this = Self::new(event_name, move |_| update.clone());
        this.static_fields = Some(fields);
        this
    }

    /// The fields a static degraded update writes; `None` for the callable form
    /// (its output is unknown until it runs).
    pub fn static_update_fields(&self) -> Option<&[String]> {
        self.static_fields.as_deref()
    }

    /// Catches only errors whose derived category (pipeline-utilities §6.4, through
    /// carriers) is listed; an uncategorised error then propagates.
    pub fn catch<I: IntoIterator<Item = C>, C: Into<String>>(mut self, categories: I) -> Self {
        self.catch = Some(categories.into_iter().map(Into::into).collect());
        self
    }

    /// Catches only errors for which `predicate(surface_error)` holds (combined with
    /// [`FailureIsolationMiddleware::catch`] as a conjunction). It sees the surface
    /// error: use `catch`, or [`crate::classify`], to look through carriers.
    pub fn predicate(
        mut self,
        predicate: impl Fn(&(dyn StdError + 'static)) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// Sets the callback fired for each caught error.
    pub fn on_caught(mut self, on_caught: impl OnCaught) -> Self {
        self.on_caught = Some(Arc::new(on_caught));
        self
    }

    /// `caught` is `Some` whenever a category filter is set.
    fn catches(&self, error: &(dyn StdError + 'static), caught: Option<&CaughtException>) -> bool {
        let category_ok = match &self.catch {
            None => true,
            Some(set) => caught
                .and_then(|c| c.category.as_ref())
                .is_some_and(|c| set.contains(c)),
        };
        category_ok && self.predicate.as_ref().is_none_or(|p| p(error))
    }
}

impl<S: State> Middleware<S> for FailureIsolationMiddleware<S> {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        Box::pin(async move {
            let error = match next.run(Arc::clone(&state), ctx.clone()).await {
                Ok(update) => return Ok(update),
                Err(error) => error,
            };
            // Predicates and `on_caught` see the error itself (a subgraph failure, a
            // carrier, ...); a foreign categorized error stays wrapped, keeping its category.
            let error = openarmature_graph::erase(error);
            // The classified error is for the category filter and the event: without
            // either, the cause chain is not walked (each link would be formatted).
            let observed = ctx.has_observers();
            let caught =
                (observed || self.catch.is_some()).then(|| CaughtException::capture(&*error));
            if !self.catches(&*error, caught.as_ref()) {
                return Err(error.into());
            }
            let update = (self.degraded)(&state);
            #[cfg(feature = "tracing-spans")]
            crate::spans::degraded(&ctx, &self.event_name, &*error, caught.as_ref());
            if let Some(caught) = caught.filter(|_| observed) {
                let event = FailureIsolationEvent::new(
                    &ctx,
                    self.event_name.clone(),
                    state as StateRef,
                    S::update_json(&update),
                    caught,
                );
                ctx.dispatch_event(ObserverEvent::FailureIsolation(event));
            }
            if let Some(on_caught) = &self.on_caught {
                on_caught.on_caught(Arc::from(error)).await;
            }
            Ok(update)
        })
    }
}
