//! Keeps a killed session's input logs: before its directory is destroyed, `events.json` and
//! `frame_events.json` are copied into the session's evidence directory, where release keeps
//! them too, so that the session's evidence bundle still carries the logs its receipts name.

use std::io::Write as _;
use std::path::Path;

use desk_contract::events::{EVENTS_FILE, FRAME_EVENTS_FILE};
use desk_desktop::{SessionDir, StateDir};

use crate::error::BrokerError;
use crate::ids::SessionId;

/// Copies both logs of `session_dir` into `<state>/evidence/<session_id>/` (0600, written
/// through a temporary file, fsynced, renamed). A log already kept (a release got there
/// first) is left as it is; a session without an evidence directory or without logs keeps
/// nothing. A failure is logged and the kill goes on (containment first); the session's
/// bundle then lacks the logs.
pub(crate) fn keep_logs(state: &StateDir, session_id: &SessionId, session_dir: &SessionDir) {
    if let Err(error) = copy_logs(state, session_id, session_dir) {
        tracing::error!(%session_id, %error, "failed to keep a killed session's logs");
    }
}

fn copy_logs(
    state: &StateDir,
    session_id: &SessionId,
    session_dir: &SessionDir,
) -> Result<(), BrokerError> {
    let evidence = state.session_evidence(session_id.as_str());
    if !evidence.is_dir() {
        return Ok(());
    }
    for (name, live) in [
        (EVENTS_FILE, session_dir.events_file()),
        (FRAME_EVENTS_FILE, session_dir.frame_events_file()),
    ] {
        let kept = evidence.join(name);
        if kept.exists() {
            continue;
        }
        let bytes = match std::fs::read(&live) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(BrokerError::io("read a killed session's log", &live)(error)),
        };
        write_new(&kept, &bytes)?;
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), BrokerError> {
    let staged = path.with_extension("kill-tmp");
    crate::private::create_file(&staged)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&staged, path))
        .map_err(BrokerError::io("keep a killed session's log", path))
}
