//! Spec: harness §2 (modes), §3 (inbound dispatch paths and their classification).

use serde_json::Value;

/// Fixed at construction (harness §2): every turn carries a session id, or none does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarnessMode {
    /// Every turn is bound to a session (§3.1 / §3.2 / §3.3).
    Sessioned,
    /// No turn is bound to a session; the engine never touches a SessionStore (§3.0).
    Stateless,
}

/// What the transport says a transmission is (a dedicated route, an event type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchIntent {
    /// Start a session (§3.1).
    NewSession,
    /// Continue a session (§3.2).
    ExistingSession,
    /// Deliver a signal to a paused invocation (§3.3).
    SignalResume,
}

/// The path a transmission was classified into (harness §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchPath {
    /// §3.0: a stateless harness's transmission (including its signal resumes).
    Stateless,
    /// §3.1: a new session.
    NewSession,
    /// §3.2: an existing session.
    ExistingSession,
    /// §3.3: a signal resuming a paused invocation.
    SignalResume,
}

impl DispatchPath {
    /// The spec's section number: `"3.0"` … `"3.3"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchPath::Stateless => "3.0",
            DispatchPath::NewSession => "3.1",
            DispatchPath::ExistingSession => "3.2",
            DispatchPath::SignalResume => "3.3",
        }
    }
}

/// Which paused invocation a signal is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalTarget {
    /// The invocation id itself (e.g. from a `POST /callback/{invocation_id}` URL).
    Invocation(String),
    /// The awaited signal's id, resolved by the [`crate::SignalCoordinator`].
    SignalId(String),
}

/// One inbound transmission, as the transport hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct Transmission {
    /// The inbound payload; the harness's state builder turns it into the initial state.
    pub payload: Value,
    /// The transport's classification hint.
    pub intent: Option<DispatchIntent>,
    /// The caller's session id (sessioned mode).
    pub session_id: Option<String>,
    /// For a signal: its target and payload.
    pub signal: Option<(SignalTarget, Value)>,
}

impl Transmission {
    /// A transmission carrying `payload`, without intent or session.
    pub fn new(payload: Value) -> Self {
        Transmission {
            payload,
            intent: None,
            session_id: None,
            signal: None,
        }
    }

    /// A signal for the paused invocation `invocation_id` with `signal_payload`.
    pub fn signal_for(invocation_id: impl Into<String>, signal_payload: Value) -> Self {
        Transmission {
            payload: Value::Null,
            intent: Some(DispatchIntent::SignalResume),
            session_id: None,
            signal: Some((
                SignalTarget::Invocation(invocation_id.into()),
                signal_payload,
            )),
        }
    }

    /// A signal for whichever paused invocation awaits `signal_id`.
    pub fn signal_id(signal_id: impl Into<String>, signal_payload: Value) -> Self {
        Transmission {
            signal: Some((SignalTarget::SignalId(signal_id.into()), signal_payload)),
            ..Transmission::signal_for("", Value::Null)
        }
    }

    /// Sets the intent.
    #[must_use]
    pub fn intent(mut self, intent: DispatchIntent) -> Self {
        self.intent = Some(intent);
        self
    }

    /// Sets the session id.
    #[must_use]
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Classifies the transmission (§3.4): deterministic from the transmission alone.
    /// `None` when it fits no path (a signal intent without a signal, or a signal on a
    /// non-signal intent): `harness_path_classification_ambiguous`.
    pub fn classify(&self, mode: HarnessMode) -> Option<DispatchPath> {
        let signal = self.signal.is_some();
        match (mode, self.intent, signal) {
            (_, Some(DispatchIntent::SignalResume), false) => None,
            (_, Some(DispatchIntent::NewSession | DispatchIntent::ExistingSession), true) => None,
            (HarnessMode::Stateless, _, _) => Some(DispatchPath::Stateless),
            (HarnessMode::Sessioned, _, true) => Some(DispatchPath::SignalResume),
            (HarnessMode::Sessioned, Some(DispatchIntent::ExistingSession), false) => {
                Some(DispatchPath::ExistingSession)
            }
            // A new-session intent, or no intent: a session id names an existing
            // session only when the transport says so.
            (HarnessMode::Sessioned, _, false) => Some(DispatchPath::NewSession),
        }
    }
}
