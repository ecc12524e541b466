//! Exporting and verifying a session's evidence bundle (`deskbroker evidence export|verify`).

use std::path::{Path, PathBuf};

use desk_desktop::StateDir;
use desk_evidence::{
    EvidenceError, ExportInputs, Manifest, SigningKey, VerifyReport, VerifyingKey,
};

use super::shared::{JOURNAL_FILE, SIGNING_KEY_FILE, evidence_dir, io_error, session_evidence_dir};
use crate::ids::SessionId;
use crate::logs::{EVENTS_FILE, FRAME_EVENTS_FILE};
use crate::util::now_ms;

/// Where [`export_evidence`] takes a session's files from: the journal, frames and artifact in
/// `<state_dir>/evidence/<id>/`; the logs from there once released, else from the live session
/// directory `<state_dir>/sessions/<id>/`.
pub(crate) fn export_inputs(
    state_dir: &Path,
    session_id: &SessionId,
) -> Result<ExportInputs, EvidenceError> {
    let directory = session_evidence_dir(state_dir, session_id);
    let journal = directory.join(JOURNAL_FILE);
    if !journal.is_file() {
        return Err(EvidenceError::Export {
            path: journal,
            reason: format!("session {session_id} has no evidence journal"),
        });
    }
    let session_dir = StateDir::new(state_dir).session(session_id.as_str());
    let log = |name: &str, live: PathBuf| {
        let kept = directory.join(name);
        if kept.is_file() { kept } else { live }
    };
    let artifact_dir = directory.join(desk_evidence::bundle::ARTIFACT_DIR);
    let mut artifacts = Vec::new();
    if artifact_dir.is_dir() {
        for entry in std::fs::read_dir(&artifact_dir).map_err(io_error("list", &artifact_dir))? {
            artifacts.push(entry.map_err(io_error("list", &artifact_dir))?.path());
        }
    }
    artifacts.sort();
    let frames_dir = directory.join(desk_evidence::bundle::FRAMES_DIR);
    Ok(ExportInputs {
        journal,
        events: log(EVENTS_FILE, session_dir.events_file()),
        frame_events: log(FRAME_EVENTS_FILE, session_dir.frame_events_file()),
        artifacts,
        frames_dir: frames_dir.is_dir().then_some(frames_dir),
        observations_dir: Some(
            session_dir
                .path()
                .join(desk_evidence::bundle::OBSERVATIONS_DIR),
        )
        .filter(|dir| dir.is_dir()),
        watchdog_key: crate::watchdog::key::read_public_key(state_dir).map_err(|error| {
            EvidenceError::Export {
                path: crate::watchdog::key::public_key_path(state_dir),
                reason: error.to_string(),
            }
        })?,
    })
}

/// Exports the evidence of `session_id` under `state_dir` into the new directory `out_dir`,
/// signing the manifest with the broker's key (`signing_key`, or the default key file). Reads
/// only; safe while the broker runs.
pub fn export_evidence(
    state_dir: &Path,
    session_id: &SessionId,
    signing_key: Option<&Path>,
    out_dir: &Path,
) -> Result<Manifest, EvidenceError> {
    let key_path = signing_key.map_or_else(
        || evidence_dir(state_dir).join(SIGNING_KEY_FILE),
        Path::to_path_buf,
    );
    let key = SigningKey::read(&key_path)?;
    let inputs = export_inputs(state_dir, session_id)?;
    desk_evidence::export(&inputs, &key, out_dir, now_ms())
}

/// Verifies the bundle `bundle_dir` against the public key file `public_key`; with
/// `watchdog_key` (the watchdog's `watchdog.pub`) the manifest must name exactly that key, under
/// which every `watchdog` terminal receipt then verifies.
pub fn verify_evidence(
    bundle_dir: &Path,
    public_key: &Path,
    watchdog_key: Option<&Path>,
) -> Result<VerifyReport, EvidenceError> {
    verify_evidence_observed(bundle_dir, public_key, watchdog_key, None)
}

/// [`verify_evidence`]; with `observer_key` (the observer's `observer.pub`) every signed
/// observation the bundle carries must verify under it and be the one its
/// `observer_observation` record names (`docs/observer.md`).
pub fn verify_evidence_observed(
    bundle_dir: &Path,
    public_key: &Path,
    watchdog_key: Option<&Path>,
    observer_key: Option<&Path>,
) -> Result<VerifyReport, EvidenceError> {
    let key = VerifyingKey::read(public_key)?;
    let watchdog = watchdog_key.map(VerifyingKey::read).transpose()?;
    let observer = observer_key.map(VerifyingKey::read).transpose()?;
    desk_evidence::verify_observed(bundle_dir, &key, watchdog.as_ref(), observer.as_ref())
}
