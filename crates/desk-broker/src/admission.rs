//! Fair sessions: a request waits for its session's turn on the async runtime, not on a thread.
//!
//! Every operation that takes a session's lock (reset, screenshot, actions, checkpoint, artifact,
//! logs, release) is first admitted here: it joins the session's queue and waits, without
//! holding a thread, for the session's single permit; only then does it go to tokio's blocking
//! pool, where the session's lock is free. So no blocking thread ever waits for a
//! session, and the pool stays free for auth, status and the other sessions however many
//! requests one session receives.
//!
//! Bounded queue: a session admits one running request and at most
//! [`crate::BrokerConfig::session_queue`] waiting ones; the next one is refused at once with
//! `session_busy` (429) and changes nothing (it was not journaled, so a retry under the same
//! request id later runs, or replays, by the usual rules). The permit is FIFO, and it is held by
//! the blocking operation itself, so a client that goes away cannot let a second operation of
//! the same session start before the first one ends.
//!
//! `Broker::run` (`broker/run.rs`), the one way broker operations reach the blocking pool, takes
//! a session's turn here first. The lease reaper waits its turn unbounded
//! (`Broker::run_unbounded`); status, leases, auth and the status long-poll take no turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::BrokerError;
use crate::ids::SessionId;

/// One session's queue: its permit and how many requests hold or wait for it.
struct Gate {
    permit: Arc<Semaphore>,
    n_holders: usize,
}

/// The queues of every session with a request in flight. A session's entry exists only while
/// some request holds or waits for its permit.
#[derive(Default)]
pub(crate) struct Admission {
    gates: Mutex<HashMap<SessionId, Gate>>,
}

/// A session's turn: held by the operation for its whole run; dropping it lets the next
/// waiting request of the session start.
pub(crate) struct Turn {
    _permit: OwnedSemaphorePermit,
    _place: Place,
}

/// A place in a session's queue, held while waiting and during the turn; dropping it leaves.
struct Place {
    admission: Arc<Admission>,
    session_id: SessionId,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.admission.leave(&self.session_id);
    }
}

impl Admission {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Gate>> {
        self.gates.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Joins `session_id`'s queue, or refuses with `session_busy` when `limit` requests
    /// already wait behind the running one, and waits for the session's turn. Cancel-safe: a
    /// request dropped while waiting leaves the queue.
    pub(crate) async fn enter(
        self: &Arc<Self>,
        session_id: &SessionId,
        limit: usize,
    ) -> Result<Turn, BrokerError> {
        let (place, permit) = {
            let mut gates = self.lock();
            let gate = gates.entry(session_id.clone()).or_insert_with(|| Gate {
                permit: Arc::new(Semaphore::new(1)),
                n_holders: 0,
            });
            if gate.n_holders > limit {
                tracing::debug!(%session_id, n_waiting = limit, "session queue full");
                return Err(BrokerError::SessionBusy(format!(
                    "session {session_id} already has {limit} requests waiting; retry later"
                )));
            }
            gate.n_holders += 1;
            let place = Place {
                admission: Arc::clone(self),
                session_id: session_id.clone(),
            };
            (place, Arc::clone(&gate.permit))
        };
        let permit = permit
            .acquire_owned()
            .await
            .map_err(|_| BrokerError::Internal("a session queue was closed".to_string()))?;
        Ok(Turn {
            _permit: permit,
            _place: place,
        })
    }

    fn leave(&self, session_id: &SessionId) {
        let mut gates = self.lock();
        if let Some(gate) = gates.get_mut(session_id) {
            gate.n_holders = gate.n_holders.saturating_sub(1);
            if gate.n_holders == 0 {
                gates.remove(session_id);
            }
        }
    }

    /// How many requests hold or wait for `session_id`'s turn.
    #[cfg(test)]
    pub(crate) fn n_holders(&self, session_id: &SessionId) -> usize {
        self.lock().get(session_id).map_or(0, |gate| gate.n_holders)
    }
}

#[cfg(test)]
mod tests;
