//! The control session over each broker session (`docs/control-session.md`): owner, mode,
//! generation, target revision, Stop and restart, and the screenshot geometry history.
//!
//! Rules:
//! - A session starts unowned at generation 1. While unowned, requests without a control token
//!   may act (the API before control sessions). A claim (`POST .../control`) names an owner and
//!   advances the generation; from then on only a program carrying that owner and generation
//!   acts. A different owner, or a request without a token, gets `control_busy`.
//! - Stop advances the generation and marks the session stopped *before* anything else (the
//!   caller then releases held input); every later request is `control_stopped` and a step
//!   about to run under the old generation is never sent. Only `POST .../control/restart`
//!   gives a new generation. Stop is idempotent: a second Stop changes nothing.
//! - Every reset is a new bind of the app window: the target revision advances.
//! - The state is written to `<session>/control.json` (0600, replaced atomically) before the
//!   answer, so a restarted broker keeps the generation and never resurrects a stopped one.
//! - Screenshot geometry (never pixels) of the last [`shots::HISTORY`] images is kept in memory,
//!   tagged with the generation and revision it was issued under (`shots.rs`); so is the
//!   current accessibility observation's id and node windows (`ax.rs`); the methods that
//!   record and read both are in `observed.rs`. `Persisted` lives with its file (`persist.rs`),
//!   and [`Scope`] with the control refusal in `scope.rs`, so no part names this module back.
//!
//! The state lives beside the session row, not in it: Stop must never wait for the session's
//! lock or queue (a program holds both while it runs and rechecks this state before each step).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use desk_contract::ErrorCode;
use desk_contract::control::{ControlClaim, ControlMode, ControlStatus, ControlToken, StopReason};
use desk_desktop::SessionDir;

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::util::check_identifier;

pub(crate) mod ax;
mod observed;
mod ops;
mod persist;
mod scope;
pub(crate) mod shots;
mod zoom;

use persist::Persisted;
pub(crate) use scope::Scope;
use scope::refusal;

struct State {
    persisted: Persisted,
    shots: shots::History,
    /// The current accessibility observation (`ax.rs`).
    ax: Option<ax::Observation>,
}

/// Every session's control state.
#[derive(Default)]
pub(crate) struct Controls {
    states: Mutex<HashMap<SessionId, State>>,
}

impl State {
    fn status(&self, session_id: &SessionId) -> ControlStatus {
        let persisted = &self.persisted;
        ControlStatus {
            session_id: session_id.to_string(),
            owner: persisted.owner.clone(),
            mode: persisted.mode,
            generation: persisted.generation,
            target_revision: persisted.target_revision,
            stopped: persisted.stopped,
            stop_reason: persisted.stop_reason,
        }
    }

    fn scope(&self) -> Scope {
        Scope {
            generation: self.persisted.generation,
            target_revision: self.persisted.target_revision,
        }
    }

    /// Refuses input in this state for a request with `token`.
    fn admit(&self, token: Option<&ControlToken>) -> Result<Scope, BrokerError> {
        self.admit_as(token, false)
    }

    /// [`State::admit`]; `observe_allowed`: the work only reads (a clipboard read), which
    /// observe mode allows.
    fn admit_as(
        &self,
        token: Option<&ControlToken>,
        observe_allowed: bool,
    ) -> Result<Scope, BrokerError> {
        let persisted = &self.persisted;
        if persisted.stopped {
            return Err(refusal(
                ErrorCode::ControlStopped,
                format!(
                    "control generation {} was stopped; only POST .../control/restart starts a \
                     new one",
                    persisted.generation
                ),
            ));
        }
        match (&persisted.owner, token) {
            (Some(owner), Some(token)) if *owner != token.owner => {
                return Err(refusal(
                    ErrorCode::ControlBusy,
                    "another owner holds this session's control",
                ));
            }
            (Some(_), None) => {
                return Err(refusal(
                    ErrorCode::ControlBusy,
                    "this session's control is claimed: send the owner's control token",
                ));
            }
            (None, Some(_)) => {
                return Err(refusal(
                    ErrorCode::ControlBusy,
                    "this session's control is not claimed: claim it first, or send no token",
                ));
            }
            _ => {}
        }
        if let Some(token) = token
            && token.generation != persisted.generation
        {
            return Err(refusal(
                ErrorCode::ControlStaleGeneration,
                format!(
                    "control generation {} is not the current one ({})",
                    token.generation, persisted.generation
                ),
            ));
        }
        if persisted.mode == ControlMode::Observe && !observe_allowed {
            return Err(refusal(
                ErrorCode::ControlObserveOnly,
                "the control session is in observe mode: no input is sent",
            ));
        }
        Ok(self.scope())
    }

    /// Whether work admitted under `scope` may still run.
    fn recheck(&self, scope: Scope) -> Result<(), BrokerError> {
        let current = self.scope();
        if self.persisted.stopped {
            Err(refusal(
                ErrorCode::ControlStopped,
                format!("control generation {} was stopped", scope.generation),
            ))
        } else if current.generation != scope.generation {
            Err(refusal(
                ErrorCode::ControlStaleGeneration,
                format!(
                    "control generation {} was replaced by {}",
                    scope.generation, current.generation
                ),
            ))
        } else if current.target_revision != scope.target_revision {
            Err(refusal(
                ErrorCode::ControlStaleGeneration,
                format!(
                    "target revision {} was replaced by {}",
                    scope.target_revision, current.target_revision
                ),
            ))
        } else {
            Ok(())
        }
    }
}

