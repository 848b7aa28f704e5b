//! The circuit breaker's state machine: pure, clock-free (times are passed in), so
//! any [`super::BreakerStore`] can run it — in memory, or atomically in a shared
//! store.

use std::collections::VecDeque;
use std::time::Duration;

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BreakerState {
    /// Calls go through; outcomes are counted.
    #[default]
    Closed,
    /// Calls fail at once with `provider_circuit_open`.
    Open,
    /// After the cooldown: a bounded number of probe calls go through.
    HalfOpen,
}

impl BreakerState {
    /// `closed` / `open` / `half_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

/// When the breaker opens, and how it recovers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerPolicy {
    /// Opens after this many consecutive failures (default 5; 0 disables the rule).
    pub consecutive_failures: u32,
    /// Opens when the failure rate over the window reaches this (default 0.5; above
    /// 1.0 disables the rule)...
    pub failure_rate: f64,
    /// ... over the last `window` outcomes (default 20) ...
    pub window: u32,
    /// ... once at least `min_calls` outcomes are in it (default 10).
    pub min_calls: u32,
    /// How long it stays open before probing (default 30 s).
    pub cooldown: Duration,
    /// Concurrent probe calls allowed while half-open (default 1).
    pub half_open_probes: u32,
    /// Successful probes that close it (default 1).
    pub probes_to_close: u32,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        BreakerPolicy {
            consecutive_failures: 5,
            failure_rate: 0.5,
            window: 20,
            min_calls: 10,
            cooldown: Duration::from_secs(30),
            half_open_probes: 1,
            probes_to_close: 1,
        }
    }
}

/// A state change, and why it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The state before.
    pub from: BreakerState,
    /// The state after.
    pub to: BreakerState,
    /// `consecutive_failures`, `failure_rate`, `cooldown_elapsed`, `probe_failed`
    /// or `probe_succeeded`.
    pub reason: &'static str,
}

/// Whether a call may go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It may; `probe` when it is a half-open probe.
    Admitted {
        /// A half-open probe.
        probe: bool,
    },
    /// It may not; the cooldown left (zero while half-open probes are in flight).
    Rejected {
        /// Time until the breaker half-opens.
        retry_in: Duration,
    },
}

/// One endpoint's breaker record.
#[derive(Debug, Clone, Default)]
pub struct BreakerMachine {
    state: BreakerState,
    consecutive: u32,
    outcomes: VecDeque<bool>,
    opened_at: Duration,
    probes_in_flight: u32,
    probe_successes: u32,
}

impl BreakerMachine {
    /// The current state (an open breaker whose cooldown elapsed reports `open`
    /// until the next call half-opens it).
    pub fn state(&self) -> BreakerState {
        self.state
    }

    fn go(&mut self, to: BreakerState, reason: &'static str, now: Duration) -> Transition {
        let from = self.state;
        self.state = to;
        self.probes_in_flight = 0;
        self.probe_successes = 0;
        match to {
            BreakerState::Open => self.opened_at = now,
            BreakerState::Closed => {
                self.consecutive = 0;
                self.outcomes.clear();
            }
            BreakerState::HalfOpen => {}
        }
        Transition { from, to, reason }
    }

    /// While open: how long until the cooldown ends at `now` (`None` otherwise, or
    /// once it ended).
    pub fn open_remaining(&self, policy: &BreakerPolicy, now: Duration) -> Option<Duration> {
        let until = self.opened_at.saturating_add(policy.cooldown);
        (self.state == BreakerState::Open && now < until).then(|| until - now)
    }

    /// Asks to make a call at `now`.
    pub fn acquire(
        &mut self,
        policy: &BreakerPolicy,
        now: Duration,
    ) -> (Admission, Option<Transition>) {
        let mut transition = None;
        if self.state == BreakerState::Open {
            let until = self.opened_at.saturating_add(policy.cooldown);
            if now < until {
                let retry_in = until - now;
                return (Admission::Rejected { retry_in }, None);
            }
            transition = Some(self.go(BreakerState::HalfOpen, "cooldown_elapsed", now));
        }
        let admission = match self.state {
            BreakerState::Closed => Admission::Admitted { probe: false },
            _ if self.probes_in_flight < policy.half_open_probes.max(1) => {
                self.probes_in_flight += 1;
                Admission::Admitted { probe: true }
            }
            _ => Admission::Rejected {
                retry_in: Duration::ZERO,
            },
        };
        (admission, transition)
    }

