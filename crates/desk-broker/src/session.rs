//! The session state machine: the one place that decides a session's phase.
//!
//! A session moves `leased → ready ⇄ running → ready | done`, may fail into `error` from any
//! live phase, and ends `released`, or `killed` (the watchdog or the kill switch destroyed its
//! workspace; `kill.rs`). Each [`Phase`] carries only its own data (the action in
//! flight, the failure, whether the lease expired). [`Lifecycle`] pairs the phase with the next
//! action index; its fields are private, so every state write in the broker is one of the pure
//! transitions below (no I/O, no SQLite; `session/tests.rs` checks them with random operation
//! sequences). Callers persist the new lifecycle with the rest of the session row (`store.rs`).
//!
//! Invariants the transitions keep:
//! - exactly-once: an action index is handed out by [`Lifecycle::accept`] once; only
//!   [`Lifecycle::withdraw`] (nothing was sent) gives it back;
//! - no input after error: `error` leaves only through release, and only `ready` accepts;
//! - no resurrection: `released` and `killed` are final; every transition from them refuses or
//!   is a no-op.

use desk_contract::ErrorCode;
use desk_contract::api::SessionState;

use crate::error::BrokerError;
use crate::ids::SessionId;

/// Why a session failed (or why its last reset failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// A session's phase with the data only that phase has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Leased, not yet reset; a failed reset leaves its reason and the session stays here.
    Leased { failed_reset: Option<Failure> },
    /// Reset done; accepts the next action.
    Ready,
    /// Action `action_index` is journaled and may be reaching the desktop.
    Running { action_index: u64 },
    /// The agent declared the task done; only observation, checkpoint and release remain.
    Done,
    /// Failed; only status, retrieval of what exists, and release remain.
    Error(Failure),
    /// Released (explicitly, or by the reaper when `expired`); keeps the failure it ended with.
    Released {
        expired: bool,
        failure: Option<Failure>,
    },
    /// Killed (watchdog limit or kill switch); the failure's code is `session_killed` and its
    /// message the reason.
    Killed(Failure),
}

/// The phase and the next action index. Construct with [`Lifecycle::leased`] or
/// [`Lifecycle::from_stored`]; change only through the transitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    phase: Phase,
    next_action_index: u64,
}

/// A lifecycle as the `sessions` table stores it (columns `state`, `expired`,
/// `last_error_code`, `last_error_message`, `next_action_index`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredLifecycle {
    pub(crate) state: SessionState,
    pub(crate) expired: bool,
    pub(crate) error_code: Option<String>,
    pub(crate) error_message: Option<String>,
    pub(crate) next_action_index: u64,
}

fn parse_code(code: &str) -> ErrorCode {
    serde_json::from_value(serde_json::Value::String(code.to_string()))
        .unwrap_or(ErrorCode::Internal)
}

impl Lifecycle {
    /// A fresh lease.
    pub(crate) fn leased() -> Lifecycle {
        Lifecycle {
            phase: Phase::Leased { failed_reset: None },
            next_action_index: 0,
        }
    }

    /// Rebuilds a lifecycle from its stored columns. A failure stored beside a phase that has
    /// none (never written by the broker) is dropped; an `error` row without a code is
    /// `internal`.
    pub(crate) fn from_stored(stored: StoredLifecycle) -> Lifecycle {
        let failure = stored.error_code.as_deref().map(|code| {
            Failure::new(
                parse_code(code),
                stored.error_message.clone().unwrap_or_default(),
            )
        });
        let phase = match stored.state {
            SessionState::Leased => Phase::Leased {
                failed_reset: failure,
            },
            SessionState::Ready => Phase::Ready,
            SessionState::Running => Phase::Running {
                action_index: stored.next_action_index.saturating_sub(1),
            },
            SessionState::Done => Phase::Done,
            SessionState::Error => Phase::Error(
                failure.unwrap_or_else(|| Failure::new(ErrorCode::Internal, "unknown")),
            ),
            SessionState::Released => Phase::Released {
                expired: stored.expired,
                failure,
            },
            SessionState::Killed => Phase::Killed(Failure::new(
                ErrorCode::SessionKilled,
                stored.error_message.unwrap_or_default(),
            )),
        };
        Lifecycle {
            phase,
            next_action_index: stored.next_action_index,
        }
    }

