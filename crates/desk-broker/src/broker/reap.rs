//! Startup: desktops on disk that no unreleased session owns.

use std::collections::HashSet;

use desk_desktop::{BackendFactory, SessionDir};

/// Reaps what runs for every session directory on disk that the store does not know as an
/// unreleased session (a lost or replaced journal, a release interrupted after the row was
/// written): nothing could ever release those desktops otherwise.
pub(super) fn reap_unknown_desktops(
    sessions_dir: &std::path::Path,
    known: &HashSet<SessionDir>,
    factory: &impl BackendFactory,
) {
    let entries = match std::fs::read_dir(sessions_dir) {
        Ok(entries) => entries,
        Err(error) => {
            tracing::warn!(dir = %sessions_dir.display(), error = %error, "cannot list session directories");
            return;
        }
    };
    for entry in entries.flatten() {
        let dir = SessionDir::at(entry.path());
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) || known.contains(&dir) {
            continue;
        }
        let n_reaped = factory.reap_orphans(&dir);
        tracing::warn!(dir = %dir.path().display(), n_reaped, "reaped a desktop unknown to the journal");
    }
}
