//! Session `id`'s kill lock `<state_dir>/kills/<id>.lock`: held exclusively by a kill from
//! before its tombstone until its receipt is spooled ([`kill_lock`]), held shared by the broker
//! while it writes an action's records ([`fence`]), and removed at release when the session was
//! never killed ([`remove_at_release`]). A lock is released by the kernel when its holder dies.

use desk_desktop::StateDir;

use crate::error::BrokerError;
use crate::ids::SessionId;

/// Takes session `id`'s kill lock: waits for a kill of it under way (a few seconds at most)
/// with `blocking`, else `Ok(None)` when it is held.
pub(super) fn kill_lock(
    state: &StateDir,
    id: &SessionId,
    blocking: bool,
) -> Result<Option<std::fs::File>, BrokerError> {
    super::create_private_dir(&state.kills())?;
    let path = state.kill_lock(id.as_str());
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

/// A shared hold on session `id`'s kill lock, taken by the broker while it writes the records
/// of an action that has run (log rows, frame, receipt): a kill (which holds the lock
/// exclusively from before its tombstone until its receipt is spooled) waits for those few
/// milliseconds, and a broker that finds a kill under way waits for it and then sees its
/// tombstone. `None` (logged) when the lock cannot be opened: the broker then goes on
/// unfenced, as before the fence existed.
pub(crate) fn fence(state: &StateDir, id: &SessionId) -> Option<std::fs::File> {
    let path = state.kill_lock(id.as_str());
    let held = super::create_private_dir(&state.kills()).and_then(|()| {
        crate::private::open_lock_file(&path)
            .and_then(|file| file.lock_shared().map(|()| file))
            .map_err(BrokerError::io("hold the kill lock", &path))
    });
    match held {
        Ok(file) => Some(file),
        Err(error) => {
            tracing::error!(session_id = %id, %error, "cannot fence the kill lock");
            None
        }
    }
}

/// Removes the kill lock of session `id`, just stored `released`, when it was never killed:
/// the lock is taken exclusively without waiting and, only if no tombstone (not even a torn
/// one) exists, unlinked while held. A lock someone holds or a tombstone leaves it as it is;
/// a missing lock file is not created. Best effort: a failure is logged, and the file is only
/// left behind. A killer that opened the file before the unlink (and takes its lock after it)
/// or creates it anew finds the session released and kills nothing.
pub(crate) fn remove_at_release(state: &StateDir, id: &SessionId) {
    let path = state.kill_lock(id.as_str());
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => {
            tracing::warn!(session_id = %id, %error, "cannot open the kill lock to remove it");
            return;
        }
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return,
        Err(std::fs::TryLockError::Error(error)) => {
            tracing::warn!(session_id = %id, %error, "cannot take the kill lock to remove it");
            return;
        }
    }
    match std::fs::symlink_metadata(state.kill_record(id.as_str())) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        // A tombstone, or one that cannot be ruled out: the lock stays.
        _ => return,
    }
    if let Err(error) = std::fs::remove_file(&path) {
        tracing::warn!(session_id = %id, %error, "failed to remove the kill lock");
    }
    drop(file);
}