    /// The columns to store.
    pub(crate) fn to_stored(&self) -> StoredLifecycle {
        let failure = self.last_error();
        StoredLifecycle {
            state: self.state(),
            expired: self.expired(),
            error_code: failure.map(|failure| failure.code.as_str().to_string()),
            error_message: failure.map(|failure| failure.message.clone()),
            next_action_index: self.next_action_index,
        }
    }

    pub(crate) fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The wire state.
    pub(crate) fn state(&self) -> SessionState {
        match self.phase {
            Phase::Leased { .. } => SessionState::Leased,
            Phase::Ready => SessionState::Ready,
            Phase::Running { .. } => SessionState::Running,
            Phase::Done => SessionState::Done,
            Phase::Error(_) => SessionState::Error,
            Phase::Released { .. } => SessionState::Released,
            Phase::Killed(_) => SessionState::Killed,
        }
    }

    pub(crate) fn next_action_index(&self) -> u64 {
        self.next_action_index
    }

    /// Whether the reaper released the session because its lease expired.
    pub(crate) fn expired(&self) -> bool {
        matches!(self.phase, Phase::Released { expired: true, .. })
    }

    /// The failure status reports: the session's error, a failed reset, or the error a
    /// released session ended with.
    pub(crate) fn last_error(&self) -> Option<&Failure> {
        match &self.phase {
            Phase::Error(failure) | Phase::Killed(failure) => Some(failure),
            Phase::Leased { failed_reset } => failed_reset.as_ref(),
            Phase::Released { failure, .. } => failure.as_ref(),
            Phase::Ready | Phase::Running { .. } | Phase::Done => None,
        }
    }

    /// The refusal of `operation` in the current phase.
    pub(crate) fn refuse(&self, operation: &'static str) -> BrokerError {
        let reason = match &self.phase {
            Phase::Leased { .. } => "the session has not been reset yet".to_string(),
            Phase::Done => "the session is done".to_string(),
            Phase::Error(failure) => format!(
                "the session is in error ({}: {})",
                failure.code.as_str(),
                failure.message
            ),
            _ => format!("the session is {}", self.state().as_str()),
        };
        BrokerError::InvalidState { operation, reason }
    }

    /// Refuses released and expired sessions (`expires_at_ms` is the lease's end).
    pub(crate) fn check_live(
        &self,
        session_id: &SessionId,
        expires_at_ms: u64,
        now_ms: u64,
        operation: &'static str,
    ) -> Result<(), BrokerError> {
        if let Phase::Killed(failure) = &self.phase {
            return Err(BrokerError::SessionKilled {
                session_id: session_id.to_string(),
                reason: failure.message.clone(),
            });
        }
        let released = matches!(self.phase, Phase::Released { .. });
        if self.expired() || (!released && expires_at_ms < now_ms) {
            return Err(BrokerError::LeaseExpired(session_id.to_string()));
        }
        if released {
            return Err(BrokerError::InvalidState {
                operation,
                reason: "the session was released".to_string(),
            });
        }
        Ok(())
    }

    /// Reset may run (only from `leased`).
    pub(crate) fn check_reset(&self) -> Result<(), BrokerError> {
        match self.phase {
            Phase::Leased { .. } => Ok(()),
            _ => Err(self.refuse("reset")),
        }
    }

    /// Observation and checkpoint may run (`ready` or `done`).
    pub(crate) fn check_observe(&self, operation: &'static str) -> Result<(), BrokerError> {
        match self.phase {
            Phase::Ready | Phase::Done => Ok(()),
            _ => Err(self.refuse(operation)),
        }
    }

