//! What the broker tells a session's desktop out of band, through the [`SessionControl`] its
//! backend handed out ([`desk_desktop::DesktopBackend::control`]), kept in the session's slot
//! beside (not behind) the lock its backend is under: Stop's new generation and the lease
//! deadline. Neither waits for the session's turn or a step in progress. A session without a
//! desktop yet has nothing to tell: its first desktop starts after the generation advanced and
//! gets its deadline at the reset's renewal.

use std::sync::{Arc, MutexGuard, PoisonError};

use desk_desktop::SessionControl;

use super::{Inner, Slot};
use crate::ids::SessionId;

impl Slot {
    fn control_lock(&self) -> MutexGuard<'_, Option<Arc<dyn SessionControl>>> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    /// Keeps the control of the session's new desktop (a reset created it). May be called
    /// with the session's lock held: the slot table's lock is taken only for the lookup.
    pub(crate) fn keep_control(&self, session_id: &SessionId, control: Arc<dyn SessionControl>) {
        let slot = self.slot(session_id);
        *slot.control_lock() = Some(control);
    }

    /// The control of the session's desktop, when it has had one; never creates a slot.
    fn control(&self, session_id: &SessionId) -> Option<Arc<dyn SessionControl>> {
        let slot = self.lock_slots().get(session_id).map(Arc::clone)?;
        slot.control_lock().clone()
    }

    /// Tells the session's desktop that the control generation is now `generation`: a step
    /// of an older generation settling there ends `interrupted`.
    pub(crate) fn signal_stop(
        &self,
        session_id: &SessionId,
        generation: u64,
    ) -> std::io::Result<()> {
        match self.control(session_id) {
            Some(control) => control.signal_stop(generation),
            None => Ok(()),
        }
    }

    /// Records the session's desktop's lease deadline (its own backstop).
    pub(crate) fn set_lease_deadline(
        &self,
        session_id: &SessionId,
        deadline_unix_secs: u64,
    ) -> std::io::Result<()> {
        match self.control(session_id) {
            Some(control) => control.set_lease_deadline(deadline_unix_secs),
            None => Ok(()),
        }
    }
}