impl Controls {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, State>> {
        self.states
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `operation` on the session's state, loading it from `control.json` on first use.
    /// When `operation` changed the durable part, it is written before this returns; a failed
    /// write leaves the state as it was.
    fn with<T>(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        operation: impl FnOnce(&mut State) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let mut states = self.lock();
        if !states.contains_key(session_id) {
            let persisted = persist::load(dir)?;
            states.insert(
                session_id.clone(),
                State {
                    persisted,
                    shots: shots::History::default(),
                    ax: None,
                },
            );
        }
        let Some(state) = states.get_mut(session_id) else {
            return Err(BrokerError::Internal("control state vanished".to_string()));
        };
        let before = state.persisted.clone();
        let answer = operation(state)?;
        if state.persisted != before
            && let Err(error) = persist::save(dir, &state.persisted)
        {
            state.persisted = before;
            return Err(error);
        }
        Ok(answer)
    }

    /// The session's control state.
    pub(crate) fn status(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
    ) -> Result<ControlStatus, BrokerError> {
        self.with(session_id, dir, |state| Ok(state.status(session_id)))
    }

    /// `POST .../control`: claims an unowned session (a new generation) or changes the mode of
    /// the owner's own one (a new generation as well; the same mode again changes nothing).
    pub(crate) fn claim(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        claim: &ControlClaim,
    ) -> Result<ControlStatus, BrokerError> {
        check_identifier("owner", &claim.owner)?;
        self.with(session_id, dir, |state| {
            let persisted = &mut state.persisted;
            if persisted.stopped {
                return Err(refusal(
                    ErrorCode::ControlStopped,
                    "the control session was stopped; POST .../control/restart starts a new \
                     generation",
                ));
            }
            match &persisted.owner {
                Some(owner) if *owner != claim.owner => {
                    return Err(refusal(
                        ErrorCode::ControlBusy,
                        "another owner holds this session's control",
                    ));
                }
                // A mode change is a new generation too: work admitted under the old mode
                // (a running program, a settle or `wait` in the worker) stops at its next
                // check instead of acting in a mode that no longer allows it.
                Some(_) if persisted.mode != claim.mode => {
                    persisted.mode = claim.mode;
                    persisted.generation = persisted.generation.saturating_add(1);
                }
                Some(_) => {}
                None => {
                    persisted.owner = Some(claim.owner.clone());
                    persisted.mode = claim.mode;
                    persisted.generation = persisted.generation.saturating_add(1);
                }
            }
            Ok(state.status(session_id))
        })
    }

    /// `POST .../control/restart`: the only way out of a stopped generation: a new generation
    /// for `claim.owner`.
    pub(crate) fn restart(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        claim: &ControlClaim,
    ) -> Result<ControlStatus, BrokerError> {
        check_identifier("owner", &claim.owner)?;
        self.with(session_id, dir, |state| {
            let persisted = &mut state.persisted;
            if !persisted.stopped {
                return Err(BrokerError::InvalidState {
                    operation: "restart_control",
                    reason: "the control session is not stopped".to_string(),
                });
            }
            persisted.owner = Some(claim.owner.clone());
            persisted.mode = claim.mode;
            persisted.stopped = false;
            persisted.stop_reason = None;
            persisted.generation = persisted.generation.saturating_add(1);
            Ok(state.status(session_id))
        })
    }

    /// Stop: advances the generation and marks the session stopped (written before it
    /// returns). A second Stop changes nothing.
    pub(crate) fn stop(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        reason: StopReason,
    ) -> Result<ControlStatus, BrokerError> {
        self.with(session_id, dir, |state| {
            let persisted = &mut state.persisted;
            if !persisted.stopped {
                persisted.stopped = true;
                persisted.stop_reason = Some(reason);
                persisted.generation = persisted.generation.saturating_add(1);
            }
            Ok(state.status(session_id))
        })
    }

    /// A reset bound the app window again: a new target revision.
    pub(crate) fn rebind(&self, id: &SessionId, dir: &SessionDir) -> Result<(), BrokerError> {
        self.with(id, dir, |state| {
            state.persisted.target_revision = state.persisted.target_revision.saturating_add(1);
            Ok(())
        })
    }

    /// Admission: whether a request with `token` may send input now, and under which scope.
    pub(crate) fn admit(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        token: Option<&ControlToken>,
    ) -> Result<Scope, BrokerError> {
        self.with(session_id, dir, |state| state.admit(token))
    }

    /// [`Controls::admit`] for work that only reads, which observe mode allows.
    pub(crate) fn admit_read(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        token: Option<&ControlToken>,
    ) -> Result<Scope, BrokerError> {
        self.with(session_id, dir, |state| state.admit_as(token, true))
    }

    /// The current generation and target revision, without admission's checks.
    pub(crate) fn scope_now(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
    ) -> Result<Scope, BrokerError> {
        self.with(session_id, dir, |state| Ok(state.scope()))
    }

    /// Before every step and before the final observation: whether work admitted under
    /// `scope` may still run.
    pub(crate) fn recheck(
        &self,
        session_id: &SessionId,
        dir: &SessionDir,
        scope: Scope,
    ) -> Result<(), BrokerError> {
        self.with(session_id, dir, |state| state.recheck(scope))
    }

    /// Forgets a released session's in-memory state.
    pub(crate) fn forget(&self, session_id: &SessionId) {
        self.lock().remove(session_id);
    }
}

#[cfg(test)]
mod tests;
