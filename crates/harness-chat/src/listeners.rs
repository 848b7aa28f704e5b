//! Spec: harness-chat §8.2 — subscribed listeners receive a resumed turn's outcome.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::outcome::ChatTurnOutcome;

/// A resume listener's callback.
pub(crate) type Callback = Arc<dyn Fn(&ChatTurnOutcome) + Send + Sync>;

/// A registered listener; pass it to [`crate::ChatHarness::unsubscribe`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subscription {
    session_id: String,
    id: u64,
}

impl Subscription {
    /// The session it listens to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
}

/// The listeners of each session.
#[derive(Default)]
pub(crate) struct Listeners {
    next: AtomicU64,
    by_session: Mutex<HashMap<String, Vec<(u64, Callback)>>>,
}

impl Listeners {
    pub(crate) fn add(&self, session_id: &str, callback: Callback) -> Subscription {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(session_id.to_owned())
            .or_default()
            .push((id, callback));
        Subscription {
            session_id: session_id.to_owned(),
            id,
        }
    }

    pub(crate) fn remove(&self, subscription: &Subscription) -> bool {
        let mut map = self
            .by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(list) = map.get_mut(&subscription.session_id) else {
            return false;
        };
        let before = list.len();
        list.retain(|(id, _)| *id != subscription.id);
        let removed = list.len() != before;
        if list.is_empty() {
            map.remove(&subscription.session_id);
        }
        removed
    }

    /// Calls every listener of `session_id` once with `outcome`, outside the lock (a
    /// callback may subscribe or unsubscribe).
    pub(crate) fn fire(&self, session_id: &str, outcome: &ChatTurnOutcome) -> usize {
        let callbacks: Vec<Callback> = self
            .by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .map(|list| list.iter().map(|(_, c)| Arc::clone(c)).collect())
            .unwrap_or_default();
        for callback in &callbacks {
            callback(outcome);
        }
        callbacks.len()
    }
}
