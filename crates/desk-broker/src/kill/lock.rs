//! Session `id`'s two kill files below `<state_dir>/kills/` (the lock below the watchdog's
//! directory while the state directory cannot be written: `kill/place.rs`):
//!
//! - the kill lock `<id>.lock`: held exclusively by a kill from before its tombstone until its
//!   receipt is spooled ([`kill_lock`]); only killers take it (the broker only tries it, never
//!   waiting, at release: [`remove_at_release`]), so a kill waits on it only for another kill,
//!   which needs no broker;
//! - the fence `<id>.fence`: held shared by the broker while it writes the records of an action
//!   that has run ([`fence`]), taken exclusively by a kill before its tombstone for at most
//!   [`KILL_FENCE_BOUND`] ([`fence_for_kill`]). A kill never waits longer on the broker: past
//!   the bound it goes on without the fence, and the action the broker was recording is
//!   recorded in doubt (the terminal receipt's `action_in_doubt`; the broker, when it runs
//!   again, closes it in doubt rather than complete: `Ledger::delivered`).
//!
//! Both are released by the kernel when their holder dies, and removed at release when the
//! session was never killed.

use std::time::{Duration, Instant};

use desk_desktop::StateDir;

use super::files::{KillDir, create_kills_dir};
use crate::error::BrokerError;
use crate::ids::SessionId;

/// Takes session `id`'s kill lock: waits for a kill of it under way (a few seconds at most)
/// with `blocking`, else `Ok(None)` when it is held.
pub(super) fn kill_lock(
    kills: &KillDir,
    id: &SessionId,
    blocking: bool,
) -> Result<Option<std::fs::File>, BrokerError> {
    kills.create()?;
    let path = kills.lock(id);
    let file = crate::private::open_lock_file(&path)
        .map_err(BrokerError::io("open the kill lock", &path))?;
    if blocking {
        file.lock()
            .map_err(BrokerError::io("take the kill lock", &path))?;
        return Ok(Some(file));
    }
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(error)) => {
            Err(BrokerError::io("take the kill lock", &path)(error))
        }
    }
}

/// The longest a kill waits for the broker's hold on a session's fence (the broker holds it
/// while it writes an action's records: a few milliseconds). Invariant: no kill ever waits
/// longer than this on anything the broker holds; past it the kill proceeds without the fence
/// (the desktop is destroyed as always) and the action in flight is recorded in doubt, never
/// replayed. A broker stopped, hung or dead inside that window therefore delays a kill by this
/// much at most.
pub const KILL_FENCE_BOUND: Duration = Duration::from_millis(250);

/// How often a kill tries the fence again while the broker holds it.
const FENCE_POLL: Duration = Duration::from_millis(5);

/// Takes session `id`'s fence exclusively for a kill (released on drop), waiting
/// [`KILL_FENCE_BOUND`] at most: polling, never a blocking lock. `None` past the bound (or
/// when the fence cannot be opened or taken): the kill goes on without it, and the action the
/// broker was recording is in doubt.
pub(crate) fn fence_for_kill(state: &StateDir, id: &SessionId) -> Option<std::fs::File> {
    let path = state.kill_fence(id.as_str());
    let file = match crate::private::open_lock_file(&path) {
        Ok(file) => file,
        Err(error) => {
            tracing::error!(session_id = %id, %error, "cannot open the kill fence; the kill goes on");
            return None;
        }
    };
    let deadline = Instant::now() + KILL_FENCE_BOUND;
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(
                    FENCE_POLL.min(deadline.saturating_duration_since(Instant::now())),
                );
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::warn!(
                    session_id = %id,
                    bound_ms = KILL_FENCE_BOUND.as_millis(),
                    "the broker holds the kill fence past the bound; the kill goes on, the action in flight is in doubt"
                );
                return None;
            }
            Err(std::fs::TryLockError::Error(error)) => {
                tracing::error!(session_id = %id, %error, "cannot take the kill fence; the kill goes on");
                return None;
            }
        }
    }
}

/// A shared hold on session `id`'s fence, taken by the broker while it writes the records of
/// an action that has run (log rows, frame, receipt): a kill waits for those few milliseconds
/// ([`KILL_FENCE_BOUND`] at most), and a broker that finds a kill under way (which holds the
/// fence exclusively from before its tombstone until its receipt is spooled) waits for it and
/// then sees its tombstone. `None` (logged) when the fence cannot be opened: the broker then
/// goes on unfenced, as before the fence existed.
pub(crate) fn fence(state: &StateDir, id: &SessionId) -> Option<std::fs::File> {
    let path = state.kill_fence(id.as_str());
    let held = create_kills_dir(state).and_then(|()| {
        crate::private::open_lock_file(&path)
            .and_then(|file| file.lock_shared().map(|()| file))
            .map_err(BrokerError::io("hold the kill fence", &path))
    });
    match held {
        Ok(file) => Some(file),
        Err(error) => {
            tracing::error!(session_id = %id, %error, "cannot fence the kill lock");
            None
        }
    }
}

/// Removes the kill lock and the fence of session `id`, just stored `released`, when it was
/// never killed: each file is taken exclusively without waiting and, only if no tombstone
/// (not even a torn one) exists, unlinked while held. A file someone holds or a tombstone
/// leaves it as it is; a missing file is not created. Best effort: a failure is logged, and
/// the file is only left behind. A killer that opened a file before the unlink (and takes it
/// after) or creates it anew finds the session released and kills nothing.
pub(crate) fn remove_at_release(state: &StateDir, id: &SessionId) {
    remove_unkilled(state, id, &state.kill_fence(id.as_str()));
    remove_unkilled(state, id, &state.kill_lock(id.as_str()));
}

fn remove_unkilled(state: &StateDir, id: &SessionId, path: &std::path::Path) {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => {
            tracing::warn!(session_id = %id, %error, path = %path.display(), "cannot open a kill file to remove it");
            return;
        }
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return,
        Err(std::fs::TryLockError::Error(error)) => {
            tracing::warn!(session_id = %id, %error, path = %path.display(), "cannot take a kill file to remove it");
            return;
        }
    }
    match std::fs::symlink_metadata(state.kill_record(id.as_str())) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        // A tombstone, or one that cannot be ruled out: the file stays.
        _ => return,
    }
    if let Err(error) = std::fs::remove_file(path) {
        tracing::warn!(session_id = %id, %error, path = %path.display(), "failed to remove a kill file");
    }
    drop(file);
}