    /// Records the outcome of an admitted call.
    pub fn record(
        &mut self,
        policy: &BreakerPolicy,
        probe: bool,
        failed: bool,
        now: Duration,
    ) -> Option<Transition> {
        if probe {
            self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
            if self.state != BreakerState::HalfOpen {
                return None;
            }
            if failed {
                return Some(self.go(BreakerState::Open, "probe_failed", now));
            }
            self.probe_successes += 1;
            if self.probe_successes >= policy.probes_to_close.max(1) {
                return Some(self.go(BreakerState::Closed, "probe_succeeded", now));
            }
            return None;
        }
        // A late outcome of a call admitted before the breaker opened: not counted.
        if self.state != BreakerState::Closed {
            return None;
        }
        self.consecutive = if failed { self.consecutive + 1 } else { 0 };
        self.outcomes.push_back(failed);
        while self.outcomes.len() > policy.window.max(1) as usize {
            self.outcomes.pop_front();
        }
        if policy.consecutive_failures > 0 && self.consecutive >= policy.consecutive_failures {
            return Some(self.go(BreakerState::Open, "consecutive_failures", now));
        }
        let n = self.outcomes.len();
        if n > 0 && n >= policy.min_calls.max(1) as usize {
            let failures = self.outcomes.iter().filter(|f| **f).count();
            #[allow(clippy::cast_precision_loss)]
            let rate = failures as f64 / n as f64;
            if rate >= policy.failure_rate {
                return Some(self.go(BreakerState::Open, "failure_rate", now));
            }
        }
        None
    }

    /// Gives back an admission whose call was abandoned (cancelled) before it
    /// finished.
    pub fn release(&mut self, probe: bool) {
        if probe {
            self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn opens_on_consecutive_failures_half_opens_and_closes() {
        let p = BreakerPolicy {
            consecutive_failures: 3,
            cooldown: s(10),
            ..BreakerPolicy::default()
        };
        let mut m = BreakerMachine::default();
        for i in 0..3 {
            assert_eq!(m.acquire(&p, s(0)).0, Admission::Admitted { probe: false });
            let t = m.record(&p, false, true, s(0));
            assert_eq!(t.is_some(), i == 2);
        }
        assert_eq!(m.state(), BreakerState::Open);
        assert_eq!(
            m.acquire(&p, s(4)).0,
            Admission::Rejected { retry_in: s(6) }
        );
        let (a, t) = m.acquire(&p, s(10));
        assert_eq!(a, Admission::Admitted { probe: true });
        assert_eq!(
            t.map(|t| (t.to, t.reason)),
            Some((BreakerState::HalfOpen, "cooldown_elapsed"))
        );
        assert_eq!(
            m.acquire(&p, s(10)).0,
            Admission::Rejected { retry_in: s(0) },
            "one probe at a time"
        );
        let t = m.record(&p, true, false, s(11));
        assert_eq!(t.map(|t| t.to), Some(BreakerState::Closed));
    }

    #[test]
    fn failed_probe_reopens_and_restarts_the_cooldown() {
        let p = BreakerPolicy {
            consecutive_failures: 1,
            cooldown: s(5),
            ..BreakerPolicy::default()
        };
        let mut m = BreakerMachine::default();
        m.acquire(&p, s(0));
        m.record(&p, false, true, s(0));
        assert!(matches!(
            m.acquire(&p, s(5)).0,
            Admission::Admitted { probe: true }
        ));
        let t = m.record(&p, true, true, s(6));
        assert_eq!(t.map(|t| t.reason), Some("probe_failed"));
        assert_eq!(
            m.acquire(&p, s(8)).0,
            Admission::Rejected { retry_in: s(3) }
        );
    }

    #[test]
    fn opens_on_failure_rate_over_the_window() {
        let p = BreakerPolicy {
            consecutive_failures: 0,
            failure_rate: 0.5,
            window: 4,
            min_calls: 4,
            ..BreakerPolicy::default()
        };
        let mut m = BreakerMachine::default();
        let mut last = None;
        for failed in [true, false, true, false] {
            m.acquire(&p, s(0));
            last = m.record(&p, false, failed, s(0));
        }
        assert_eq!(last.map(|t| t.reason), Some("failure_rate"));
    }

    #[test]
    fn cancelled_probe_frees_its_slot_and_late_outcomes_are_ignored() {
        let p = BreakerPolicy {
            consecutive_failures: 1,
            cooldown: s(1),
            ..BreakerPolicy::default()
        };
        let mut m = BreakerMachine::default();
        m.acquire(&p, s(0));
        m.acquire(&p, s(0));
        m.record(&p, false, true, s(0));
        assert_eq!(m.record(&p, false, true, s(0)), None, "late outcome");
        assert!(matches!(
            m.acquire(&p, s(1)).0,
            Admission::Admitted { probe: true }
        ));
        m.release(true);
        assert!(matches!(
            m.acquire(&p, s(1)).0,
            Admission::Admitted { probe: true }
        ));
    }
}