    /// The reset's handoff failed; the session stays `leased` with the reason.
    pub(crate) fn reset_failed(&self, failure: Failure) -> Result<Lifecycle, BrokerError> {
        self.check_reset()?;
        Ok(self.with(Phase::Leased {
            failed_reset: Some(failure),
        }))
    }

    /// The reset handed off a verified first frame: `leased → ready`.
    pub(crate) fn reset_done(&self) -> Result<Lifecycle, BrokerError> {
        self.check_reset()?;
        Ok(self.with(Phase::Ready))
    }

    /// Accepts the action the agent expects at `expected_index`: `ready → running`. Returns the
    /// new lifecycle and the action's index.
    pub(crate) fn accept(&self, expected_index: u64) -> Result<(Lifecycle, u64), BrokerError> {
        if self.phase != Phase::Ready {
            return Err(self.refuse("execute_action"));
        }
        if expected_index != self.next_action_index {
            return Err(BrokerError::SequenceConflict(format!(
                "expected_action_index is {expected_index} but the next action index is {}",
                self.next_action_index
            )));
        }
        let action_index = self.next_action_index;
        Ok((
            Lifecycle {
                phase: Phase::Running { action_index },
                next_action_index: action_index.saturating_add(1),
            },
            action_index,
        ))
    }

    fn in_flight(&self) -> Result<u64, BrokerError> {
        match self.phase {
            Phase::Running { action_index } => Ok(action_index),
            _ => Err(BrokerError::Internal(format!(
                "no action in flight in state {}",
                self.state().as_str()
            ))),
        }
    }

    /// Nothing of the action in flight was sent: `running → ready`, its index given back.
    pub(crate) fn withdraw(&self) -> Result<Lifecycle, BrokerError> {
        let action_index = self.in_flight()?;
        Ok(Lifecycle {
            phase: Phase::Ready,
            next_action_index: action_index,
        })
    }

    /// The action in flight completed: `running → done` if it was `done`, else `→ ready`.
    pub(crate) fn complete(&self, done: bool) -> Result<Lifecycle, BrokerError> {
        self.in_flight()?;
        Ok(self.with(if done { Phase::Done } else { Phase::Ready }))
    }

    /// A failure: every live phase goes to `error`; a released or killed session stays so.
    pub(crate) fn fail(&self, failure: Failure) -> Lifecycle {
        match self.phase {
            Phase::Released { .. } | Phase::Killed(_) => self.clone(),
            _ => self.with(Phase::Error(failure)),
        }
    }

    /// A restarted broker could not keep the session's desktop: a `ready` or `running` session
    /// fails; `leased` and `done` keep their phase (they need no desktop to go on).
    pub(crate) fn desktop_lost(&self, failure: Failure) -> Lifecycle {
        match self.phase {
            Phase::Ready | Phase::Running { .. } => self.fail(failure),
            _ => self.clone(),
        }
    }

    /// Release: any phase → `released`, keeping the failure it ended with. Returns `None` when
    /// the session was already released (release is idempotent).
    pub(crate) fn release(&self, expired: bool) -> Option<Lifecycle> {
        match &self.phase {
            Phase::Released { .. } | Phase::Killed(_) => None,
            _ => Some(self.with(Phase::Released {
                expired,
                failure: self.last_error().cloned(),
            })),
        }
    }

    /// Kill: any phase but `released` → `killed` with `reason`. Returns `None` when the session
    /// already ended (killed again: idempotent; released: nothing is left to kill).
    pub(crate) fn kill(&self, reason: &str) -> Option<Lifecycle> {
        match &self.phase {
            Phase::Released { .. } | Phase::Killed(_) => None,
            _ => Some(self.with(Phase::Killed(Failure::new(
                ErrorCode::SessionKilled,
                reason,
            )))),
        }
    }

    fn with(&self, phase: Phase) -> Lifecycle {
        Lifecycle {
            phase,
            next_action_index: self.next_action_index,
        }
    }
}

#[cfg(test)]
mod tests;
