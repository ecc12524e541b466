//! One door into a session's core: [`Inner::enter`] opens a session for one operation and
//! hands it a [`Door`].
//!
//! Opening is the same for every operation: an unknown session is `not_found` (before any
//! slot is made for it), then the session's desktop lock is taken for the whole operation and
//! the row is read under it, then what the operation [`Need`]s is checked (liveness, phase).
//! An operation whose own checks come first (an action is validated before its lease is
//! checked) enters with [`Need::Unchecked`] and calls [`Door::require`] when its turn comes.
//!
//! The door holds the row, the desktop and its display, and admits input under the session's
//! control generation ([`Door::admit`]). [`Door::commit`] is the only place an
//! operation saves the session row; an accepted action hands the row to the ledger
//! ([`Door::into_action`]), which saves it with its journal rows. "A ready session without a
//! desktop" is written once, here ([`Door::desktop`]).

use desk_contract::DisplaySize;
use desk_contract::control::ControlToken;
use desk_desktop::DesktopBackend;

use crate::broker::{Inner, Runtime};
use crate::control::Scope;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::store::SessionRow;

/// What an operation needs of the session before it may go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing yet: release (any phase), or an operation that checks later with
    /// [`Door::require`].
    Unchecked,
    /// A live session: not released, killed or expired, in any phase (retrieval, reset and
    /// actions, whose phase rules are their own).
    Live,
    /// Live, and `ready` or `done`: observations, zoom, checkpoint, the clipboard.
    Observe,
}

/// An open session: its row, read under its desktop lock, and its desktop.
pub(crate) struct Door<'a> {
    inner: &'a Inner,
    runtime: &'a mut Runtime,
    session: SessionRow,
    operation: &'static str,
}

impl Inner {
    /// Opens `session_id` for `operation`, checks `need` and runs `body` with the door, the
    /// desktop lock held throughout.
    pub(crate) fn enter<T>(
        &self,
        session_id: &SessionId,
        operation: &'static str,
        need: Need,
        body: impl FnOnce(Door<'_>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        self.load(session_id)?;
        let slot = self.slot(session_id);
        let mut runtime = slot.lock();
        let session = self.load(session_id)?;
        let door = Door {
            inner: self,
            runtime: &mut runtime,
            session,
            operation,
        };
        door.require(need)?;
        body(door)
    }

    /// Opens `session_id` for an operation that never waits for the desktop lock: a control
    /// operation (claim, Stop, restart, status: a running program holds the lock and rechecks
    /// the control state before each step), or an approved action's admission, which enters
    /// again with [`Inner::enter`] for the desktop. The row is read without the lock, must be
    /// live, and is not saved (the control state lives in `control.json`).
    pub(crate) fn enter_unlocked(
        &self,
        session_id: &SessionId,
        operation: &'static str,
    ) -> Result<SessionRow, BrokerError> {
        let session = self.load(session_id)?;
        self.check_live(&session, operation)?;
        Ok(session)
    }
}

impl<'a> Door<'a> {
    /// Checks `need` now.
    pub(crate) fn require(&self, need: Need) -> Result<(), BrokerError> {
        match need {
            Need::Unchecked => Ok(()),
            Need::Live => self.inner.check_live(&self.session, self.operation),
            Need::Observe => {
                self.inner.check_live(&self.session, self.operation)?;
                self.session.lifecycle.check_observe(self.operation)
            }
        }
    }

    /// Admission to send input under the control state (owner, generation, Stop) for a
    /// request with `token`: the scope the input must still be current under.
    pub(crate) fn admit(&self, token: Option<&ControlToken>) -> Result<Scope, BrokerError> {
        self.inner
            .controls
            .admit(&self.session.id, &self.session.dir(), token)
    }

    /// The current control scope, without admission's checks.
    pub(crate) fn scope_now(&self) -> Result<Scope, BrokerError> {
        self.inner
            .controls
            .scope_now(&self.session.id, &self.session.dir())
    }

    /// The session's row as read at the door (with the operation's changes so far).
    pub(crate) fn session(&self) -> &SessionRow {
        &self.session
    }

    /// The row, to change before [`Door::commit`].
    pub(crate) fn session_mut(&mut self) -> &mut SessionRow {
        &mut self.session
    }

    /// The display actions are validated against.
    pub(crate) fn display(&self) -> DisplaySize {
        self.runtime.display
    }

    /// The session's in-memory part (to create or take its desktop).
    pub(crate) fn runtime(&mut self) -> &mut Runtime {
        self.runtime
    }

    /// The session's desktop; a session past reset always has one.
    pub(crate) fn desktop(&mut self) -> Result<&mut dyn DesktopBackend, BrokerError> {
        match self.runtime.backend.as_mut() {
            Some(backend) => Ok(backend.as_mut()),
            None => Err(no_desktop()),
        }
    }

    /// Extends the lease from now.
    pub(crate) fn renew(&mut self) {
        self.inner.renew(&mut self.session);
    }

    /// Saves the session row: the one place an operation writes it.
    pub(crate) fn commit(&mut self) -> Result<(), BrokerError> {
        self.inner.store.save_session(&self.session)
    }

    /// Hands an action the desktop, its display and the row (the ledger saves the row from
    /// now on). Without a desktop the session's phase refuses the action (leased before reset)
    /// for `expected_index`, else it is the missing desktop.
    pub(crate) fn into_action(
        self,
        expected_index: u64,
    ) -> Result<(&'a mut dyn DesktopBackend, DisplaySize, SessionRow), BrokerError> {
        let display = self.runtime.display;
        match self.runtime.backend.as_mut() {
            Some(backend) => Ok((backend.as_mut(), display, self.session)),
            None => Err(self
                .session
                .lifecycle
                .accept(expected_index)
                .err()
                .unwrap_or_else(no_desktop)),
        }
    }
}

/// A session past reset without a desktop: never written by the broker.
fn no_desktop() -> BrokerError {
    BrokerError::Internal("ready session without a desktop".to_string())
}
