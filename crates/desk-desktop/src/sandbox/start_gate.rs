//! How many sandboxes start at once, and how long a start may take.
//!
//! bwrap builds each sandbox's root in a fresh mount namespace, one mount per bound path (an
//! allowlist view binds many), and the kernel serializes changes to mount tables. Twenty
//! starts racing on two cores, while other desktops' apps were starting, overran a 10 s bound
//! (`deskbroker load`, docs/operations.md). So a broker process starts at most
//! [`slots_for_host`] sandboxes at once (one per core); the others wait their turn, at most
//! [`SLOT_WAIT`], and a start's own bound ([`super::START_TIMEOUT`]) counts from when it holds
//! a slot. Overrunning either bound is [`BackendError::StartTimedOut`]: the host was busy, the
//! sandbox is not unavailable, and a later reset may succeed.

use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::error::BackendError;

/// How long a start may wait for a slot: twenty starts queued behind one another on a busy
/// host finish well within it (each holds its slot for well under a second once it runs).
pub(crate) const SLOT_WAIT: Duration = Duration::from_secs(60);

/// A counting semaphore for sandbox starts.
#[derive(Debug)]
pub(crate) struct StartGate {
    slots: usize,
    busy: Mutex<usize>,
    freed: Condvar,
}

/// A held slot; dropping it lets the next start in.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    gate: &'a StartGate,
}

impl StartGate {
    /// A gate letting `slots` starts run at once (at least one).
    pub(crate) fn new(slots: usize) -> StartGate {
        StartGate {
            slots: slots.max(1),
            busy: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Takes a slot, waiting at most `wait` for one to free.
    pub(crate) fn enter(&self, wait: Duration) -> Result<Slot<'_>, BackendError> {
        let deadline = Instant::now() + wait;
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy >= self.slots {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(BackendError::StartTimedOut(format!(
                    "no sandbox start slot freed within {} s ({} starts at once on this host)",
                    wait.as_secs(),
                    self.slots
                )));
            }
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *busy += 1;
        Ok(Slot { gate: self })
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut busy = self
            .gate
            .busy
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *busy = busy.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

/// One start per core this process may use (at least one).
pub(crate) fn slots_for_host() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The broker process's gate.
pub(crate) fn host_gate() -> &'static StartGate {
    static GATE: OnceLock<StartGate> = OnceLock::new();
    GATE.get_or_init(|| StartGate::new(slots_for_host()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_gate_refuses_with_a_timeout_and_a_freed_slot_admits() {
        let gate = StartGate::new(1);
        let held = gate.enter(Duration::ZERO).expect("the first slot");
        match gate.enter(Duration::from_millis(1)) {
            Err(BackendError::StartTimedOut(message)) => {
                assert!(message.contains("1 starts at once"), "{message}");
            }
            other => panic!("expected StartTimedOut, got {other:?}"),
        }
        drop(held);
        let again = gate.enter(Duration::ZERO).expect("the freed slot");
        drop(again);
    }

    #[test]
    fn a_waiting_start_gets_the_slot_its_holder_frees() {
        let gate = std::sync::Arc::new(StartGate::new(1));
        let held = gate.enter(Duration::ZERO).expect("the first slot");
        let (entered, done) = std::sync::mpsc::channel();
        let waiter = {
            let gate = std::sync::Arc::clone(&gate);
            std::thread::spawn(move || {
                let slot = gate.enter(SLOT_WAIT).map(drop);
                let _ = entered.send(slot.is_ok());
            })
        };
        drop(held);
        assert_eq!(done.recv().ok(), Some(true));
        waiter.join().expect("the waiter");
    }

    #[test]
    fn no_gate_has_zero_slots() {
        let gate = StartGate::new(0);
        drop(gate.enter(Duration::ZERO).expect("one slot at least"));
    }
}
