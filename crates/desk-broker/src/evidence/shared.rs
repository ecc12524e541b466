//! What the evidence module and its record families share, naming neither: the file names, the
//! directories and the I/O error and lock helpers.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use desk_desktop::StateDir;
use desk_evidence::EvidenceError;

use crate::ids::SessionId;

/// Default signing key file name inside `<state_dir>/evidence`.
pub const SIGNING_KEY_FILE: &str = "signing.key";
/// Public key file name inside `<state_dir>/evidence`; what `evidence verify --key` takes.
pub const PUBLIC_KEY_FILE: &str = "evidence.pub";

pub(super) const JOURNAL_FILE: &str = desk_evidence::bundle::JOURNAL_FILE;
pub(super) const STAGING_DIR: &str = "staging";

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves at worst a poisoned writer, which refuses appends.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `<state_dir>/evidence`.
pub(crate) fn evidence_dir(state_dir: &Path) -> PathBuf {
    StateDir::new(state_dir).evidence()
}

/// A [`SessionId`] is a plain token, so the directory is always inside `evidence/`.
pub(super) fn session_evidence_dir(state_dir: &Path, session_id: &SessionId) -> PathBuf {
    StateDir::new(state_dir).session_evidence(session_id.as_str())
}

pub(super) fn io_error(
    operation: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> EvidenceError {
    let path = path.to_path_buf();
    move |source| EvidenceError::Io {
        operation,
        path,
        source,
    }
}

/// Creates `path` 0700 below `root`, which must still exist (see
/// [`crate::private::create_dir_below`]).
pub(super) fn create_private_dir(root: &Path, path: &Path) -> Result<(), EvidenceError> {
    crate::private::create_dir_below(root, path).map_err(io_error("create", path))
}
